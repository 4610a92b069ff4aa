"""GPU host: the single-pass scan (chapter 7) over a grid of tile shapes at 2^28
floats, each checked against the float64 prefix sums, with its rate against chapter
0's copy figure: which shape, if any, reaches the copy rate on this card.

    PYOPENCL_CTX=0 python tools/probe_scan_shapes.py [WG...]
"""
import itertools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import pyopencl.array as cla  # noqa: E402

import gpubook as gb  # noqa: E402
from gpubook import launch  # noqa: E402
from gpubook.chapters.scan.steps import DeviceScan, ShuffleUnavailable  # noqa: E402
from gpubook.kernels import KernelBuildError  # noqa: E402


def main():
    device, ctx, queue, scale, name = gb.open_device()
    n = int(__import__('os').environ.get('PROBE_N', 2**28))
    host = np.random.default_rng(5).random(n, dtype=np.float32)
    src, dst = cla.to_device(queue, host), cla.empty(queue, n, np.float32)
    ref = np.cumsum(host, dtype=np.float64)
    copy = gb.copy_gbs(ctx, queue, device)
    print(f"{name}: copy {copy:,.0f} GB/s; n = {n:,}")
    wgs = [int(a) for a in sys.argv[1:]] or [128, 256, 512, 1024]
    rows = []
    t0 = time.time()
    for shuffle, wg, items, stage in itertools.product((False, True), wgs, (4, 8, 12, 16, 24, 32),
                                                      (True, False)):
        try:
            ds = DeviceScan(ctx, queue, "4_single_pass", wg=wg, items=items, stage=stage,
                            shuffle=shuffle)
        except (launch.LaunchError, ShuffleUnavailable, ValueError, KernelBuildError):
            continue
        ds.enqueue(src, dst, n)
        got = dst.get()
        err = float(np.max(np.abs(got - ref)) / ref[-1])
        t = gb.time_events(lambda: ds.enqueue(src, dst, n), repeats=10)
        gbs = 8 * n / t.median / 1e9
        if err < 1e-5:
            rows.append((gbs, wg, items, stage, shuffle, t.median * 1e3, err))
        print(f"WG={wg:5d} ITEMS={items:3d} stage={int(stage)} shuffle={int(shuffle)}: "
              f"{t.median * 1e3:7.3f} ms {gbs:7,.0f} GB/s {gbs / copy:6.1%} of copy  err {err:.1e}"
              + ("  WRONG (over 1e-5)" if not err < 1e-5 else ""),
              flush=True)
    rows.sort(reverse=True)
    print("best:", rows[:5], f"({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
