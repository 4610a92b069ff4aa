"""A first X'X tile kernel on Hopper's wgmma from OpenCL (gpubook.wgmma,
kernels/tensor/wgmma_xtx.cl), against NumPy and timed, for part 6.3's TF32 floor:
each variant (tile width TN, chunk KC, each wgmma waited for or a chunk's issued back
to back) first on X of 512 x 256 small integers (exact in TF32 and in the float32
sums: its C must equal NumPy's), then, if equal, on 131,072 x 4,096 (all of C, 2 m n^2
flops), the median of 5 by the device's events, and only the tiles of C's lower
triangle (lower=True), as part 6.3 needs.

On an H200 (2026-11-28) every variant was exact on the small X and off NumPy by
1.6e-3 (relative, TF32) on the large one's first row. 64 x 128 tiles with chunks of 32
rows took 113.5 ms (39 TFLOP/s) copying X one float at a time, and 47.4 ms (93 TFLOP/s)
four rows at a time (VEC); waiting for each wgmma gave the same 47.3 ms, so the copy
into local memory, not the tensor cores, sets the pace. Chunks of 64 rows took 48.2 ms,
of 16 rows 53.4 ms, and 64 x 256 tiles 55.9 ms. For comparison, part 6.3's mma.sync
kernel computes the lower half of the same C in about 22.5 ms. The copy in 4 x 4
blocks (VEC=2, the variants below) and the lower triangle's tiles alone were written
after that run and have not run on a GPU.

    PYOPENCL_CTX=0 python3 tools/probe_wgmma_xtx.py [--ptx DIR]"""
import argparse
import pathlib
import sys

import numpy as np
import pyopencl as cl

sys.path.insert(0, __file__.rsplit("/", 2)[0])
import gpubook as gb  # noqa: E402
from gpubook import ptx_probe, wgmma  # noqa: E402

# (TN, KC, each wgmma waited for, wgmma_xtx.cl's VEC)
VARIANTS = [(128, 32, False, 1), (128, 32, False, 2), (128, 64, False, 2), (256, 32, False, 2),
            (64, 32, False, 2), (128, 32, True, 2)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ptx", type=pathlib.Path)
    args = parser.parse_args()
    device, ctx, queue, _, _ = gb.open_device()
    if not ptx_probe.is_nvidia(device):
        print(f"{device.name.strip()} is not an NVIDIA device: wgmma does not apply")
        return 0
    mf = cl.mem_flags
    small = np.random.default_rng(1).integers(-2, 3, (512, 256)).astype(np.float32)
    want = small.astype(np.float64).T @ small
    big_m, big_n = 131_072, 4_096
    big = np.random.default_rng(2).standard_normal((big_m, big_n), dtype=np.float32)
    bufs = {k: cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=v) for k, v in (("small", small),
                                                                                      ("big", big))}
    out = {k: cl.Buffer(ctx, mf.READ_WRITE, 4 * n * n) for k, n in (("small", 256), ("big", big_n))}
    print(f"{device.name.strip()}: X'X on wgmma m64n32k8 TF32", flush=True)
    for tn, kc, sync, vec in VARIANTS:
        name = (f"64 x {tn} tiles, chunks of {kc} rows, {'each wgmma waited for' if sync else 'a chunk at once'}"
                + {0: "", 1: ", four rows a copy", 2: ", blocks of 4 x 4 a copy"}[vec])
        try:
            prog, text = wgmma.program(ctx, device, tn, kc, sync, vec)
        except (cl.RuntimeError, cl.LogicError, gb.KernelBuildError) as err:
            print(f"  {name}: build failed: {ptx_probe.first_error(str(err))}", flush=True)
            continue
        if args.ptx:
            args.ptx.mkdir(parents=True, exist_ok=True)
            (args.ptx / f"wgmma_xtx_{tn}_{kc}_{int(sync)}_{int(vec)}.ptx").write_text(text)
        wgmma.xtx(queue, prog, bufs["small"], 512, 256, out["small"], tn, kc).wait()
        got = np.empty((256, 256), np.float32)
        cl.enqueue_copy(queue, got, out["small"])
        err = float(np.max(np.abs(got - want)))
        if err != 0:
            print(f"  {name}: off NumPy by up to {err:g} on the small X (its largest entry "
                  f"{np.abs(want).max():g})", flush=True)
            continue
        def median(lower):
            times = []
            for rep in range(7):
                ev = wgmma.xtx(queue, prog, bufs["big"], big_m, big_n, out["big"], tn, kc, lower=lower)
                ev.wait()
                if rep >= 2:
                    times.append(gb.event_seconds(ev))
            return float(np.median(times))
        t_lower = median(True)
        t = median(False)
        row = np.empty(big_n, np.float32)
        cl.enqueue_copy(queue, row, out["big"])           # C's first row, against NumPy's
        ref = big[:, 0].astype(np.float64) @ big.astype(np.float64)
        rel = float(np.max(np.abs(row - ref)) / np.max(np.abs(ref)))
        print(f"  {name}: exact on the small X; 131,072 x 4,096 in {t * 1e3:.2f} ms, "
              f"{2 * big_m * big_n ** 2 / t / 1e12:.0f} TFLOP/s, first row off NumPy by {rel:.1e} "
              f"(relative); the lower triangle's tiles alone in {t_lower * 1e3:.2f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
