"""Chapter 6's XᵀX on the TF32 tensor cores (kernels/tensor/xtx_tf32.cl), plain
and split in three (3xTF32): the shapes the GPU sweep tries, TF32 rounding and
splitting in NumPy (the model the kernels are checked against), and `XtX`, the
product itself. The gate, the shapes of FP64 and the one-warp checks and roofs
are gpubook.tensor's.
"""
import numpy as np
import pyopencl as cl

from . import launch, xtx
from .tensor import WARP, _build, _require, tf32_round, tf32_truncate  # noqa: F401 (tf32.tf32_round)


MODES = {"tf32-raw": 0, "tf32": 1, "3xtf32": 2}


# Candidate shapes of chapter 6's tensor-core XᵀX for the GPU sweep, the
# fastest on the H200 first (2026-11-25, 131,072 x 4,096 in 3xTF32): (T, warps)
# tile, rows per chunk, where the split happens and how the data are fed.
# FEED 1: cp.async copies, float4 fragment loads, red.global.add flushes
# (four floats at a time off the diagonal) (kernels/tensor/xtx_tf32.cl). With
# 2 x 2 warps of 64 x 64, 32.1 ms (tools/check_tensor.py; two work-groups of 4
# warps on a compute unit): 12 mma per 16-byte local load, against 8 for a
# 32 x 64 block. 4 x 2 warps of 32 x 64, 42.2 ms (172 registers: one
# work-group of 8 warps); 2 x 4 spills, 44.3 ms. LATE 1 alone: local memory
# holds the raw floats and each lane splits its operands as it loads them,
# 44.0 ms; split early, (hi, lo) pairs in local memory, 66.3 ms (the last line). Local
# memory: 2 stages x 2 panels x KC x (T + 8) x 4 B with LATE, x (T + 4) x 8 B
# without.
XTX_SHAPES = [
    {"T": 128, "WARPS_M": 2, "WARPS_N": 2, "KC": 16, "LATE": 1, "FEED": 1},  # 64 x 64 per warp, 34,816 B
    {"T": 128, "WARPS_M": 4, "WARPS_N": 2, "KC": 16, "LATE": 1, "FEED": 1},  # 32 x 64 per warp, 34,816 B
    {"T": 128, "WARPS_M": 2, "WARPS_N": 4, "KC": 16, "LATE": 1, "FEED": 1},  # 64 x 32 per warp, 34,816 B
    {"T": 128, "WARPS_M": 2, "WARPS_N": 4, "KC": 16, "LATE": 1},            # 64 x 32 per warp, 34,816 B
    {"T": 64, "WARPS_M": 2, "WARPS_N": 2, "KC": 16},                        # 32 x 32 per warp, split early
]


XTX_SHAPE = XTX_SHAPES[0]


XTX_KEYS = ("T", "WARPS_M", "WARPS_N", "KC")  # every shape gives these; LATE and FEED (0 or 1) are optional


XTX_FLAGS = ("LATE", "FEED")


# Rows between two flushes of the warps' sums into S (XtX): each flush rounds
# to nearest what the tensor core's additions rounded toward zero.
FLUSH_ROWS = 2048


XTX_LOCAL_LIMIT = 48 * 1024  # bytes of local memory NVIDIA's OpenCL gives a work-group


def split_tf32(x):
    """(hi, lo): hi = tf32(x), lo = tf32(x - hi), both float32; hi + lo holds x to about 2^-22."""
    hi = tf32_round(x)
    return hi, tf32_round(np.asarray(x, np.float32) - hi)


def xtx_model(x, mode):
    """XᵀX as the tensor cores compute it in `mode` (MODES), the products
    summed exactly (float64): what the operands' rounding alone costs."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
    x = np.asarray(x, np.float32)
    if mode == "tf32-raw":
        h = tf32_truncate(x).astype(np.float64)
        return h.T @ h
    hi, lo = (p.astype(np.float64) for p in split_tf32(x))
    out = hi.T @ hi
    if mode == "3xtf32":
        cross = hi.T @ lo
        out += cross + cross.T
    return out


class XtX:
    """The lower triangle of S = XᵀX (X: m x n float32, row-major) on TF32
    tensor cores, in one of MODES: 'tf32-raw' (the floats as they are: the
    tensor core truncates them), 'tf32' (rounded first) or '3xtf32' (each
    float split into two TF32 parts, three products).

    `shape`: T, WARPS_M, WARPS_N, KC (XTX_SHAPES); `wide_loads`: 16-byte loads
    from global memory where n and the stride allow them (else one float per
    load, each checked); `diag_skip`: on the tiles of the diagonal, warps skip
    the fragments wholly above it; `flush_rows`: every so many rows (rounded
    to a multiple of KC) the warps add their sums into S, rounded to nearest:
    the tensor core's own additions round toward zero, and over a long sum
    that drift grows (kernels/tensor/xtx_tf32.cl); `slab_rows`: X's rows go
    through the tiles that many at a time, one launch per slab (rounded up to
    a multiple of flush_rows; None: one launch over all rows)."""

    def __init__(self, ctx, queue, mode="3xtf32", shape=None, emulate=False, wide_loads=True, diag_skip=True,
                 flush_rows=FLUSH_ROWS, slab_rows=None):
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
        self.ctx, self.queue, self.mode, self.emulate = ctx, queue, mode, bool(emulate)
        self.shape = xtx_shape_checked(shape or XTX_SHAPE, mode)
        self.wide_loads, self.diag_skip = bool(wide_loads), bool(diag_skip)
        if flush_rows < 1:
            raise ValueError("flush_rows must be at least 1")
        self.flush = -(-int(flush_rows) // self.shape["KC"]) * self.shape["KC"]
        if slab_rows is not None and (isinstance(slab_rows, bool) or int(slab_rows) < 1):
            raise ValueError(f"slab_rows must be a positive number of rows or None, not {slab_rows!r}")
        self.slab = None if slab_rows is None else -(-int(slab_rows) // self.flush) * self.flush
        self.nth = WARP * self.shape["WARPS_M"] * self.shape["WARPS_N"]
        device = queue.device
        _require(device, emulate)
        launch.check(device, self.nth, self.local_bytes())
        self._kernels = {}
        self._kernel(4 if self.wide_loads else 1)

    def local_bytes(self):
        """Local memory of one work-group: the two stages of both panels (and the emulated warps' scratch)."""
        scratch = 4 * self.nth // WARP * 192 if self.emulate else 0
        return xtx_local_bytes(self.shape, self.mode) + scratch

    def loads(self, n, ldx=None, lds=None):
        """Floats per load from global memory (and per flush with FEED) for an m x n X of
        stride ldx into S of stride lds: 4 or 1."""
        ldx, lds = (n if ldx is None else ldx), (n if lds is None else lds)
        return 4 if self.wide_loads and n % 4 == 0 and ldx % 4 == 0 and lds % 4 == 0 else 1

    def _kernel(self, gv):
        if gv not in self._kernels:
            # LATE concerns 3xTF32's split only: the other modes keep one part per float anyway.
            defines = {**self.shape, "MODE": MODES[self.mode], "GV": gv, "DIAG_SKIP": int(self.diag_skip),
                       "FLUSH": self.flush, "LATE": int(self.shape.get("LATE", 0) and MODES[self.mode] == 2),
                       "FEED": int(self.shape.get("FEED", 0))}
            kern = _build(self.ctx, self.queue.device, "tensor/xtx_tf32.cl", "xtx_tf32", defines, self.emulate)
            launch.check(self.queue.device, self.nth, kern=kern)
            self._kernels[gv] = kern
        return self._kernels[gv]

    @property
    def kernel(self):
        """The kernel for n and strides that are multiples of 4 (chapter 6's sizes): the one timed."""
        return self._kernel(4 if self.wide_loads else 1)

    def tiles(self, n):
        side = -(-n // self.shape["T"])
        return side * (side + 1) // 2

    def enqueue(self, x, m, n, s, ldx=None, lds=None, wait_for=None):
        """S[i][j] for j <= i < n from the m x n matrix in buffer x into buffer s; the
        events, one per slab of rows, in order."""
        if m < 1 or n < 1:
            raise ValueError("X needs at least one row and one column")
        ldx, lds = (n if ldx is None else ldx), (n if lds is None else lds)
        if ldx < n or lds < n:
            raise ValueError("strides must be at least n")
        i32 = np.int32
        kern = self._kernel(self.loads(n, ldx, lds))
        events, step = [], self.slab or m
        for k0 in range(0, m, step):
            events.append(kern(self.queue, (self.tiles(n) * self.nth,), (self.nth,), x,
                               i32(min(k0 + step, m)), i32(n), i32(ldx), s, i32(lds), i32(k0),
                               wait_for=wait_for if k0 == 0 else None))
        return events

    def product(self, x):
        """S = XᵀX (float32; lower triangle, zeros above) of a host matrix."""
        return xtx.product_of(self.ctx, self.queue, x, self.enqueue)


def xtx_local_bytes(shape, mode):
    """Local memory of xtx_tf32 in `mode`: 2 stages x 2 panels x KC rows of T + pad
    floats, two parts (hi, lo) each in 3xTF32 split on the way in (pad 4), one
    otherwise (pad 8): the other modes, and 3xTF32 split late (LATE: 1)."""
    parts, pad = (2, 4) if MODES[mode] == 2 and not shape.get("LATE") else (1, 8)
    return 2 * 2 * shape["KC"] * (shape["T"] + pad) * parts * 4


def xtx_shape_checked(shape, mode="3xtf32"):
    """The shape as a dict of ints, or ValueError saying which rule it breaks."""
    keys = XTX_KEYS
    if not set(keys) <= set(shape) <= set(keys) | set(XTX_FLAGS):
        raise ValueError(f"tile {shape}: give exactly {', '.join(keys)}, and LATE and FEED (0 or 1) or not")
    late, feed = shape.get("LATE", 0), shape.get("FEED", 0)
    if late not in (0, 1) or feed not in (0, 1):
        raise ValueError(f"tile {shape}: LATE is 0 or 1 (1: 3xtf32 splits each operand as it loads it), "
                         "and so is FEED")
    if feed and not late:
        raise ValueError(f"tile {shape}: FEED keeps raw floats in local memory: it needs LATE 1")
    if not all(isinstance(shape[k], (int, np.integer)) and shape[k] >= 1 for k in keys):
        raise ValueError(f"tile {shape}: T, WARPS_M, WARPS_N and KC must be positive integers")
    t, wm, wn, kc = (int(shape[k]) for k in keys)
    nth = WARP * wm * wn
    if t % (16 * wm) or t % (8 * wn) or kc % 8 or (kc * t) % (4 * nth):
        raise ValueError(f"tile {shape}: T must be a multiple of 16 WARPS_M and 8 WARPS_N, KC of 8, "
                         f"and KC T of 4 x the {nth} work-items (whole 16-byte loads each)")
    per_a, per_b = 2 * t // (16 * wm), t // (8 * wn)  # a lane's values per row with FEED
    if feed and any(w > 2 and w % 4 for w in (per_a, per_b)):
        raise ValueError(f"tile {shape}: with FEED a lane reads 2 T / (16 WARPS_M) = {per_a} and "
                         f"T / (8 WARPS_N) = {per_b} values of a row: each must be 1, 2 or a multiple of 4")
    shape = dict(zip(keys, (t, wm, wn, kc)), **({"LATE": 1} if late else {}), **({"FEED": 1} if feed else {}))
    need = xtx_local_bytes(shape, mode)
    if need > XTX_LOCAL_LIMIT:
        parts = "(hi, lo) pairs" if MODES[mode] == 2 and not late else "floats"
        raise ValueError(f"tile {shape} in {mode} needs {need:,} bytes of local memory (2 stages x 2 panels x "
                         f"{kc} rows x T + pad {parts}), over the {XTX_LOCAL_LIMIT:,} that NVIDIA's OpenCL "
                         "gives a work-group: lower KC or T")
    return shape


def lower_error(s, ref):
    """Largest deviation on and below the diagonal, relative to the reference's largest entry."""
    low = np.tril_indices(ref.shape[0])
    return float(np.max(np.abs(np.asarray(s, np.float64)[low] - ref[low])) / np.max(np.abs(ref)))
