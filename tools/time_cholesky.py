"""Device time of chapter 8's blocked Cholesky (cholqr.DeviceCholesky, as
CholeskyQR2 runs it: R1^-1 alongside, updates on the FP64 tensor cores where the
device has them) on one k x k Gram matrix, kernel by kernel, for one or more
versions of kernels/lsq/7_cholesky.cl; each result checked against NumPy.

    PYOPENCL_CTX=0 python3 tools/time_cholesky.py [k] [--kernel lsq/OTHER.cl ...] [--diag-wg N ...]

On an H100 (2026-11-27, k = 5,001, one factorisation with its inverse: 16.5-17.0 ms
of device time in 79 blocks of 64 columns), chol_diag took 73.6 us per block with
a square root and a division on each column's chain, and 70.7 us with one rsqrt
(kept). Two versions that held the block in registers (one barrier per column, the
column passed through local memory, L11 written once at the end) took 90-101 us:
slower, with 80-106 registers against 65."""
import argparse
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import gpubook as gb  # noqa: E402
from gpubook import dmma, tensor  # noqa: E402
from gpubook.chapters.lsq import cholesky, cholqr  # noqa: E402


def gram(k, seed=1):
    """A well-conditioned k x k Gram matrix, as CholeskyQR2's first one."""
    a = np.random.default_rng(seed).standard_normal((2 * k, k))
    return a.T @ a


def time_one(ctx, queue, g, path, repeats):
    cholesky.PATH = path
    k = len(g)
    mma, _ = tensor.available(queue.device)
    shape = dmma.SHAPE if mma else None
    chol = cholqr.DeviceCholesky(ctx, queue, k, 64, shape, shape, cholqr.Products())
    mf = cl.mem_flags
    pristine = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=g)
    work, inv = (cl.Buffer(ctx, mf.READ_WRITE, g.nbytes) for _ in range(2))
    by_kernel, launches = {}, {}
    for rep in range(repeats + 1):
        cl.enqueue_copy(queue, work, pristine)
        trace = []
        chol.enqueue(work, 0, inv, trace)
        queue.finish()
        if rep:                                   # the first run builds and warms up
            for name, ev in trace:
                by_kernel.setdefault(name, []).append(gb.event_seconds(ev))
                launches[name] = launches.get(name, 0) + 1
    out = np.empty_like(g)
    cl.enqueue_copy(queue, out, work)
    ref = np.linalg.cholesky(g)
    err = np.max(np.abs(np.tril(out) - ref)) / np.max(np.abs(ref))
    total = sum(by_kernel.values(), []) and sum(sum(v) for v in by_kernel.values()) / repeats
    print(f"{path}: CB {chol.CB}, work-group {chol.wg}, device {total * 1e3:.2f} ms per factorisation, "
          f"error against NumPy {err:.1e}")
    for name, ts in sorted(by_kernel.items(), key=lambda kv: -sum(kv[1])):
        n = launches[name] // repeats
        print(f"    {name}: {sum(ts) / repeats * 1e3:.2f} ms in {n} launches "
              f"({sum(ts) / len(ts) * 1e6:.1f} us each)")
    res = gb.kernel_resources(chol.kern["chol_diag"], queue.device, chol.wg)
    print(f"    chol_diag resources: {res}")
    print(f"RESULT {path} {total * 1e3:.4f} {err:.3e}", flush=True)
    return total, err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("k", nargs="?", type=int, default=5001)
    ap.add_argument("--kernel", action="append", default=[])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--diag-wg", type=int, action="append", default=[],
                    help="chol_diag's work-items at most (cholesky.DIAG_WORK_ITEMS), one run each")
    args = ap.parse_args()
    device, ctx, queue, _, _ = gb.open_device()
    g = gram(args.k)
    for wg in args.diag_wg or [cholesky.DIAG_WORK_ITEMS]:
        cholesky.DIAG_WORK_ITEMS = wg
        print(f"chol_diag with at most {wg} work-items", flush=True)
        for path in args.kernel + [cholqr.PATH]:
            time_one(ctx, queue, g, path, args.repeats)


if __name__ == "__main__":
    main()
