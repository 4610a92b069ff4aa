"""The vendor's calls that gpubook.vendor times, one per figure: each returns the
call to time and a check of its relative error against float64 (CuPy's also
what to run before each timed call). PyTorch's in `torch_workload`, CuPy's
(cuBLAS SSYRK, cuSOLVER, CUB's bindings) in `cupy_workload`; both are timed
with CUDA events (`cuda_timing`, `cupy_timing`)."""
from .orthogonality import conditioned, gram_error, orthogonality
from .timing import stats


def torch_workload(torch, figure, shape, dev):
    """(the call to time, a check returning its relative error against float64),
    and for "qr" a third: what else to record, from untimed calls after the timing."""
    f32, f64 = torch.float32, torch.float64
    gen = torch.Generator(device=dev).manual_seed(8)
    if figure in ("sum", "cumsum"):
        x = torch.rand(shape, device=dev, dtype=f32, generator=gen)
        if figure == "sum":
            out = {}

            def run():
                out["s"] = torch.sum(x)

            def check():
                ref = torch.sum(x, dtype=f64)
                return abs(float(out["s"]) - float(ref)) / float(ref)
            return run, check
        y = torch.empty_like(x)

        def check():
            ref = torch.cumsum(x, 0, dtype=f64)
            return float(torch.max(torch.abs(y - ref) / ref))
        return (lambda: torch.cumsum(x, 0, out=y)), check
    if figure in ("xtx", "xtx_tf32"):
        x = torch.randn(shape, device=dev, dtype=f32, generator=gen)
        c = torch.empty(shape[1], shape[1], device=dev, dtype=f32)

        def check():
            part = x[:, :64].double()
            ref = part.T @ part
            return float(torch.max(torch.abs(c[:64, :64] - ref)) / torch.max(torch.abs(ref)))
        return (lambda: torch.matmul(x.T, x, out=c)), check
    if figure == "qr":       # (m, n): Gaussian; (m, n, cond, seed): orthogonality.conditioned's matrix
        a = (torch.randn(shape, device=dev, dtype=f64, generator=gen) if len(shape) == 2 else
             torch.from_numpy(conditioned(*shape[:2], shape[2], int(shape[3]))).to(dev))
        out = {}

        def run():
            out["r"] = torch.linalg.qr(a, mode="r").R

        def check():  # RᵀR = AᵀA, whatever the signs of R's rows
            gram = a.T @ a
            return float(torch.linalg.norm(out["r"].T @ out["r"] - gram) / torch.linalg.norm(gram))
        return run, check, lambda: qr_checks(torch, a, out["r"])
    if figure == "h2d":
        host = torch.rand(shape, dtype=f32, generator=torch.Generator().manual_seed(8)).pin_memory()
        dst = torch.empty(shape, device=dev, dtype=f32)

        def check():
            return float(torch.max(torch.abs(dst.cpu() - host)))
        return (lambda: dst.copy_(host, non_blocking=True)), check
    raise ValueError(f"unknown vendor figure {figure!r}; gpubook.vendor.FIGURES lists them")


QR_CHECKS = ("gram_error: max |RᵀR − AᵀA| / max |AᵀA| of the timed call's R; orthogonality: "
             "||QᵀQ − I||_F of Q from a separate, untimed torch.linalg.qr(a, mode='reduced') on the same a, "
             "in float64 on the GPU (gpubook.orthogonality)")


def qr_checks(torch, a, r):
    """cuSOLVER's QR against the book's two checks (gpubook.orthogonality), after the
    timing: the timed call's R against AᵀA, and Q from a second call that forms it."""
    q = torch.linalg.qr(a, mode="reduced").Q
    return {"gram_error": gram_error(r, a), "orthogonality": orthogonality(q), "checks": QR_CHECKS}


def cupy_workload(cupy, figure, shape):
    """(the call to time, a check returning its relative error against float64, what
    to run before each timed call or None) for the figures CuPy calls."""
    f32, f64 = cupy.float32, cupy.float64
    if figure == "syrk":
        from cupy import cublas

        x = cupy.random.RandomState(8).standard_normal(shape, dtype=f32)
        c = cupy.zeros((shape[1], shape[1]), dtype=f32)  # C-contiguous: cuBLAS writes it in place, no copy

        def check():
            part = x[:, :64].astype(f64)
            ref = cupy.tril(part.T @ part)
            return float(cupy.max(cupy.abs(cupy.tril(c[:64, :64]).astype(f64) - ref)) / cupy.max(cupy.abs(ref)))
        return (lambda: cublas.syrk("T", x, out=c, lower=True)), check, None
    if figure in ("cub_sum", "cub_scan"):
        from cupy.cuda import cub

        x = cupy.random.RandomState(8).random_sample(shape, dtype=f32)
        if figure == "cub_sum":
            out = {}

            def run():
                out["s"] = cub.device_reduce(x, cub.CUPY_CUB_SUM, ())

            def check():
                ref = float(cupy.sum(x, dtype=f64))
                return abs(float(out["s"]) - ref) / ref
            return run, check, None
        y = x.copy()  # CuPy's scan works in place: a fresh copy of x before each timed call

        def check():
            ref = cupy.cumsum(x.astype(f64))
            return float(cupy.max(cupy.abs(y - ref) / cupy.maximum(ref, 1e-30)))
        return (lambda: cub.device_scan(y, cub.CUPY_CUB_CUMSUM)), check, (lambda: y.__setitem__(Ellipsis, x))
    raise ValueError(f"CuPy does not measure {figure!r}")


CUPY_CUB = {"cub_sum": ("CUB DeviceReduce::Sum (cupy.cuda.cub.device_reduce), float32",
                        "cupy.cuda.cub.device_reduce(x, CUPY_CUB_SUM, ()) on float32: CuPy's own build of CUB"),
            "cub_scan": ("CUB DeviceScan::InclusiveSum (cupy.cuda.cub.device_scan), float32",
                         "cupy.cuda.cub.device_scan(y, CUPY_CUB_CUMSUM) on float32, in place after a copy "
                         "of x into y: CuPy's own build of CUB")}


def event_timing(new_event, elapsed_ms, synchronize, fn, repeats, warmup=1, prepare=None):
    """Seconds per call of `fn`, timed with CUDA events around each call.

    An untimed call goes first in every repeat (or `prepare`, when a call
    consumes its input): it keeps the GPU busy while the host enqueues the
    events and the timed call, so the span holds the GPU's time for the call,
    not the host's time to launch it (the OpenCL events of the book's own
    kernels measure the same thing)."""
    for _ in range(warmup):
        fn()
    synchronize()
    seconds = []
    for _ in range(repeats):
        start, end = new_event(), new_event()
        (prepare or fn)()
        start.record()
        fn()
        end.record()
        end.synchronize()
        seconds.append(elapsed_ms(start, end) * 1e-3)
    return stats(seconds)


def cuda_timing(torch, fn, repeats, warmup=1, prepare=None):
    """event_timing with PyTorch's CUDA events."""
    return event_timing(lambda: torch.cuda.Event(enable_timing=True), lambda a, b: a.elapsed_time(b),
                         torch.cuda.synchronize, fn, repeats, warmup, prepare)


def cupy_timing(cupy, fn, repeats, warmup=1, prepare=None):
    """event_timing with CuPy's CUDA events."""
    return event_timing(cupy.cuda.Event, cupy.cuda.get_elapsed_time, cupy.cuda.runtime.deviceSynchronize,
                         fn, repeats, warmup, prepare)
