"""Products in double on the FP64 tensor cores (NVIDIA only, mma.sync through
inline PTX: kernels/tensor/dmma_tiles.cl), with the arguments and the result
of gpubook.tiles.launch in double: chapter 8's step 6 runs its products either
way. The gate is gpubook.tensor.available; emulate=True builds the same kernel
with the warp's product done through local memory (any OpenCL device: the
tests check the tiling and the bounds that way).

A shape gives the tile (TM, TN, WARPS_M, WARPS_N, KC), may give the local
stages ("STAGES": 1 or 2, default 2) and the paired 16-byte fragment loads
("PAIRS": 0 or 1, default 0; 1 needs each warp's block a multiple of 16 wide
both ways), may set how many lanes read along a row of A read the other way round
("ACROSS": 4, 8 or 16, default 4; it divides KC), and may name the FP64 mma shape ("MMA": one of gpubook.tensor.F64_SHAPES); without it the kernel
uses the device's (tensor.f64_shape: Hopper's m16n8k4 on sm_90 and later,
m8n8k4 on sm_8x, and m8n8k4 when emulated on a device without either).
"""
import numpy as np

from . import launch, tensor

PATH = "tensor/dmma_tiles.cl"
TILE_KEYS = ("TM", "TN", "WARPS_M", "WARPS_N", "KC")
# The tile of chapter 8's products. On an H100 (2026-11-26, tools/check_tensor.py) it
# stayed the fastest in CholeskyQR2 with Hopper's m16n8k4 as with m8n8k4: 1,000,000 x 129,
# 6.2 ms on the device (m8n8k4: 7.9 ms; register tiles 9.3 ms); 25,000 x 5,001, 105 ms
# (m8n8k4: 125 ms; register tiles 162 ms). Alone on a 4,096 x 4,096 product from
# 16,384 rows, larger tiles do better (128 x 64 with one local stage of KC 16:
# 13.5 ms against 16.2 ms), but chapter 8's products are narrower and lose the
# parallelism; paired loads (PAIRS) helped 128 x 128 tiles and slowed this one.
SHAPE = {"TM": 64, "TN": 64, "WARPS_M": 2, "WARPS_N": 2, "KC": 16}


def work_items(shape):
    return tensor.WARP * shape["WARPS_M"] * shape["WARPS_N"]


def label(shape):
    mma, stages = shape.get("MMA"), shape.get("STAGES", 2)
    return (f"{shape['TM']}x{shape['TN']} tile, {shape['WARPS_M']}x{shape['WARPS_N']} warps, "
            f"K={shape['KC']}" + (", one local stage" if stages == 1 else "") + ", FP64 mma" +
            (f" {mma}" if mma else ""))


def mma_shape(shape, device=None, emulate=False):
    """The FP64 mma shape a tile shape runs: its "MMA", else the device's
    (tensor.f64_shape), else m8n8k4."""
    if shape.get("MMA") is not None:
        tensor.f64_defines(shape["MMA"])  # a clear error for an unknown name
        return shape["MMA"]
    chosen = tensor.f64_shape(device)[0] if device is not None else None
    return chosen or tensor.F64_AMPERE


def pairs(shape):
    """The shape's "PAIRS" (default 0): 1 loads the fragments two at a time (16 bytes)
    from a paired local layout."""
    return int(shape.get("PAIRS", 0))


def local_bytes(shape, emulate=False, device=None):
    """Local memory of one work-group: STAGES copies of both panels (KC rows of
    TM + pad and TN + pad doubles: pad 4 with PAIRS, else 8, or 0 for a width
    that is an odd multiple of 8), and each emulated warp's scratch."""
    m, k = tensor.F64_SHAPES[mma_shape(shape, device, emulate)]
    scratch = 8 * (m * k + 8 * k) * shape["WARPS_M"] * shape["WARPS_N"] if emulate else 8
    def row(w):
        return w + (4 if pairs(shape) else 0 if w % 16 == 8 else 8)
    return shape.get("STAGES", 2) * 8 * shape["KC"] * (row(shape["TM"]) + row(shape["TN"])) + scratch


def get_kernel(ctx, device, shape, triangle=False, emulate=False, a_trans=False, upper=False):
    """The built kernel for a shape, or a clear error: a shape that breaks the
    fragments' rules, one the device cannot hold, or no tensor cores here
    (tensor.TensorCoreError with the gate's reason). Checked once per context,
    device and shape: CholeskyQR2 launches hundreds of products, and the checks'
    queries of the device would otherwise cost more host time than a launch.
    a_trans: the kernel that reads A the other way round (product's a_trans);
    upper: the one that runs only the tiles of an upper triangle (product's upper)."""
    key = (ctx.int_ptr, device.int_ptr, tuple(sorted(shape.items())), bool(triangle), bool(emulate),
           bool(a_trans), bool(upper))
    if key not in _checked:
        _checked[key] = _checked_kernel(ctx, device, shape, triangle, emulate, a_trans, upper)
    return _checked[key]


_checked = {}


def _refuse_upper_with(triangle, a_trans):
    if triangle:
        raise ValueError("upper (the tiles of an upper triangle) and triangle (those of a lower one) exclude "
                         "each other")
    if a_trans:
        raise ValueError("upper takes A as stored (lower triangular), not the other way round (a_trans)")


def _checked_kernel(ctx, device, shape, triangle, emulate, a_trans=False, upper=False):
    if upper:
        _refuse_upper_with(triangle, a_trans)
    if not emulate:
        tensor._require(device, emulate)
    mma = mma_shape(shape, device, emulate)
    fm, fk = tensor.F64_SHAPES[mma]
    tm, tn, wm, wn, kc = (shape[k] for k in TILE_KEYS)
    if tm % (fm * wm) or tn % (8 * wn) or kc % fk or kc < fk:
        raise ValueError(f"{label(shape)}: with {mma}, TM must be a multiple of {fm} WARPS_M, TN of 8 "
                         f"WARPS_N and KC of {fk}")
    if shape.get("STAGES", 2) not in (1, 2):
        raise ValueError(f"{label(shape)}: STAGES is 1 or 2")
    if pairs(shape) not in (0, 1) or (pairs(shape) and ((tm // wm) % 16 or (tn // wn) % 16)):
        raise ValueError(f"{label(shape)}: PAIRS is 0 or 1, and 1 needs TM / WARPS_M and TN / WARPS_N "
                         "multiples of 16")
    if triangle and tm != tn:
        raise ValueError("the triangle needs square tiles")
    if upper and tm != tn:
        raise ValueError(f"{label(shape)}: upper (the tiles of an upper triangle) needs square tiles")
    if shape.get("ACROSS", 4) not in (4, 8, 16) or kc % shape.get("ACROSS", 4):
        raise ValueError(f"{label(shape)}: ACROSS (the lanes along a row of A read across) is 4, 8 or 16 "
                         "and divides KC")
    launch.check(device, work_items(shape), local_bytes(shape, emulate, device))
    defines = {**{k: shape[k] for k in TILE_KEYS}, "STAGES": shape.get("STAGES", 2), "PAIRS": pairs(shape),
               "TRIANGLE": int(triangle), "ATRANS": int(bool(a_trans)), **({"UPPER": 1} if upper else {}),
               **({"ACROSS": shape["ACROSS"]} if "ACROSS" in shape else {}), **tensor.f64_defines(mma)}
    kern = tensor._build(ctx, device, PATH, "dmma_tiles", defines, emulate)
    launch.check(device, work_items(shape), kern=kern)
    return kern


def product(queue, shape, a, a_off, lda, b, b_off, ldb, c, c_off, ldc, m, n, k_begin, k_end, k_chunk=None,
            c_stride=0, alpha=1.0, accumulate=False, triangle=False, emulate=False, wait_for=None, bound=None,
            a_trans=False, upper=False):
    """As gpubook.tiles.launch in double (the same arguments and result), on
    the FP64 tensor cores. bound: a launch.Bound that keeps the arguments set.
    a_trans: A is given the other way round, C[i][j] = alpha * sum over k of
    A[a_off + i*lda + k] * B[k][j] (its rows are the rows of C).
    upper: a square C = A'B of a lower-triangular A (A[k][i] = 0 for k < i) and
    an upper-triangular B (B[k][j] = 0 for k > j), square tiles: one launch of
    only the tiles that touch C's upper triangle (diagonal included), each summing
    over the rows k where neither factor is zero (k counted from k = 0 at a_off and
    b_off; chapter 8's R = R2 R1). The tiles below the diagonal are not written; those
    on it write their part below it too (zeros, the factors being triangular)."""
    rows = k_end - k_begin
    k_chunk = max(1, rows) if k_chunk is None else int(k_chunk)
    if triangle and m != n:
        raise ValueError("the triangle needs a square C")
    if a_trans and triangle:
        raise ValueError("the triangle reads A as B; it cannot take A the other way round")
    if upper:
        _refuse_upper_with(triangle, a_trans)
        if m != n:
            raise ValueError("upper (the tiles of an upper triangle) needs a square C")
    kern = get_kernel(queue.context, queue.device, shape, triangle, emulate, a_trans, upper)
    tiles_y, tiles_x = -(-m // shape["TM"]), -(-n // shape["TN"])
    groups = tiles_x * (tiles_x + 1) // 2 if triangle or upper else tiles_y * tiles_x
    chunks = max(1, -(-rows // k_chunk))
    nt, i32 = work_items(shape), np.int32
    return (launch.call if bound is None else bound)(
        queue, kern, (groups * nt, chunks), (nt, 1), a, i32(a_off), i32(lda), b, i32(b_off), i32(ldb),
        c, i32(c_off), i32(ldc), i32(m), i32(n), i32(k_begin), i32(k_end), i32(k_chunk), i32(c_stride),
        i32(tiles_x), np.float64(alpha), i32(accumulate), wait_for=wait_for)
