"""Chapter 8's QR on the GPU host, for tools/check_tensor.py: R of [X y] by TSQR
and CholeskyQR2 (on the FP64 tensor cores and in register tiles) against
cuSOLVER (cupy.linalg.qr), tall (1,000,000 x 128) and square (25,000 x 5,000),
checked against the data and timed with the device's own events."""
import os
import time
import traceback

import numpy as np
import pyopencl as cl

import gpubook as gb
from check_harness import cuda_seconds, cupy_module, result, say
from gpubook.chapters.lsq import cholqr, tsqr
from gpubook.timing import time_events


def gram_check(r, a):
    """tsqr.gram_error, on the GPU through CuPy where the matrix is large."""
    cp = cupy_module()
    if cp is None or a.shape[1] < 1000:
        return tsqr.gram_error(r, a)
    ag, rg = cp.asarray(a), cp.asarray(r)
    g = ag.T @ ag
    return float(cp.max(cp.abs(rg.T @ rg - g)) / cp.max(cp.abs(g)))


def cusolver_seconds(a, repeats=3):
    cp = cupy_module()
    if cp is None:
        return None
    ag = cp.asarray(a)
    t = cuda_seconds(cp, lambda: cp.linalg.qr(ag, mode="r"), repeats=repeats)
    del ag
    return t


def time_tsqr(ctx, queue, a, repeats=5):
    """(median device seconds of TSQR, R) on a fresh copy of a before every run."""
    m, c = a.shape
    qr = tsqr.TSQR(ctx, queue, c)
    mf = cl.mem_flags
    pristine = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
    work = cl.Buffer(ctx, mf.READ_WRITE, a.nbytes)

    def run():
        cl.enqueue_copy(queue, work, pristine)
        return qr.enqueue(work, m)
    t = time_events(run, repeats=repeats, warmup=1)
    say(f"    TSQR: leaves of {qr.BR} rows ({qr.leaves(m)} leaves), work-groups {qr.wg}, "
        f"in local memory {qr.in_local}")
    return t.median, qr.r()


_AMPERE = {"TM": 64, "TN": 64, "WARPS_M": 2, "WARPS_N": 2, "KC": 16, "MMA": "m8n8k4", "PAIRS": 0}  # as before Hopper


_PAIRED = {"TM": 64, "TN": 64, "WARPS_M": 2, "WARPS_N": 2, "KC": 16, "PAIRS": 1}


_DEEP = {"TM": 64, "TN": 64, "WARPS_M": 2, "WARPS_N": 2, "KC": 32, "STAGES": 1}


CHOLQR_OPTIONS = [
    {},
    {"mma": True},
    {"mma": True, "gram_shape": _AMPERE, "product_shape": _AMPERE},
    {"mma": True, "gram_shape": _PAIRED, "product_shape": _PAIRED},
    {"mma": True, "gram_shape": _DEEP, "product_shape": _DEEP},
    {"mma": True, "product_shape": {"TM": 128, "TN": 64, "WARPS_M": 2, "WARPS_N": 2, "KC": 16, "STAGES": 1}},
]


# Panels of several blocks (DeviceCholesky's panel), the Cholesky's own products on
# the tensor cores too, smaller diagonal blocks: CHOLQR_SET=cholesky times these
# instead of the list above. Before panels, on an H100 (2026-11-26), the tensor-core
# updates, 32-column blocks and 128 x 128 Gram tiles gave 105-114 ms against 107 ms.
_D = {"TM": 64, "TN": 64, "WARPS_M": 2, "WARPS_N": 2, "KC": 16}
CHOLESKY_OPTIONS = [
    {"mma": True},
    {"mma": True, "panel": 2},
    {"mma": True, "panel": 4},
    {"mma": True, "panel": 8},
    {"mma": True, "panel": 4, "update_shape": _D},
    {"mma": True, "panel": 4, "inverse_shape": _D},
    {"mma": True, "panel": 4, "update_shape": _D, "inverse_shape": _D},
    {"mma": True, "panel": 8, "update_shape": _D, "inverse_shape": _D},
    {"mma": True, "panel": 4, "block": 32},
]
if os.environ.get("CHOLQR_SET") == "cholesky":
    CHOLQR_OPTIONS = CHOLESKY_OPTIONS
elif os.environ.get("CHOLQR_SET") == "defaults":      # the defaults, twice, and the register tiles
    CHOLQR_OPTIONS = [{"mma": True}, {"mma": True}, {}]


def time_cholqr2(ctx, queue, a, repeats=3, options=None):
    """(median wall seconds of CholeskyQR2 on the device, pivots read, R left there; R; the object)."""
    m, c = a.shape
    cq = cholqr.CholeskyQR2(ctx, queue, c, **(options or {}))
    mf = cl.mem_flags
    work = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a)
    times, trace = [], []
    for rep in range(repeats + 1):
        queue.finish()
        trace = []
        t0 = time.perf_counter()
        cq.enqueue(work, m, trace)
        cq.settle(work, m, trace)
        queue.finish()
        if rep:
            times.append(time.perf_counter() - t0)
    device_s = {}
    for name, ev in trace:
        device_s[name] = device_s.get(name, 0.0) + gb.event_seconds(ev)
    say(f"    CholeskyQR2 {options or 'defaults'}: {cq.method}" + (f" ({cq.reason})" if cq.reason else "") +
        f", cond estimate {cq.cond_estimate:.1e}, wall {np.median(times) * 1e3:.2f} ms; device by kernel "
        f"(sum {sum(device_s.values()) * 1e3:.2f} ms): " +
        ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in device_s.items()))
    return float(np.median(times)), cq.r(), cq


def sweep_cholqr2(ctx, queue, a, repeats):
    best = None
    from gpubook import dmma, resources
    for shape, tri in ((dmma.SHAPE, True), (dmma.SHAPE, False)):
        try:
            kern = dmma.get_kernel(ctx, queue.device, shape, tri)
            say(f"    dmma {shape} triangle={tri}: "
                f"{resources.kernel_resources(kern, queue.device, dmma.work_items(shape))}")
        except Exception as err:  # noqa: BLE001
            say(f"    dmma: {str(err).splitlines()[0]}")
    for opt in CHOLQR_OPTIONS:
        try:
            t, r, cq = time_cholqr2(ctx, queue, a, repeats, opt)
        except Exception as err:  # noqa: BLE001
            say(f"    {opt}: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
            continue
        if os.environ.get("CHOLQR_SET"):
            say(f"      Gram check {gram_check(r, a):.1e}")
        if best is None or t < best[0]:
            best = (t, r, cq)
    return best


def tall(ctx, queue, m=1_000_000, w=128):
    from gpubook.chapters import lsq
    x, y = lsq.make_problem(m, w)
    a = np.ascontiguousarray(np.column_stack([x, y]))
    del x, y
    ref = cusolver_seconds(a)
    say(f"  cupy.linalg.qr(mode='r') of {m:,} x {w + 1}: " + (f"{ref * 1e3:.2f} ms" if ref else "no CuPy"))
    for name, timer in (("TSQR", time_tsqr), ("CholeskyQR2", lambda c, q, a: sweep_cholqr2(c, q, a, 5))):
        try:
            t, r, *_ = timer(ctx, queue, a)
            err = gram_check(r, a)
            say(f"  {name}: {t * 1e3:.2f} ms, Gram check {err:.1e}")
            status = "PASS" if err <= 1e-14 and ref and ref / t >= 2 else "FAIL"
            if ref is None:
                status = "FAIL" if err > 1e-14 else "INFO"
            result(f"tall-{name}", status, f"{t * 1e3:.2f} ms" + (f", {ref / t:.2f}x faster than cuSOLVER's "
                   f"{ref * 1e3:.2f} ms (floor 2x)" if ref else "") + f"; Gram check {err:.1e} (floor 1e-14)")
        except Exception as err:  # noqa: BLE001
            result(f"tall-{name}", "FAIL", f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
            say(traceback.format_exc())


def square(ctx, queue, m=25_000, n=5_000):
    from gpubook.chapters import lsq
    x, y = lsq.make_problem(m, n)
    a = np.ascontiguousarray(np.column_stack([x, y]))
    del x, y
    ref = cusolver_seconds(a, repeats=2)
    say(f"  cupy.linalg.qr(mode='r') of {m:,} x {n + 1:,}: " + (f"{ref * 1e3:.1f} ms" if ref else "no CuPy"))
    try:
        t, r, cq = sweep_cholqr2(ctx, queue, a, 2)
        err = gram_check(r, a)
        status = "PASS" if err <= 1e-14 and ref is not None and t <= ref else "FAIL"
        if ref is None and err <= 1e-14:
            status = "INFO"
        result("square-CholeskyQR2", status,
               f"{t * 1e3:.1f} ms wall ({cq.method})" + (f", {t / ref:.2f}x cuSOLVER's {ref * 1e3:.1f} ms (floor 1.0x)"
                                                      if ref else "") + f"; Gram check {err:.1e} (floor 1e-14)")
    except Exception as err:  # noqa: BLE001
        result("square-CholeskyQR2", "FAIL", f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
        say(traceback.format_exc())
    for width in (16, 128):
        panel = np.ascontiguousarray(a[:, :width])
        t, r = time_tsqr(ctx, queue, panel)
        err = tsqr.gram_error(r, panel)
        result(f"square-TSQR-panel-{width}", "INFO" if err <= 1e-14 else "FAIL",
               f"{m:,} x {width} panel in {t * 1e3:.3f} ms (one launch per tree level, not per column); "
               f"Gram check {err:.1e}")
