"""Chapter 8's products on the FP64 tensor cores, shape by shape, on the GPU host:
the Gram product G = A'A (lower triangle, chunked as CholeskyQR2 runs it) and
Q1's product A R (banded, R upper triangular, as CholeskyQR2 multiplies by R1^-1),
each timed with the device's events, its GFLOP/s (the useful multiply-adds only), its registers and spills, and its
result against the default shape's (and the Gram's against CuPy's float64).
Then CholeskyQR2 whole with the fastest shapes, against cuSOLVER.

    python3 tools/sweep_dmma.py [m] [cols]      (default 25000 5001)
    SWEEP_EMULATE=1 ...: the same through the emulated kernel (any device, small sizes)

A tile's local memory bounds it: a warp block of WTM x WTN doubles loads
(WTM + WTN) x 4 doubles from local memory for every 2 WTM WTN x 4 flops, so
larger warp blocks need fewer local loads per flop."""
import json
import os
import sys

import numpy as np
import pyopencl as cl

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import gpubook as gb  # noqa: E402
from check_harness import cupy_module, say  # noqa: E402
from check_qr import cusolver_seconds, gram_check, time_cholqr2  # noqa: E402
from gpubook import dmma, resources  # noqa: E402
from gpubook.chapters.lsq import cholqr  # noqa: E402
from gpubook.timing import time_events  # noqa: E402


EMU = os.environ.get("SWEEP_EMULATE") == "1"


def S(tm, tn, wm, wn, kc, **kw):
    return {"TM": tm, "TN": tn, "WARPS_M": wm, "WARPS_N": wn, "KC": kc, **kw}


SHAPES = [
    S(64, 64, 2, 2, 16),                 # the default (dmma.SHAPE)
    S(64, 64, 2, 2, 32, STAGES=1),
    S(128, 128, 4, 2, 16),
    S(128, 128, 2, 4, 16),
    S(128, 128, 4, 2, 8),
    S(128, 128, 4, 2, 16, STAGES=1),
    S(128, 128, 4, 2, 32, STAGES=1),
    S(128, 128, 4, 2, 16, PAIRS=1),
    S(128, 128, 4, 4, 16),
    S(128, 128, 2, 2, 16),
    S(128, 64, 2, 2, 16, STAGES=1),       # products only (the Gram needs TM = TN)
    S(128, 64, 2, 2, 16),
    S(128, 64, 4, 2, 16),
]
if os.environ.get("SWEEP_SHAPES"):  # a JSON list of shapes instead
    SHAPES = json.loads(os.environ["SWEEP_SHAPES"])


def product_inputs(ctx, m, c, seed=0, diagonal=8.0):
    """A random m x c matrix A and an upper-triangular c x c R (diagonal added, so
    well conditioned), with device copies of A, of A transposed and of R:
    (a, r, a_buf, at_buf, r_buf)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, c))
    r = np.triu(rng.standard_normal((c, c))) + diagonal * np.eye(c)
    mf = cl.mem_flags
    bufs = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=h) for h in (a, np.ascontiguousarray(a.T), r)]
    return (a, r, *bufs)


def main():
    m, c = (int(a) for a in (sys.argv[1:3] if len(sys.argv) > 2 else (25_000, 5_001)))
    device, ctx, queue, _, _ = gb.open_device()
    a, r, a_buf, at_buf, r_buf = product_inputs(ctx, m, c)
    g_ref = None
    cp = cupy_module()
    if cp is not None:
        ag = cp.asarray(a)
        g_ref = cp.asnumpy(ag.T @ ag)
        del ag
    gram_flops, q1_flops = m * c * (c + 1), m * c * (c + 1)   # lower triangle; the triangle of R
    best = {}
    first_q1 = None
    for shape in SHAPES:
        name = dmma.label(shape)
        try:
            rows = []
            if shape["TM"] == shape["TN"]:
                cq = cholqr.CholeskyQR2(ctx, queue, c, mma=True, gram_shape=shape, product_shape=shape,
                                        emulate=EMU)
                cq._buffers(m)
                t = time_events(lambda: [ev for _, ev in _gram(cq, a_buf, m)], repeats=3).median
                g = np.empty((c, c))
                cl.enqueue_copy(queue, g, cq.G1)
                err = (float(np.max(np.abs(np.tril(g - g_ref))) / np.max(np.abs(g_ref)))
                       if g_ref is not None else float("nan"))
                rows.append(f"Gram {t * 1e3:7.2f} ms {gram_flops / t * 1e-9:8,.0f} GFLOP/s err {err:.1e}")
                best.setdefault("gram", []).append((t, shape))
            cq = cholqr.CholeskyQR2(ctx, queue, c, mma=True, product_shape=shape, emulate=EMU)
            cq._buffers(m)
            t = time_events(lambda: [ev for _, ev in _q1(cq, at_buf, r_buf, m)], repeats=3).median
            q = np.empty((m, c))
            cl.enqueue_copy(queue, q, cq.Q)
            if first_q1 is None:
                first_q1 = q
            err = float(np.max(np.abs(q - first_q1)) / np.max(np.abs(first_q1)))
            rows.append(f"Q1 {t * 1e3:7.2f} ms {q1_flops / t * 1e-9:8,.0f} GFLOP/s vs default {err:.1e}")
            best.setdefault("q1", []).append((t, shape))
            res = resources.kernel_resources(dmma.get_kernel(ctx, device, shape, False, EMU), device,
                                             dmma.work_items(shape))
            say(f"{name}: " + "; ".join(rows) + f"; regs {res.get('registers')} spills "
                f"{res.get('spill_stores')}/{res.get('spill_loads')}")
        except Exception as err:  # noqa: BLE001 - report the shape and go on
            say(f"{name}: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
    q_ref = a @ r if m * c <= 4e6 else None
    if q_ref is not None:
        say(f"Q1 of the last shape against NumPy: {np.max(np.abs(q - q_ref)) / np.max(np.abs(q_ref)):.1e}")
    ref = cusolver_seconds(a, repeats=2)
    say(f"cuSOLVER qr(mode='r') {ref * 1e3:.1f} ms" if ref else "no CuPy")
    gram = min(best["gram"], key=lambda x: x[0])[1]
    q1 = min(best["q1"], key=lambda x: x[0])[1]
    if EMU:
        return
    for opts in ({"mma": True}, {"mma": True, "gram_shape": gram}, {"mma": True, "product_shape": q1},
                 {"mma": True}):
        t, rr, _ = time_cholqr2(ctx, queue, a, 3, opts)
        say(f"  -> {t * 1e3:.1f} ms wall" + (f", {t / ref:.2f}x cuSOLVER" if ref else "") +
            f"; Gram check {gram_check(rr, a):.1e}")


def _gram(cq, buf, m):
    trace = []
    cq.enqueue_gram(buf, m, cq.G1, trace)
    return trace


def _q1(cq, at_buf, r_buf, m):
    trace = []
    cq._banded("Q1", at_buf, m, r_buf, cq.Q, lambda j1: m, trace)
    return trace


if __name__ == "__main__":
    main()
