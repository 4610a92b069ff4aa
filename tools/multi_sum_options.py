"""Chapter 10: the host's float64 sum of G partial XᵀX matrices,
n x n float32, timed every way on this host: the code before (a float64
temporary per band of rows, made fresh each time), multi.sums.Sum on one
core, on 8, 16, 32 and all cores, in full and over the lower triangle, and
multi.sums.DeviceSum on the first device (PYOPENCL_CTX, else the first GPU) in
double precision, the partials in page-locked memory of each device in turn.

    python3 tools/multi_sum_options.py [n] [G]
"""
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from gpubook.chapters.multi import sums


def before(parts, m, out, threads):
    """The sum as it was: per band, a fresh float64 copy of the first part, the
    others added, scaled, and the outer product made fresh."""
    n = parts[0][0].shape[0]
    d = np.sum([c for _, c in parts], axis=0) / m
    edges = np.linspace(0, n, 4 * threads + 1).astype(int)

    def rows(band):
        r0, r1 = band
        block = parts[0][0][r0:r1].astype(np.float64)
        for s, _ in parts[1:]:
            block += s[r0:r1]
        block *= 1.0 / m
        block -= np.multiply.outer(d[r0:r1], d)
        out[r0:r1] = block

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(rows, [(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]))
    return out


def median_ms(fn, repeats=5):
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
    g = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    m, cores = 1 << 20, sums.host_threads()
    parts = [(np.random.default_rng(k).standard_normal((n, n), dtype=np.float32), np.zeros(n)) for k in range(g)]
    out = np.empty((n, n))
    print(f"host sum of {g} partials of {n:,} x {n:,} float32 into float64; {cores} cores")
    print(f"  before (fresh temporaries), all cores:  {median_ms(lambda: before(parts, m, out, cores)):8.1f} ms")
    print(f"  before (fresh temporaries), one core:   {median_ms(lambda: before(parts, m, out, 1)):8.1f} ms")
    for triangle in (False, True):
        for threads in sorted({1, 8, 16, 32, cores}):
            if threads > cores:
                continue
            total = sums.Sum(n, threads, triangle, out)

            def once():
                total.start()
                for s, col in parts:
                    total.add(s, col)
                total.finish(m)

            what = "lower triangle" if triangle else "full"
            print(f"  Sum, {what:14s}, {threads:3d} threads:  {median_ms(once):8.1f} ms")
            total.close()
    from gpubook.chapters import multi

    lanes = [multi.Lane(d) for d in multi.devices()]
    if not lanes[0].device.double_fp_config:
        print(f"  DeviceSum: {lanes[0].name} has no fp64")
        return
    found = sums.time_options(parts, m, repeats=5, counts=[1], lanes=lanes)
    print(f"  DeviceSum on {lanes[0].name} ({len(lanes)} device(s) hold the partials): "
          f"{found[('device', False)] * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
