"""Wall against device time of CholeskyQR2 on the tall case (1,000,000 x 129, FP64
tensor cores), 10 runs, before and after CuPy has a CUDA context in this process.

On an H100 (2026-11-27): OpenCL alone, median 6.49 ms (20-80%: 6.47-6.51) for
6.14 ms of device time; after CuPy, 8.91 ms (7.97-12.07) for the same 6.15 ms.
Part 8.3 measures cuSOLVER in the same process before its own runs, so its tall
wall time can carry that cost: one pass that night stored 9.27 ms, the next 6.46 ms.

    PYOPENCL_CTX=0 python3 tools/probe_tall.py     (on the GPU host)"""
import sys
import time

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import gpubook as gb  # noqa: E402
from gpubook.chapters import lsq  # noqa: E402
from gpubook.chapters.lsq import cholqr, measure as lm  # noqa: E402

device, ctx, queue, _, _ = gb.open_device()
x, y = lsq.make_problem(1_000_000, 128)
a = np.column_stack([x, y])
cq = cholqr.CholeskyQR2(ctx, queue, 129, mma=True)
for label in ("OpenCL alone", "after CuPy"):
    if label == "after CuPy":
        import cupy as cp
        g = cp.asarray(a[:1000])
        _ = float((g.T @ g).sum())
    t0 = time.perf_counter()
    res, _ = lm.time_factor(cq, a, repeats=10)
    print(label, f"median {res['median_s'] * 1e3:.2f} q20 {res['q20_s'] * 1e3:.2f} q80 {res['q80_s'] * 1e3:.2f} "
          f"device {sum(res['by_kernel'].values()) * 1e3:.2f} ms; call {time.perf_counter() - t0:.1f} s", flush=True)
