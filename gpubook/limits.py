"""The device limits that chapters compare against, each with one definition and one source.

- the copy rate (`copy_gbs`): bytes read + written per second by chapter 0's float4
  copy kernel, measured once per device and stored in chapter 0's record;
- the read rate (`recorded_read_gbs`): bytes read per second from device memory by
  the machine page's read kernel at its largest working set, stored in that page's record;
- Little's law (`bytes_in_flight`): latency x the read rate, the one product every page
  that asks "how many bytes must be in flight" uses.
"""
import numpy as np
import pyopencl as cl

from . import launch
from .device import compute_units, pinned_empty, require_fp64
from .kernels import kernel
from .records import device_slug, load_results, recorded_limits
from .scale import scale
from .timing import time_events


def recorded_copy_gbs(device, root=None):
    """Chapter 0's copy rate (GB/s, read + write) for this device, or None where not recorded:
    the one copy figure every page quotes."""
    recorded = recorded_limits(device, root)
    return None if recorded is None else recorded["copy_gbs"]


def recorded_read_gbs(device, root=None):
    """The machine page's device-memory read rate (GB/s, bytes read only) for this device,
    or None where not recorded."""
    from .records import load_results, device_slug

    entry = load_results("00_machine", root).get(device_slug(device))
    return None if entry is None else entry["data"].get("read_gbs")


def bytes_in_flight(latency_ns, gbs, compute_units, resident_items=None):
    """Little's law: bytes in flight = latency x bandwidth (ns x GB/s = bytes), for the
    device, per compute unit and, where the resident work-items per compute unit are
    known, per work-item. `gbs` is the read rate (the bytes a load brings back)."""
    device = latency_ns * gbs
    per_cu = device / compute_units
    out = {"latency_ns": latency_ns, "gbs": gbs, "device_bytes": device, "per_cu_bytes": per_cu}
    if resident_items:
        out["resident_items"] = resident_items
        out["per_item_bytes"] = per_cu / resident_items
    return out


def copy_gbs(ctx, queue, device):
    """Copy bandwidth in GB/s (read + write): chapter 0's recorded figure for this
    device, else a quick measurement with chapter 0's float4 copy kernel."""
    recorded = recorded_copy_gbs(device)
    if recorded is not None:
        return recorded
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


FMA_WIDTHS = (1, 2, 4, 8, 16)


def fma_kernel(ctx, iters, dtype=np.float32, vec=1):
    """Chapter 0's eight FMA chains per work-item, ITERS steps each, in float or double,
    each chain a vector of `vec` lanes (one kernel source, typed by its build options)."""
    defines = {"ITERS": iters} if dtype == np.float32 else {"ITERS": iters, "TYPE": "double", "FP64": 1}
    return kernel(ctx, "device/fma.cl", "fma_chains", {**defines, **({"VEC": vec} if vec > 1 else {})})


def fma_reference(n_items, iters, a, b, vec=1):
    """What the FMA kernel writes, in float64: per work-item and lane, the sum of its eight
    chains after `iters` steps of x = a x + b (the closed form a^n x0 + b (1 - a^n)/(1 - a))."""
    x0 = (np.arange(n_items) & 1023) * float(np.float32(1e-3))
    # lane l starts at the float literal l * 1e-4 (rounded to float, as the kernel's table)
    lanes = (np.arange(vec) * 1e-4).astype(np.float32).astype(np.float64) if vec > 1 else np.zeros(1)
    starts = x0[:, None, None] + lanes[None, :, None] + 0.125 * np.arange(8)[None, None, :]
    a, b = float(a), float(b)
    return (a**iters * starts + b * (1 - a**iters) / (1 - a)).sum(axis=2).ravel()


def fma_width(ctx, queue, device, dtype=np.float32, iters=256):
    """The vector width at which the FMA chains run fastest here: 1 where the device
    prefers scalars (a GPU, which issues one instruction for a warp of work-items, is
    never probed), else the best of 1, 2, 4, ... up to its preferred width, timed
    briefly (a CPU through PoCL runs a work-item's loop on one core, and its SIMD lanes
    fill only with explicit vectors; its reported width may exceed its registers)."""
    attr = "preferred_vector_width_float" if dtype == np.float32 else "preferred_vector_width_double"
    try:
        most = int(getattr(device, attr) or 1)
    except (cl.Error, AttributeError, TypeError, ValueError):
        most = 1
    widths = [w for w in FMA_WIDTHS if w <= most]
    if len(widths) == 1:
        return 1
    items = compute_units(device) * 1024
    out = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, np.dtype(dtype).itemsize * items * widths[-1])
    rates = {}
    for w in widths:
        fma = fma_kernel(ctx, iters, dtype, w)
        local = launch.local_size(fma, device, (256,))
        t = time_events(lambda: fma(queue, (items,), local, out, dtype(0.999), dtype(0.001)), repeats=3)
        rates[w] = w / t.median
    return max(rates, key=rates.get)


def _fma_gflops(ctx, queue, device, dtype):
    """GFLOP/s of chapter 0's eight FMA chains per work-item, 256 steps each,
    in float or double, at the vector width fma_width finds best."""
    iters, items, vec = 256, compute_units(device) * 2048, fma_width(ctx, queue, device, dtype)
    out = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, np.dtype(dtype).itemsize * items * vec)
    fma = fma_kernel(ctx, iters, dtype, vec)
    local = launch.local_size(fma, device, (256,))
    t = time_events(lambda: fma(queue, (items,), local, out, dtype(0.999), dtype(0.001)), repeats=5)
    return 2 * 8 * iters * items * vec / t.median / 1e9


def fp64_gflops(ctx, queue, device, recorded=False):
    """FP64 multiply-add throughput in GFLOP/s of chapter 0's FMA chains in double
    precision: measured now, or with recorded=True the figure chapter 0 recorded for
    this device beside its FP64 tensor cores (one figure for every page that quotes
    it), measured now where it recorded none."""
    require_fp64(device)
    if recorded:
        entry = load_results("00_device").get(device_slug(device))
        found = entry and entry["data"].get("tensor", {}).get("fp64_fma_gflops")
        if found:
            return found
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


PAGEABLE_H2D = "host→device, pageable"  # chapter 0's transfer sweep: a NumPy array's copy


def recorded_pageable_h2d(device, nbytes, root=None):
    """Chapter 0's host-to-device rate from pageable host memory (an ordinary NumPy
    array, which `pyopencl.array.to_device` copies from) at the recorded size nearest
    `nbytes` on a log scale: (GB/s, that size in bytes), or None where chapter 0 recorded
    no such sweep for this device. `h2d_gbs` is the page-locked rate, which only pinned
    host buffers get."""
    entry = load_results("00_device", root).get(device_slug(device))
    rows = [r for r in (entry or {}).get("data", {}).get("transfer", []) if r["variant"] == PAGEABLE_H2D]
    if not rows or nbytes <= 0:
        return None
    near = min(rows, key=lambda r: abs(np.log2(r["bytes"] / nbytes)))
    return near["rate"], near["bytes"]


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
