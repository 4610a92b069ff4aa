"""The device limits that chapters compare against (measured in chapter 0)."""
import numpy as np
import pyopencl as cl

from . import launch
from .device import compute_units, pinned_empty, require_fp64
from .kernels import kernel
from .records import recorded_limits
from .scale import scale
from .timing import time_events


def copy_gbs(ctx, queue, device):
    """Copy bandwidth in GB/s (read + write): chapter 0's recorded figure for this
    device, else a quick measurement with chapter 0's float4 copy kernel."""
    recorded = recorded_limits(device)
    if recorded is not None:
        return recorded["copy_gbs"]
    n = 2**26 if scale(device) == "full" else 2**22
    mf = cl.mem_flags
    src = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.ones(n, np.float32))
    dst = cl.Buffer(ctx, mf.WRITE_ONLY, 4 * n)
    copy = kernel(ctx, "device/copy.cl", "copy", {"TYPE": "float4"})
    local = launch.local_size(copy, device, (256,))
    t = time_events(lambda: copy(queue, (n // 4,), local, src, dst), repeats=10)
    return 8 * n / t.median / 1e9


def fp32_gflops(ctx, queue, device):
    """FP32 multiply-add throughput in GFLOP/s: chapter 0's recorded figure for
    this device, else a quick measurement with chapter 0's FMA kernel."""
    recorded = recorded_limits(device)
    if recorded is not None:
        return recorded["fp32_gflops"]
    return _fma_gflops(ctx, queue, device, np.float32)


def _fma_gflops(ctx, queue, device, dtype):
    """GFLOP/s of chapter 0's eight FMA chains per work-item, 256 steps each,
    in float or double (one kernel source, typed by its build options)."""
    iters, items = 256, compute_units(device) * 2048
    out = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, np.dtype(dtype).itemsize * items)
    defines = {"ITERS": iters} if dtype == np.float32 else {"ITERS": iters, "TYPE": "double", "FP64": 1}
    fma = kernel(ctx, "device/fma.cl", "fma_chains", defines)
    local = launch.local_size(fma, device, (256,))
    t = time_events(lambda: fma(queue, (items,), local, out, dtype(0.999), dtype(0.001)), repeats=5)
    return 2 * 8 * iters * items / t.median / 1e9


def fp64_gflops(ctx, queue, device):
    """FP64 multiply-add throughput in GFLOP/s, measured now with chapter 0's
    FMA chains in double precision (chapter 0 records FP32 only)."""
    require_fp64(device)
    return _fma_gflops(ctx, queue, device, np.float64)


# chapter 0's record keys of the tensor cores' roofs, by tensor.mma_peak's kind
MMA_KEYS = {"tf32": "tf32_mma_gflops", "f64": "fp64_mma_gflops"}


def mma_gflops(device, kind, root=None):
    """The tensor cores' roof in GFLOP/s for `kind` ('tf32' or 'f64'): chapter 0's
    mma loop (gpubook.tensor.mma_peak) as recorded for this device, or None where
    chapter 0 did not record it (no record, or a device without tensor cores).
    Never measured here: the loop runs only where gpubook.tensor.available allows."""
    if kind not in MMA_KEYS:
        raise ValueError(f"unknown kind {kind!r}; use one of {', '.join(MMA_KEYS)}")
    recorded = recorded_limits(device, root)
    return None if recorded is None else recorded.get(MMA_KEYS[kind])


def h2d_gbs(ctx, queue, device):
    """Host-to-device copy rate in GB/s: chapter 0's recorded figure, else a quick
    measurement from page-locked host memory."""
    recorded = recorded_limits(device)
    if recorded is not None:
        return recorded["h2d_gbs"]
    nbytes = 2**26 if scale(device) == "full" else 2**22
    host = pinned_empty(ctx, queue, (nbytes,), np.uint8)
    dev = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, nbytes)
    t = time_events(lambda: cl.enqueue_copy(queue, dev, host, is_blocking=False), repeats=5)
    host.base.release(queue)
    return nbytes / t.median / 1e9
