"""Register-tiled products C (+)= alpha * AᵀB in float or double, from one
kernel source (kernels/tiles/register_tiles.cl): chapter 6's covariance in
float, chapter 8's trailing updates in double.

A shape is a dict: TM x TN, the work-group's tile of C; WM x WN, each
work-item's block in registers; K, rows per chunk in local memory; STAGES, 1
or 2 local buffers; PREFETCH, 1 to issue a chunk's loads one chunk ahead. What a device cannot run is refused with the reason, so
that a sweep can skip it and say why.
"""
import numpy as np

from .launch import call, device_max, kernel_max, local_memory
from .device import require_fp64
from .kernels import KernelBuildError, kernel

PATH = "tiles/register_tiles.cl"


class TileError(ValueError):
    """A tile shape this device cannot run; the message says why."""


def vector_width(dtype):
    """Values per 16-byte vector: 4 floats or 2 doubles."""
    return 16 // np.dtype(dtype).itemsize


def work_items(shape):
    return (shape["TM"] // shape["WM"]) * (shape["TN"] // shape["WN"])


def local_bytes(shape, dtype):
    return shape.get("STAGES", 1) * shape["K"] * (shape["TM"] + shape["TN"]) * np.dtype(dtype).itemsize


def label(shape):
    stages = shape.get("STAGES", 1)
    return (f"{shape['TM']}x{shape['TN']} tile, {shape['WM']}x{shape['WN']} per item, "
            f"K={shape['K']}, {stages} stage{'s' if stages > 1 else ''}"
            + ("" if shape.get("PREFETCH", 1) else ", loads when needed"))


def unfit(device, shape, dtype):
    """Why the device cannot run this shape in this type, or None."""
    lv = vector_width(dtype)
    tm, tn, wm, wn = shape["TM"], shape["TN"], shape["WM"], shape["WN"]
    if wm % lv or wn % lv or tm % wm or tn % wn:
        return f"WM, WN must be multiples of {lv} that divide TM, TN"
    if shape.get("STAGES", 1) not in (1, 2):
        return "STAGES must be 1 or 2"
    nt = work_items(shape)
    if nt > device_max(device):
        return f"{nt} work-items per work-group; the device allows {device_max(device)}"
    need = local_bytes(shape, dtype)
    if local_memory(device) and need > local_memory(device):
        return f"{need:,} bytes of local memory; the device has {local_memory(device):,}"
    return None


def feasible(device, shapes, dtype):
    """(the shapes this device can run, [(shape, reason)] for the others)."""
    ok, skipped = [], []
    for s in shapes:
        reason = unfit(device, s, dtype)
        (skipped.append((s, reason)) if reason else ok.append(s))
    return ok, skipped


def get_kernel(ctx, device, shape, dtype, triangle=False, check=True, gv=1, extra=None):
    """The built kernel for a shape, or TileError: a shape the device cannot
    hold, a build that fails, or a kernel whose registers leave it fewer
    work-items per work-group than the shape needs. extra: more build options
    (e.g. {"DIAG_SKIP": 0}, chapter 6's earlier kernel). Checked once per
    context, device and arguments (a launch then costs no queries of the device)."""
    dtype = np.dtype(dtype)
    key = (ctx.int_ptr, device.int_ptr, tuple(sorted(shape.items())), dtype.str, bool(triangle),
           bool(check), gv, tuple(sorted((extra or {}).items())))
    if key not in _checked:
        _checked[key] = _checked_kernel(ctx, device, shape, dtype, triangle, check, gv, extra)
    return _checked[key]


_checked = {}


def _checked_kernel(ctx, device, shape, dtype, triangle, check, gv, extra):
    if dtype == np.float64:
        require_fp64(device)
    reason = unfit(device, shape, dtype)
    if reason:
        raise TileError(f"{label(shape)}: {reason}")
    lv = vector_width(dtype)
    defines = {"TYPE": "double" if dtype == np.float64 else "float", "FP64": int(dtype == np.float64),
               "LV": lv, "GV": gv, "TRIANGLE": int(triangle), "CHECK": int(check),
               "STAGES": shape.get("STAGES", 1), "PREFETCH": shape.get("PREFETCH", 1),
               **{k: shape[k] for k in ("TM", "TN", "WM", "WN", "K")}, **(extra or {})}
    try:
        k = kernel(ctx, PATH, "register_tiles", defines)
    except KernelBuildError as err:
        raise TileError(f"{label(shape)}: the kernel does not build here:\n{err}") from None
    allowed = kernel_max(k, device)
    if allowed < work_items(shape):
        raise TileError(f"{label(shape)}: the built kernel allows {allowed} work-items per "
                        f"work-group (registers), the shape needs {work_items(shape)}")
    return k


def launch_kernel(ctx, device, shape, dtype, triangle=False, aligned=False, extra=None):
    """The kernel that launch() runs for these arguments (TileError where it cannot run):
    aligned products drop the bounds checks and load vectors from global memory."""
    return get_kernel(ctx, device, shape, dtype, triangle=triangle, check=not aligned,
                      gv=vector_width(dtype) if aligned else 1, extra=extra)


def launch(queue, shape, dtype, a, a_off, lda, b, b_off, ldb, c, c_off, ldc, m, n, k_begin, k_end,
           k_chunk=None, c_stride=0, alpha=1.0, accumulate=False, triangle=False, aligned=False,
           wait_for=None, extra=None, bound=None):
    """C[c_off + i*ldc + j] (+)= alpha * sum over k of A[a_off + k*lda + i] * B[b_off + k*ldb + j]
    for i < m, j < n, k_begin <= k < k_end. With k_chunk, the rows are split in
    chunks of k_chunk (a multiple of K), one per work-group row, each writing
    its own C at c_off + chunk * c_stride. triangle: only the tiles on and
    below the diagonal (m = n). aligned: every size, offset and stride is a
    multiple of the tile (no bounds checks, 16-byte loads); the caller pads. extra: more
    build options (get_kernel). bound: a launch.Bound that keeps the arguments set."""
    dtype = np.dtype(dtype)
    tm, tn, kk = shape["TM"], shape["TN"], shape["K"]
    rows = k_end - k_begin
    k_chunk = rows if k_chunk is None else int(k_chunk)
    if k_chunk % kk and k_chunk < rows:
        raise ValueError(f"row chunks of {k_chunk} are not a multiple of K = {kk}")
    if aligned and (m % tm or n % tn or rows % kk or k_chunk % kk):
        raise ValueError(f"aligned products need m, n multiples of {tm}, {tn} and rows of {kk}")
    if triangle and (m != n or tm != tn):
        raise ValueError("the triangle needs a square C and square tiles")
    k = launch_kernel(queue.context, queue.device, shape, dtype, triangle, aligned, extra)
    tiles_y, tiles_x = -(-m // tm), -(-n // tn)
    groups = tiles_x * (tiles_x + 1) // 2 if triangle else tiles_y * tiles_x
    chunks = max(1, -(-rows // k_chunk))
    nt = work_items(shape)
    i32, t = np.int32, dtype.type
    run = call if bound is None else bound
    return run(queue, k, (groups * nt, chunks), (nt, 1), a, i32(a_off), i32(lda), b, i32(b_off), i32(ldb),
               c, i32(c_off), i32(ldc), i32(m), i32(n), i32(k_begin), i32(k_end), i32(k_chunk),
               i32(c_stride), i32(tiles_x), t(alpha), i32(accumulate), wait_for=wait_for)
