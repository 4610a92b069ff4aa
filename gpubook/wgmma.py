"""Hopper's warp-group MMA (wgmma) from OpenCL, through the PTX: NVIDIA's OpenCL
compiler refuses wgmma, an sm_90a instruction, but passes PTX comments in inline asm
through with their operands' registers filled in. `rewrite` turns those markers into
the instructions and sets the target to sm_90a; the driver then takes the text as a
program binary (gpubook.ptx_probe found that door, and one m64n8k8 product through it
equal to NumPy's on an H200, 2026-11-28). `Gram` is part 6.3's step 8 on it
(kernels/tensor/wgmma_gram.cl; tools/probe_wgmma_gram.py times its shapes).

sync=True waits for each wgmma before the next (wgmma.fence, the product, commit,
wait): the accumulators are never in flight while the compiler's own instructions
run. sync=False issues them as the kernel's markers say, waiting where its WG_WAIT
markers are; it is only right where nothing but the markers touches the accumulators
in between (ptxas then says "warpgroup.wait is injected" and waits itself), which the
probe checks against NumPy.

A first tile kernel that copied X into local memory through registers, each work-group
a 64 x 128 tile, took 47.4 ms for all 4,096 x 4,096 of C from 131,072 rows on an H200
(93 TFLOP/s), the same whether each wgmma was waited for or not: the copy set the pace."""
import math

import numpy as np
import pyopencl as cl

from . import clock, launch, xtx
from .kernels import build

WARP_GROUP = 128


def to_sm90a(ptx):
    """NVIDIA's PTX (text, its NUL dropped) with its `.target sm_90` line set to sm_90a."""
    ptx = ptx.rstrip("\x00")
    target = next((ln.strip() for ln in ptx.splitlines() if ln.strip().startswith(".target")), "")
    return ptx.replace(target, target.replace("sm_90", "sm_90a", 1), 1) if target else ptx


def _mma(d, a, b, z, sync):
    mma = (f"\twgmma.mma_async.sync.aligned.m64n{2 * len(d)}k8.f32.tf32.tf32 {{{', '.join(d)}}}, "
           f"{a}, {b}, p, 1, 1;")
    out = ["\t{", "\t.reg .pred p;", f"\tsetp.ne.b32 p, {z}, 0;"]
    out += (["\twgmma.fence.sync.aligned;", mma, "\twgmma.commit_group.sync.aligned;",
             "\twgmma.wait_group.sync.aligned 0;"] if sync else [mma])
    return out + ["\t}"]


def rewrite(ptx, sync=True, maxnreg=None):
    """PTX with its markers made instructions, for sm_90a (wgmma_gram.cl's and
    wgmma_probe.cl's): WG_MMA's shape is m64nNk8 with N twice its count of accumulator
    registers (4 in the probe); WG_MMA_GO's takes the registers of the WG_ACC markers
    since the last one (N = 128 in the tiles). maxnreg: each kernel held to that many
    registers a work-item (ptxas's .maxnreg; a shape's REGS), where not None."""
    out, pending, entry = [], [], False
    for ln in to_sm90a(ptx).splitlines():
        words = ln.split()
        entry = entry or ln.startswith(".entry")
        if entry and ln.strip() == "{":
            out += [f".maxnreg {int(maxnreg)}"] if maxnreg else []
            entry = False
        mark = words[1] if words[:1] == ["//"] and len(words) > 1 else ""
        if mark == "WG_ACC":
            pending += words[2:]
        elif mark == "WG_HOLD":
            pass
        elif mark == "WG_MMA_GO":
            if len(words) != 5 or not pending or len(pending) % 8 or len(pending) > 128:
                raise ValueError(f"WG_MMA_GO needs 3 operands after WG_ACC markers of 8 to 128 "
                                 f"accumulators, not {len(pending)}: {ln.strip()}")
            out += _mma(pending, *words[2:], sync)
            pending = []
        elif mark == "WG_MMA_GOR":
            if len(words) != 8 or not pending or len(pending) % 8 or len(pending) > 128:
                raise ValueError(f"WG_MMA_GOR needs 6 operands after WG_ACC markers of 8 to 128 "
                                 f"accumulators, not {len(pending)}: {ln.strip()}")
            out += _mma(pending, "{" + ", ".join(words[2:6]) + "}", *words[6:], sync)
            pending = []
        elif mark == "WG_COMMIT":
            out += [] if sync else ["\twgmma.commit_group.sync.aligned;"]
        elif mark == "WG_WAIT":
            out += [] if sync else [f"\twgmma.wait_group.sync.aligned {int(words[2])};"]
        elif mark == "WG_FENCE_PROXY":
            out.append("\tfence.proxy.async.shared::cta;")
        elif mark == "WG_FENCE":
            out += [] if sync else ["\twgmma.fence.sync.aligned;"]
        elif mark == "WG_MMA":
            d, (a, b, z) = words[2:-3], words[-3:]
            if len(words) < 9 or len(d) % 4:
                raise ValueError(f"a WG_MMA marker needs 4, 8, ... accumulators and 3 more operands, "
                                 f"not {len(words) - 2}: {ln.strip()}")
            out += _mma(d, a, b, z, sync)
        else:
            out.append(ln)
    return "\n".join(out) + "\n"


GRAM_PATH = "tensor/wgmma_gram.cl"
GRAM_MODES = {"tf32-raw": 0, "tf32": 1, "3xtf32": 2}
LOCAL_LIMIT = 48 * 1024     # bytes of local memory NVIDIA's OpenCL gives a work-group

# The tile, its warp groups and stages (kernels/tensor/wgmma_gram.cl): the default,
# then the others tools/probe_wgmma_gram.py tries.
GRAM_SHAPE = {"WGS": 2, "MW": 1, "TN": 128, "KC": 16, "STAGES": 3, "WAIT": 0}
# 3xTF32's stages of lo parts leave room for chunks of 8 rows only; A from registers
# (AREG) keeps only B's lo parts in local memory, and three stages of them (LOS) save a
# barrier a chunk: on an H200 (2026-11-28, a flush every 2,048 rows) 25.2-25.4 ms for
# the product, against 27.6-28.0 with both lo parts in two stages. L2HINT=1 flushes C
# with L2 priority evict_last, so that C stays in L2 between flushes while X' streams
# through: at a flush every 1,024 rows 25.7 ms against 26.1-26.3 (at 2,048, 24.8 against
# 25.1); its policy register took ptxas to 164 registers (one work-group a compute
# unit, 32-34 ms) until REGS held it to 128, where nothing spills. Loops over a stage's
# pieces whose count the compiler knows (ROUNDS) then took it from 25.95 to 23.40 ms
# (the same H200, 2026-11-28): Nsight Compute counted 156 instructions a warp a chunk
# before (the copies' loops had a remainder and branches), 114 after, and the tensor
# pipe busy 63% of the time instead of 57%. The copy of a chunk issued after the lo
# split's proxy fence instead of before it (kernels/tensor/wgmma_gram.cl, `step`): 22.87
# against 24.27 ms on another H200. BULK=1 copies each chunk by two cp.async.bulk of one
# work-item, waited for on an mbarrier, which no proxy fence waits for: 19.58 ms against
# 21.88 on a third (one-pass TF32's 48 KB of stages leave no room for the mbarriers).
GRAM_SHAPE_3X = {"WGS": 2, "MW": 1, "TN": 128, "KC": 8, "STAGES": 4, "WAIT": 1, "AREG": 1, "LOS": 3,
                 "L2HINT": 1, "REGS": 128, "BULK": 1}
GRAM_SHAPES = [GRAM_SHAPE, GRAM_SHAPE_3X, {**GRAM_SHAPE_3X, "AREG": 0, "LOS": 2, "BULK": 0},
               {"WGS": 2, "MW": 1, "TN": 128, "KC": 16, "STAGES": 3, "WAIT": 1},
               {"WGS": 2, "MW": 1, "TN": 128, "KC": 8, "STAGES": 6, "WAIT": 1},
               {"WGS": 2, "MW": 1, "TN": 128, "KC": 8, "STAGES": 5, "WAIT": 0},
               {"WGS": 2, "MW": 1, "TN": 256, "KC": 8, "STAGES": 4, "WAIT": 1},
               {"WGS": 1, "MW": 1, "TN": 128, "KC": 16, "STAGES": 4, "WAIT": 1},
               {"WGS": 1, "MW": 2, "TN": 128, "KC": 8, "STAGES": 4, "WAIT": 1},
               {"WGS": 2, "MW": 1, "TN": 128, "KC": 8, "STAGES": 5, "WAIT": 1, "AREG": 1},
               {"WGS": 1, "MW": 2, "TN": 128, "KC": 8, "STAGES": 5, "WAIT": 1, "AREG": 1}]
FLUSH_ROWS = 2048           # terms between two flushes of the sums into C (one pass)
# 3xTF32 flushes twice as often: on an H200 (2026-11-28), every 2,048 rows it was off
# float64 by 4.0e-5, no better than rounded TF32's 3.7e-5 (the sums' drift, not the
# operands, set its error), every 1,024 by 2.0e-5 (float32's step 4: 2.4e-5), for
# 25.4 ms of products against 24.4 (24.8 against 24.2 once L2HINT kept C in L2)
FLUSH_ROWS_3X = 1024
# rows x columns of X per work-group of tf32_transpose: on an H200 (131,072 x 4,096), with
# work-groups of 32 x 8, 64 x 64 took 1.14 ms, 32 x 32 1.28, 32 x 128 1.45 (a copy of X,
# 1.01 ms); with the 1-D work-group of 256 that lets PoCL at 32 work-items run it too,
# part 6.3's stored run gives 1.42-1.57 ms
TRANSPOSE_TILE = (64, 64)


def gram_local_bytes(shape, mode="tf32"):
    """Local memory of one work-group: its stages, in 3xtf32 LOS (2 or 3) more of lo
    parts (of B's rows only where AREG takes A from registers), and with BULK an 8-byte
    mbarrier a stage (counted when emulated too, where the kernel leaves them out)."""
    tm, tn = 64 * shape["WGS"] * shape["MW"], shape["TN"]
    lo = shape.get("LOS", 2) * ((0 if shape.get("AREG") else tm) + tn) if GRAM_MODES[mode] == 2 else 0
    bars = 8 * shape["STAGES"] if shape.get("BULK") else 0       # an mbarrier a stage
    return 4 * (shape["STAGES"] * (tm + tn) + lo) * shape["KC"] + bars


class Gram:
    """C = XᵀX for X (m x n, float32, row-major, stride ldx) in a device buffer, on
    Hopper's wgmma (or, emulate=True, the same kernel computing each product itself,
    on any device): tf32_transpose writes X' (rounded in mode tf32; GRAM_MODES are
    gpubook.tf32's), then wgmma_gram the tiles that hold C's lower triangle (those on
    the diagonal whole, so C's entries above it there are written too). In 3xtf32 each
    float x is hi + lo, hi = x truncated to TF32 (as the tensor core reads x), lo = x - hi
    computed in local memory, and three products (lo hi, hi lo, hi hi). sync=True waits
    for each wgmma before the next (gpubook.wgmma.rewrite); flush_rows: terms between two
    additions of the sums into C (None: FLUSH_ROWS_3X in 3xtf32, else FLUSH_ROWS);
    clocks=True: each work-group stamps the SM clock over its products (`clock`). Any
    m x n runs: sizes the tiles do not divide go through zero-padded copies (`padded`)."""

    def __init__(self, ctx, queue, mode="tf32", shape=None, emulate=False, sync=False,
                 flush_rows=None, clocks=False):
        if mode not in GRAM_MODES:
            raise ValueError(f"unknown mode {mode!r}; use one of {', '.join(GRAM_MODES)}")
        self.ctx, self.queue, self.mode, self.emulate = ctx, queue, mode, bool(emulate)
        self.shape = dict(shape or (GRAM_SHAPE_3X if mode == "3xtf32" else GRAM_SHAPE))
        sh = self.shape
        ahead = sh["STAGES"] - 2 if GRAM_MODES[mode] == 2 else sh["STAGES"] - 1 - sh["WAIT"]
        if (sh.get("AREG") or "LOS" in sh) and GRAM_MODES[mode] != 2:
            raise ValueError(f"AREG (A from registers) and LOS are 3xtf32's, not {mode}'s")
        if sh.get("LOS", 2) not in (2, 3):
            raise ValueError(f"LOS (stages of lo parts) must be 2 or 3, not {sh['LOS']}")
        if sh["TN"] % 32 or sh["TN"] > 256 or sh["KC"] not in (8, 16, 32) or not 1 <= ahead <= 5:
            raise ValueError(f"shape {sh}: TN must be a multiple of 32 up to 256, KC 8, 16 or 32, and "
                             "STAGES from 2 + WAIT to 6 + WAIT (3 to 7 in 3xtf32)")
        self.tm, self.tn, self.threads = 64 * sh["WGS"] * sh["MW"], sh["TN"], WARP_GROUP * sh["WGS"]
        if flush_rows is None:
            flush_rows = FLUSH_ROWS_3X if GRAM_MODES[mode] == 2 else FLUSH_ROWS
        self.flush = max(1, -(-int(flush_rows) // sh["KC"])) * sh["KC"]
        device = queue.device
        local = gram_local_bytes(sh, mode)
        if not emulate and local > LOCAL_LIMIT:
            raise ValueError(f"shape {sh} in {mode} needs {local:,} bytes of local memory, over "
                             f"{LOCAL_LIMIT:,}")
        # emulated, a device that gives fewer work-items lets each play several
        self.lanes = launch.largest(device, self.threads, lambda size: local) if emulate else self.threads
        launch.check(device, self.lanes, local)
        defines = {**sh, "MODE": GRAM_MODES[mode], "FLUSH": self.flush, "NV_PTX": int(not emulate),
                   "LANES": self.lanes, "TW": launch.largest(device, 256),
                   "TJ": TRANSPOSE_TILE[1], "TK": TRANSPOSE_TILE[0]}
        self.clocks = bool(clocks)
        path = ("device/nv_clock.cl", GRAM_PATH) if clocks else GRAM_PATH
        if clocks:
            defines["CLOCKS"] = 1
        prog = build(ctx, path, defines)
        if emulate:     # a kernel may allow fewer work-items than its device (llvmpipe: 32)
            fit = {"LANES": launch.largest(device, self.lanes, lambda size: local,
                                           kern=cl.Kernel(prog, "wgmma_gram")),
                   "TW": launch.largest(device, defines["TW"], kern=cl.Kernel(prog, "tf32_transpose"))}
            if fit != {k: defines[k] for k in fit}:
                defines.update(fit)
                self.lanes = fit["LANES"]
                prog = build(ctx, path, defines)
        self.ptx = ""
        if not emulate:
            self.ptx = rewrite(prog.binaries[0].decode("utf-8", "replace"), sync, sh.get("REGS"))
            prog = cl.Program(ctx, [device], [self.ptx.encode() + b"\x00"]).build(devices=[device])
        self.transpose, self.gram = cl.Kernel(prog, "tf32_transpose"), cl.Kernel(prog, "wgmma_gram")
        self.transpose_size = defines["TW"]
        launch.check(device, self.lanes, local, kern=self.gram)
        self._xt, self._tiles, self._zeros, self._pads, self._stamps = {}, {}, {}, {}, None

    def tile_list(self, n):
        """(i0, j0) of each tile that holds part of C's lower triangle, a row of tiles
        after another."""
        return np.array([(i, j) for i in range(0, n, self.tm) for j in range(0, n, self.tn)
                         if j < i + self.tm], np.int32)

    def padded(self, m, n):
        """(rows, columns) the kernels run on for an m x n X: each rounded up to what the
        tiles and X' need (m to KC and the transpose's block, n to the tile's sides)."""
        tk, tj = TRANSPOSE_TILE
        rows, cols = math.lcm(tk, self.shape["KC"]), math.lcm(self.tm, self.tn, tj)
        return -(-m // rows) * rows, -(-n // cols) * cols

    def check_sizes(self, m, n):
        if (m, n) != self.padded(m, n):
            raise ValueError(f"m ({m}) and n ({n}) must be multiples of {self.padded(1, 1)} to run "
                             "without padding")

    def enqueue(self, x, m, n, c, ldx=None, ldc=None, shift=None, scale=0.0, wait_for=None):
        """C's tiles (as above) from the m x n X in buffer x into buffer c, each column j
        of X less scale * shift[j] first (shift: a buffer of n floats; None: X as it is);
        the events, X' written and C (and, where m or n is not a multiple of the tiles',
        the copies into and out of zero-padded buffers: the padding adds nothing to C, and
        what the tiles leave unwritten there reads 0)."""
        if m < 1 or n < 1:
            raise ValueError(f"X needs at least one row and one column, not {m} x {n}")
        ldx, ldc = (n if ldx is None else ldx), (n if ldc is None else ldc)
        if ldx < n or ldc < n:
            raise ValueError("strides must be at least n")
        mp, np_ = self.padded(m, n)
        if (mp, np_) == (m, n):
            return self._enqueue(x, m, n, c, ldx, ldc, shift, scale, wait_for)
        if shift is not None:
            raise ValueError(f"a shift needs m and n multiples of {self.padded(1, 1)} (the padding's "
                             "zero rows would be shifted too): centre X first, or pad it")
        mf = cl.mem_flags
        if (mp, np_) not in self._pads:
            self._pads[(mp, np_)] = (cl.Buffer(self.ctx, mf.READ_WRITE, 4 * mp * np_),
                                     cl.Buffer(self.ctx, mf.READ_WRITE, 4 * np_ * np_))
        xp, cp = self._pads[(mp, np_)]
        fill = cl.enqueue_fill_buffer(self.queue, xp, np.float32(0), 0, 4 * mp * np_, wait_for=wait_for)
        clear = cl.enqueue_fill_buffer(self.queue, cp, np.float32(0), 0, 4 * np_ * np_, wait_for=wait_for)
        into = cl.enqueue_copy(self.queue, xp, x, src_origin=(0, 0), dst_origin=(0, 0), region=(4 * n, m),
                               src_pitches=(4 * ldx,), dst_pitches=(4 * np_,), wait_for=[fill, clear])
        events = self._enqueue(xp, mp, np_, cp, np_, np_, None, 0.0, [into])
        out = cl.enqueue_copy(self.queue, c, cp, src_origin=(0, 0), dst_origin=(0, 0), region=(4 * n, n),
                              src_pitches=(4 * np_,), dst_pitches=(4 * ldc,), wait_for=events[-1:])
        return [fill, clear, into, *events, out]

    def _enqueue(self, x, m, n, c, ldx, ldc, shift, scale, wait_for):
        mf = cl.mem_flags
        if (m, n) not in self._xt:
            self._xt[(m, n)] = cl.Buffer(self.ctx, mf.READ_WRITE, 4 * m * n)
            self._tiles[n] = cl.Buffer(self.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=self.tile_list(n))
            self._zeros[n] = cl.Buffer(self.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.zeros(n, np.float32))
        xt, i32 = self._xt[(m, n)], np.int32
        if shift is None:
            shift, scale = self._zeros[n], 0.0
        tw = self.transpose_size
        grid = (n // TRANSPOSE_TILE[1] * tw, m // TRANSPOSE_TILE[0])
        first = self.transpose(self.queue, grid, (tw, 1), x, i32(ldx), shift, np.float32(scale), xt,
                               i32(m), i32(n), wait_for=wait_for)
        tiles = len(self.tile_list(n))
        stamps = []
        if self.clocks:
            if self._stamps is None or self._stamps.size < 32 * tiles:
                self._stamps = cl.Buffer(self.ctx, mf.READ_WRITE, 32 * tiles)
            self._stamped = tiles
            stamps = [self._stamps]
        second = self.gram(self.queue, (tiles * self.lanes,), (self.lanes,), xt, i32(m), i32(n),
                           self._tiles[n], c, i32(ldc), i32(1), *stamps, wait_for=[first])
        return [first, second]

    def clock(self):
        """The SM clock over the products of the last enqueue (gpubook.clock.SMClock: the
        median over work-groups of cycles over nanoseconds), built with clocks=True;
        gpubook.clock.ClockUnavailable where nothing was read (no NVIDIA inline PTX)."""
        if not self.clocks or self._stamps is None:
            raise clock.ClockUnavailable("this Gram was built without clocks=True, or has not run")
        got = np.empty((self._stamped, 4), np.uint64)
        cl.enqueue_copy(self.queue, got, self._stamps)
        return clock.from_stamps(got, "the products")

    def product(self, x):
        """C (float32) of a host matrix: the lower triangle and the diagonal tiles' upper
        parts as computed, zeros elsewhere above."""
        return xtx.product_of(self.ctx, self.queue, x, self.enqueue)
