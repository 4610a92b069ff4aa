"""CholeskyQR2 of chapter 8's regression [X y] (25,000 x 5,001 by default) with its
first Gram matrix in float64 on the FP64 tensor cores (cholqr.CholeskyQR2, mma=True)
and in TF32 on wgmma (gpubook.chapters.lsq.mixed), each timed by the device's clock
(measure.time_factor, median of 5) with its stages, both checks in float64 (R'R
against A'A; ||QᵀQ − I||_F of Q = Q1 R2^-1) and cuSOLVER's QR of the same matrix
(torch.linalg.qr, mode='r', CUDA events) in the same run.

    PYOPENCL_CTX=0 python3 tools/probe_mixed_cholqr.py [ROWS COLS] [--emulate] [--serial]"""
import sys

import numpy as np
import pyopencl as cl

sys.path.insert(0, __file__.rsplit("/", 2)[0])
import gpubook as gb  # noqa: E402
from gpubook.chapters.lsq import cholqr, measure as lm, mixed  # noqa: E402
from gpubook.chapters.lsq.rows import make_problem  # noqa: E402
from gpubook.orthogonality import gram_error  # noqa: E402

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
M, N = (int(ARGS[0]), int(ARGS[1])) if ARGS else (25_000, 5_000)
EMULATE = "--emulate" in sys.argv


def cusolver_seconds(a, repeats=5):
    try:
        import torch
    except ImportError:
        return None
    t = torch.from_numpy(a).cuda()
    times = []
    for rep in range(repeats + 1):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.linalg.qr(t, mode="r")
        end.record()
        torch.cuda.synchronize()
        if rep:
            times.append(start.elapsed_time(end) * 1e-3)
    return float(np.median(times))


def diagnose(cq, a, r):
    """Where R'R's error comes from: the first pass's residual, R against R2 R1 as
    computed, and the second Cholesky's residual against the device's Q1'Q1."""
    m, c = a.shape
    q1, g1, g2 = np.empty((m, c)), np.empty((c, c)), np.empty((c, c))
    for host, dev in ((q1, cq.Q), (g1, cq.G1), (g2, cq.G2)):
        cl.enqueue_copy(cq.queue, host, dev)
    r1, r2 = np.triu(g1), np.triu(g2)
    return (f"||A - Q1 R1||/||A|| {np.linalg.norm(a - q1 @ r1) / np.linalg.norm(a):.1e}, "
            f"||R - R2 R1||/||R|| {np.linalg.norm(r - r2 @ r1) / np.linalg.norm(r):.1e}, "
            f"||Q1'Q1 - R2'R2||_F {np.linalg.norm(q1.T @ q1 - r2.T @ r2):.1e}, "
            f"||R1'(Q1'Q1 - R2'R2)R1|| / ||A'A|| "
            f"{np.linalg.norm(r1.T @ (q1.T @ q1 - r2.T @ r2) @ r1) / np.linalg.norm(a.T @ a):.1e}")


def main():
    device, ctx, queue, _, _ = gb.open_device()
    x, y = make_problem(M, N)
    a = np.ascontiguousarray(np.column_stack([x, y]))
    ref = a.T @ a
    print(f"{device.name.strip()}: CholeskyQR2 of {M:,} x {N + 1:,}", flush=True)
    base = None if EMULATE else cusolver_seconds(a)
    if base:
        print(f"  cuSOLVER QR (torch.linalg.qr, mode='r'): {base * 1e3:.2f} ms", flush=True)
    makers = {"float64 G1 (DMMA)": lambda: cholqr.CholeskyQR2(ctx, queue, N + 1, mma=True, emulate=EMULATE),
              "TF32 G1 (wgmma)": lambda: mixed.MixedCholeskyQR2(ctx, queue, N + 1, emulate=EMULATE),
              **({"TF32 G1 (wgmma), L^-1 on the same queue": lambda: mixed.MixedCholeskyQR2(
                  ctx, queue, N + 1, emulate=EMULATE, overlap=False)} if "--serial" in sys.argv else {})}
    for name, make in makers.items():
        cq = make()
        found, r = lm.time_factor(cq, a, repeats=2 if EMULATE else 5)
        checks = lm.cholqr2_orthogonality(cq, a)
        vs = f", {found['median_s'] / base:.3f}x cuSOLVER's time" if base else ""
        print(f"  {name}: {found['median_s'] * 1e3:.2f} ms (q20 {found['q20_s'] * 1e3:.2f}, q80 "
              f"{found['q80_s'] * 1e3:.2f}){vs}; method {found['method']}, first pass "
              f"{getattr(cq, 'first', 'float64')} {getattr(cq, 'first_reason', '')}; Gram error "
              f"{gram_error(r, None, ref):.1e}, ||Q1'Q1 - I|| {checks['q1']:.1e}, ||Q'Q - I|| {checks['q']:.1e}",
              flush=True)
        print("    " + diagnose(cq, a, r))
        print("    stages (ms): " + ", ".join(f"{k} {v * 1e3:.2f}" for k, v in found["stage_s"].items()))
        print("    kernels (ms): " + ", ".join(f"{k} {v * 1e3:.2f}" for k, v in found["by_kernel"].items()),
              flush=True)


if __name__ == "__main__":
    main()
