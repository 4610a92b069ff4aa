"""Tensor cores from OpenCL through inline PTX (NVIDIA only): the gate, the
roofs (chapter 0), a one-warp check of the fragment layouts, and TF32
rounding in NumPy (kernels/tensor/). Chapter 6's XᵀX on the TF32 tensor cores
is gpubook.tf32's.

`available(device)` says whether this device can run them: (True, "") on
NVIDIA's OpenCL platform when its compiler builds the mma.sync asm, else
(False, the reason in one line). Everything else refuses with that reason.
On any device, `emulate=True` builds the same kernels with the warp's matrix
product done through local memory instead (kernels/tensor/mma.cl): that is
how the tests check the tiling, bounds and splitting on a CPU. Emulated
results are never tensor-core results.

FP64 comes in several mma shapes (F64_SHAPES); `f64_shape(device)` picks the
one this device runs fastest from its compute capability: Hopper's on sm_90
and later, Ampere's m8n8k4 on sm_8x. The kernels take it as a build option.
"""
import numpy as np
import pyopencl as cl

from . import launch
from .device import compute_units
from .kernels import KernelBuildError, kernel
from .timing import time_events

WARP = 32
MMA = "tensor/mma.cl"
FLOPS_PER_MMA = {"tf32": 2 * 16 * 8 * 8, "f64": 2 * 8 * 8 * 4}  # f64: m8n8k4 (f64_flops for the others)
# The FP64 mma shapes, (rows of A and D, depth) of D (M x 8) = A (M x K) B (K x 8) + C.
# m8n8k4 is Ampere's (sm_80); the m16n8 shapes are Hopper's (sm_90). On an H100
# through NVIDIA's OpenCL (2026-11-26, tools/check_tensor.py, best of 4/8/16 chains)
# m8n8k4 ran at 33.3 TFLOP/s, m16n8k4 at 66.4, m16n8k8 and m16n8k16 at 66.6 (the FMA
# chains in double: 27.2). The kernels use m16n8k4 there: the same rate within the
# noise, the fewest registers per chain (58 at 4 chains against 76 and 122), and
# in chapter 8's 64 x 64 tiles 16.2 ms against m16n8k8's 17.6 ms.
F64_SHAPES = {"m8n8k4": (8, 4), "m16n8k4": (16, 4), "m16n8k8": (16, 8), "m16n8k16": (16, 16)}
F64_AMPERE = "m8n8k4"
F64_HOPPER = "m16n8k4"  # the Hopper shape the kernels use on sm_90 and later (see above)
# chapter 0's record key of the m8n8k4 loop, kept beside limits.MMA_KEYS["f64"] where that
# loop runs another shape
F64_AMPERE_KEY = "fp64_mma_m8n8k4_gflops"


class TensorCoreError(RuntimeError):
    """This device cannot run the tensor-core kernels; the message says why."""


_gate = {}
_f64_rejected = {}  # device int_ptr -> why the compiler refused the Hopper shape


def f64_flops(shape):
    """Flops of one FP64 mma of this shape (per warp): 2 M 8 K."""
    m, k = _f64_dims(shape)
    return 2 * m * 8 * k


def _f64_dims(shape):
    if shape not in F64_SHAPES:
        raise ValueError(f"unknown FP64 mma shape {shape!r}; use one of {', '.join(F64_SHAPES)}")
    return F64_SHAPES[shape]


def f64_defines(shape):
    """The build options of an FP64 mma shape (kernels/tensor/mma.cl): F64_M, F64_K."""
    m, k = _f64_dims(shape)
    return {"F64_M": m, "F64_K": k}


def shape_for_capability(major, minor=0):
    """The FP64 mma shape for a compute capability: Hopper's from 9.0 on, m8n8k4 on
    8.x, None before 8.0 (no FP64 tensor cores)."""
    if major is None:
        return None
    if major >= 9:
        return F64_HOPPER
    return F64_AMPERE if major == 8 else None


def f64_shape(device):
    """(shape, why): the FP64 mma shape the kernels use on this device, and one
    line saying why; shape None where the device has no FP64 tensor cores that
    this book reaches (the portable path runs; `why` says so)."""
    name, platform = device.name.strip(), device.platform.name.strip()
    if "nvidia" not in platform.lower():
        return None, f"{name} is on {platform}, not NVIDIA's OpenCL: no FP64 mma here"
    major = _reported(device, "compute_capability_major_nv")
    minor = _reported(device, "compute_capability_minor_nv") or 0
    if major is None:
        return F64_AMPERE, (f"{name} does not report its compute capability: {F64_AMPERE}, "
                            "the shape every FP64 tensor core runs")
    shape = shape_for_capability(major, minor)
    if shape is None:
        return None, f"{name} is sm_{major}{minor}: FP64 mma.sync needs sm_80 or later"
    rejected = _f64_rejected.get(getattr(device, "int_ptr", id(device)))
    if shape != F64_AMPERE and rejected:
        return F64_AMPERE, f"{name} is sm_{major}{minor}, but the compiler refuses {shape}: {rejected}"
    if shape == F64_AMPERE:
        return shape, f"{name} is sm_{major}{minor}: Ampere's FP64 shape, {shape}"
    return shape, (f"{name} is sm_{major}{minor}: Hopper's FP64 shape {shape}, twice the rate of "
                   f"{F64_AMPERE} there")


def _f64_resolved(device, shape, emulate):
    """The FP64 shape to build: the one asked for, else this device's, else (emulated
    on a device without FP64 tensor cores) m8n8k4."""
    if shape is not None:
        _f64_dims(shape)
        return shape
    return f64_shape(device)[0] or F64_AMPERE


def available(device):
    """(True, "") where NVIDIA's OpenCL compiler builds mma.sync for TF32 and
    FP64 on this device, else (False, why not, in one line). Checked once per device."""
    key = device.int_ptr
    if key not in _gate:
        reason = _why_not(device)
        _gate[key] = (reason is None, reason or "")
    return _gate[key]


def _why_not(device):
    name, platform = device.name.strip(), device.platform.name.strip()
    if "nvidia" not in platform.lower():
        return (f"{name} is on {platform}, not NVIDIA's OpenCL: tensor cores are reached here through "
                "inline PTX, which only NVIDIA's compiler takes")
    major = _reported(device, "compute_capability_major_nv")
    minor = _reported(device, "compute_capability_minor_nv") or 0
    if major is not None and major < 8:
        return f"{name} is sm_{major}{minor}: TF32 and FP64 mma.sync need sm_80 or later"
    try:
        ctx = cl.Context([device])
        for name_ in ("mma_check_tf32", "mma_check_f64"):
            kernel(ctx, (MMA, "tensor/check.cl"), name_, {"EMULATE": 0})
    except (KernelBuildError, cl.Error) as err:
        return "NVIDIA's compiler rejects the mma.sync asm: " + _first_error(err)
    shape = shape_for_capability(major, minor)
    if shape not in (None, F64_AMPERE):
        try:
            kernel(ctx, (MMA, "tensor/check.cl"), "mma_check_f64", {"EMULATE": 0, **f64_defines(shape)})
        except (KernelBuildError, cl.Error) as err:
            _f64_rejected[device.int_ptr] = _first_error(err)
    return None


def _first_error(err):
    lines = [ln.strip() for ln in str(err).splitlines() if "error" in ln.lower()]
    return (lines[0] if lines else str(err).splitlines()[0])[:200]


def _reported(device, attr):
    try:
        return int(getattr(device, attr))
    except (AttributeError, cl.Error, TypeError, ValueError):
        return None


def _require(device, emulate):
    if emulate:
        return
    ok, reason = available(device)
    if not ok:
        raise TensorCoreError(reason)


def _build(ctx, device, path, name, defines, emulate):
    _require(device, emulate)
    return kernel(ctx, (MMA, path), name, {**defines, "EMULATE": int(bool(emulate))})


# --- one warp: the fragment layouts -----------------------------------------------------

def mma_check(ctx, queue, kind, ksteps=4, seed=0, emulate=False, shape=None):
    """One warp's D = A B + C against NumPy float64; for FP64, in `shape`
    (F64_SHAPES; None: this device's, f64_shape). Returns a dict: `error`
    (max |D - AB - C| / max |AB + C|), `error_rounded` (against the product of
    the TF32-rounded operands: a layout error shows here as order one),
    `tolerance`, `ok` and a one-line `summary`."""
    if kind not in FLOPS_PER_MMA:
        raise ValueError(f"unknown kind {kind!r}; use 'tf32' or 'f64'")
    device = queue.device
    _require(device, emulate)
    rng = np.random.default_rng(seed)
    defines = {}
    if kind == "tf32":
        dtype, m, k = np.float32, 16, 8 * ksteps
    else:
        shape = _f64_resolved(device, shape, emulate)
        defines = f64_defines(shape)
        dtype, m, k = np.float64, defines["F64_M"], defines["F64_K"] * ksteps
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, 8)).astype(dtype)
    c = rng.standard_normal((m, 8)).astype(dtype)
    kern = _build(ctx, device, "tensor/check.cl", f"mma_check_{kind}", defines, emulate)
    launch.check(device, WARP, kern=kern)
    mf = cl.mem_flags
    bufs = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=h) for h in (a, b, c)]
    out = cl.Buffer(ctx, mf.WRITE_ONLY, c.nbytes)
    kern(queue, (WARP,), (WARP,), *bufs, out, np.int32(ksteps)).wait()
    d = np.empty_like(c)
    cl.enqueue_copy(queue, d, out)
    a64, b64, c64 = (h.astype(np.float64) for h in (a, b, c))
    ref = a64 @ b64 + c64
    scale = np.max(np.abs(ref))
    error = float(np.max(np.abs(d - ref)) / scale)
    if kind == "tf32":
        rounded = tf32_round(a).astype(np.float64) @ tf32_round(b).astype(np.float64) + c64
        error_rounded = float(np.max(np.abs(d - rounded)) / scale)
        tol, tol_rounded = 2e-3, 1e-5
    else:
        error_rounded, tol, tol_rounded = error, 1e-15, 1e-15
    ok = error <= tol and error_rounded <= tol_rounded
    what = "m16n8k8 TF32" if kind == "tf32" else f"{shape} FP64"
    summary = (f"{what}{' (emulated)' if emulate else ''}: {ksteps} steps, relative error {error:.1e} "
               f"(limit {tol:.0e})" + (f", {error_rounded:.1e} against the TF32-rounded operands "
                                        f"(limit {tol_rounded:.0e})" if kind == "tf32" else ""))
    return {"error": error, "error_rounded": error_rounded, "tolerance": tol, "ok": ok, "summary": summary,
            "shape": "m16n8k8" if kind == "tf32" else shape}


# --- the roofs -----------------------------------------------------------------------

def mma_peak(ctx, queue, kind, iters=4096, chains=8, groups=None, repeats=5, emulate=False, shape=None):
    """(Timing of one launch, flops per launch, the sums every work-item
    wrote) of the mma loop of `kind` ('tf32' or 'f64'; FP64 in `shape`,
    F64_SHAPES, None: this device's, f64_shape): `groups` work-groups (8 per
    compute unit by default), each warp running `chains` independent chains
    `iters` deep."""
    if kind not in FLOPS_PER_MMA:
        raise ValueError(f"unknown kind {kind!r}; use 'tf32' or 'f64'")
    device = queue.device
    _require(device, emulate)
    defines, per_mma = {"CHAINS": int(chains)}, FLOPS_PER_MMA["tf32"]
    if kind == "f64":
        shape = _f64_resolved(device, shape, emulate)
        defines, per_mma = {**defines, **f64_defines(shape)}, f64_flops(shape)
    wg = launch.largest(device, 256, smallest=WARP)
    kern = _build(ctx, device, "tensor/peak.cl", f"mma_peak_{kind}", {**defines, "WG": wg}, emulate)
    while launch.why_not(device, wg, kern=kern) and wg > WARP:
        wg //= 2
        kern = _build(ctx, device, "tensor/peak.cl", f"mma_peak_{kind}", {**defines, "WG": wg}, emulate)
    launch.check(device, wg, kern=kern)
    groups = 8 * compute_units(device) if groups is None else int(groups)
    dtype = np.float32 if kind == "tf32" else np.float64
    rng = np.random.default_rng(0)
    # small: no overflow over long chains; FP64 reads up to 12 x 32 values (m16n8k16)
    host = (rng.standard_normal(192 if kind == "tf32" else 384) * 1e-3).astype(dtype)
    mf = cl.mem_flags
    src = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host)
    out = cl.Buffer(ctx, mf.WRITE_ONLY, groups * wg * np.dtype(dtype).itemsize)
    timing = time_events(lambda: kern(queue, (groups * wg,), (wg,), src, out, np.int32(iters)),
                         repeats=repeats, warmup=1)
    flops = groups * (wg // WARP) * iters * chains * per_mma
    sums = np.empty(groups * wg, dtype)
    cl.enqueue_copy(queue, sums, out)
    return timing, flops, sums


def mma_roofs(ctx, queue, iters=None, chains=8):
    """Chapter 0's tensor-core roofs on this device: a list of dicts, one per
    loop, each with `key` (its record key), `loop` (its label), `shape`,
    `gflops` and `ms` (per launch). TF32 (limits.MMA_KEYS["tf32"]), FP64 in
    this device's shape (limits.MMA_KEYS["f64"]) and, where that shape is not
    m8n8k4, the m8n8k4 loop beside it (F64_AMPERE_KEY). `iters`: mma per chain
    by kind ({"tf32": ..., "f64": ...}), both loops of FP64 alike; 4,096 by
    default, a few ms per launch on an H100 (at 64, 0.1 ms: too short to
    reach the roof there)."""
    from .limits import MMA_KEYS
    iters = {"tf32": 4096, "f64": 4096, **(iters or {})}
    shape = _f64_resolved(queue.device, None, False)
    loops = [("tf32", None, MMA_KEYS["tf32"], "mma.sync m16n8k8, TF32"),
             ("f64", shape, MMA_KEYS["f64"], f"mma.sync {shape}, FP64")]
    if shape != F64_AMPERE:
        loops.append(("f64", F64_AMPERE, F64_AMPERE_KEY, f"mma.sync {F64_AMPERE}, FP64"))
    rows = []
    for kind, shp, key, label in loops:
        t, flops, _ = mma_peak(ctx, queue, kind, iters=iters[kind], chains=chains, shape=shp)
        rows.append({"key": key, "loop": label, "shape": shp or "m16n8k8", "gflops": flops / t.median / 1e9,
                     "ms": t.median * 1e3})
    return rows


# --- TF32 in NumPy --------------------------------------------------------------------


def tf32_round(x):
    """x (float32) rounded to the nearest TF32 value, ties away from zero (cvt.rna)."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def tf32_truncate(x):
    """x (float32) with its low 13 mantissa bits cleared: what the tensor core reads of a raw float."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    return (bits & np.uint32(0xFFFFE000)).view(np.float32)
