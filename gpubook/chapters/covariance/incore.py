"""Chapter 6: the covariance matrix of m observations of n features.

The four in-core steps (naive, symmetric, local-memory tiles, register tiles)
and the sweep of register-tile shapes. The problem, its reference, the padding
and the launches that chapter 10 shares live in `gpubook.xtx`; the out-of-core
paths in `outofcore` beside this module, the tensor cores in `tensor_cores`.
"""
import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from ... import launch, tiles
from ...kernels import kernel
from ...loopcap import flat, launches, one_or_all
from ...xtx import (COL_PAD, ROW_PAD, SUM_ROWS, SWEEP, launch_centre, launch_col_sums, launch_finish,
                    launch_tiles, round_up, runnable_tile)

STEPS = ("naive", "symmetric", "local_tiles", "register_tiles")
LOCAL_T = 16    # step 3's tile: T x T work-items, where the device allows them (else 8, else 4)


# What a sweep row is made of: the tile, the block per work-item, the chunk,
# the local buffers and when the loads are issued.
FIELDS = {"tile": lambda s: s[0], "block": lambda s: s[1:3], "K": lambda s: s[3],
          "buffers": lambda s: s[4], "loads": lambda s: s[5]}


def _says(field, value):
    if field == "block":
        return f"{value[0]} x {value[1]}"
    if field == "loads":
        return "a chunk ahead" if value else "when needed"
    return str(value)


def one_change_pairs(sweep=SWEEP):
    """Every pair of sweep rows that differ in one thing: (what changed, before, after).
    Before has the smaller tile, block, K or buffer count, or loads a chunk ahead."""
    pairs = []
    for i, a in enumerate(sweep):
        for b in sweep[i + 1:]:
            diff = [f for f, get in FIELDS.items() if get(a) != get(b)]
            if len(diff) != 1:
                continue
            f = diff[0]
            key = FIELDS[f]
            before, after = (a, b) if (key(a) > key(b) if f == "loads" else key(a) < key(b)) else (b, a)
            what = {"tile": "tile", "block": "block per work-item", "K": "K", "buffers": "local buffers",
                    "loads": "loads"}[f]
            pairs.append((f"{what} {_says(f, key(before))} → {_says(f, key(after))}", before, after))
    return pairs


# Pairs of sweep rows that differ in one thing: (what changed, before, after).
CHANGES = one_change_pairs()


def local_tiles_kernel(ctx, device, sides=(LOCAL_T, 8, 4)):
    """Step 3's kernel and its tile T: the first of `sides` (by default LOCAL_T, 8, 4) whose
    T x T work-group and two T x (T + 1) local tiles this device and the built kernel allow
    (the built kernel's CL_KERNEL_WORK_GROUP_SIZE may be below the device's maximum)."""
    local_bytes = lambda t: 2 * 4 * t * (t + 1)  # noqa: E731
    reasons = []
    for t in sides:
        reason = launch.why_not(device, t * t, local_bytes(t))
        if reason is None:
            k = kernel(ctx, "covariance/local_tiles.cl", "local_tiles", {"T": t})
            reason = launch.why_not(device, t * t, local_bytes(t), kern=k)
            if reason is None:
                return k, t
        reasons.append(f"T = {t}: {reason}")
    raise launch.LaunchError("step 3 runs no tile here: " + "; ".join(reasons))


def local_bound_gflops(local_gbs):
    """The GFLOP/s at which step 3 would move local_gbs of local loads: each multiply-add
    (2 flops) reads two floats (8 bytes). A rate, not a ceiling: where local_gbs is a read
    kernel's measured rate, step 3 may beat it (claims.step3_local_rate)."""
    return 2 * local_gbs / 8


def local_gbs(ctx, queue, device, scale):
    """(local-memory read rate in GB/s, where it comes from): the machine chapter's
    record for this device, else its stride-1 local-memory kernel run now."""
    from ...localmem import local_stride_curve, recorded_gbs

    rec = recorded_gbs(device)
    if rec:
        return rec, "the machine chapter's record"
    curve, _ = local_stride_curve(ctx, queue, device, scale, strides=[1], repeats=3)
    return curve[0]["rate"], "the machine chapter's stride-1 local-memory kernel, run now"


def fmas_per_local_load(kern):
    """(fma.rn.f32, ld.shared) instruction counts (fma.rn.ftz.f32 counted too) in the kernel's PTX, or None where
    the binary is not PTX (every device but NVIDIA's)."""
    from ...resources import ptx_lines

    loads = ptx_lines(kern, r"\bld\.shared\.", limit=10**6)
    if not loads:
        return None
    return len(ptx_lines(kern, r"\bfma\.rn(?:\.ftz)?\.f32\b", limit=10**6)), len(loads)


class Covariance:
    """In-core covariance of an m x n float32 array on one device."""

    def __init__(self, ctx, queue, m, n):
        if m < 2 or n < 1:
            raise ValueError(f"need at least 2 observations and 1 feature, not m={m}, n={n}")
        self.ctx, self.queue, self.device = ctx, queue, queue.device
        self.m, self.n = m, n
        self.mp, self.np_ = round_up(m, ROW_PAD), round_up(n, COL_PAD)
        need = 4 * (m * n + self.mp * self.np_ + self.np_ ** 2 + n * n + (SUM_ROWS + 4) * n)
        if need > self.device.global_mem_size:
            raise ValueError(f"m={m:,} x n={n:,} needs {need / 2**30:.1f} GiB on the device; "
                             f"{self.device.name.strip()} has {self.device.global_mem_size / 2**30:.1f} "
                             "GiB: use gpubook.outofcore")
        mf = cl.mem_flags
        self.x = cl.Buffer(ctx, mf.READ_WRITE, 4 * m * n)
        self.xc = cl.Buffer(ctx, mf.READ_WRITE, 4 * self.mp * self.np_)
        self.s = cl.Buffer(ctx, mf.READ_WRITE, 4 * self.np_ ** 2)
        self.c = cl.Buffer(ctx, mf.READ_WRITE, 4 * n * n)
        self.partial = cl.Buffer(ctx, mf.READ_WRITE, 4 * SUM_ROWS * n)
        self.sums = cl.Buffer(ctx, mf.READ_WRITE, 4 * n)
        zeros = np.zeros(n, np.float32)
        self.zeros = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=zeros)
        self.d = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=zeros)
        self.part = None   # a second S, made only where a loop cap splits steps 2a and 2b (_part)
        # step 4's tile; where none runs, steps 1-3 still do and step 4 says why not
        try:
            self.tile, self.tile_error = runnable_tile(ctx, self.device), None
        except tiles.TileError as err:
            self.tile, self.tile_error = None, err

    def upload(self, x):
        if not isinstance(x, np.ndarray) or x.shape != (self.m, self.n) or x.dtype != np.float32:
            raise ValueError(f"expected a float32 array of shape {(self.m, self.n)}, got "
                             f"{getattr(x, 'dtype', type(x).__name__)} {np.shape(x)}")
        cl.enqueue_copy(self.queue, self.x, np.ascontiguousarray(x))

    # step 1: mean and centring ------------------------------------------------
    def mean(self):
        """Column sums of X into `sums` (two passes); returns the events."""
        e1 = launch_col_sums(self.queue, self.x, self.zeros, self.partial, self.m, self.n)
        return [e1, launch_col_sums(self.queue, self.partial, self.zeros, self.sums, SUM_ROWS,
                                    self.n, rows=1)]

    def centre(self, centred=True):
        """Xc = X - mean (or X itself when centred=False), padded to mp x np."""
        return launch_centre(self.queue, self.x, self.sums if centred else self.zeros, self.xc,
                             1.0 / self.m, self.m, self.n, self.mp, self.np_)

    def mean_vector(self):
        out = np.empty(self.n, np.float32)
        cl.enqueue_copy(self.queue, out, self.sums)
        return out / np.float32(self.m)

    # steps 2-4: S = XcᵀXc, then C ---------------------------------------------
    def step_kernel(self, step, tile=None, extra=None):
        """(the built kernel of a step, the local size it runs with), for resource tables."""
        if step in ("naive", "symmetric"):
            k = kernel(self.ctx, f"covariance/{step}.cl", step)
            return k, launch.local_size(k, self.device, (16, 16))
        if step == "local_tiles":
            k, t = local_tiles_kernel(self.ctx, self.device, *([(tile,)] if isinstance(tile, int) else []))
            return k, (t, t)
        if step == "register_tiles":
            tile = tile or self._tile()
            k = tiles.launch_kernel(self.ctx, self.device, tile, np.float32, triangle=True, aligned=True,
                                    extra=extra)
            return k, (tiles.work_items(tile), 1)
        raise ValueError(f"unknown step {step!r}; use one of {', '.join(STEPS)}")

    def products(self, step, tile=None, extra=None):
        """Enqueue one step's kernel writing S; returns its event (their list where a loop
        cap split it: row_launches). tile: the register tiles' shape, or step 3's T; extra:
        more build options of the register tiles."""
        np_ = np.int32(self.np_)
        if step in ("naive", "symmetric"):
            # np_ is a multiple of COL_PAD, so of any local size: these kernels check no bounds
            k = kernel(self.ctx, f"covariance/{step}.cl", step)
            events = []
            for xc, rows, later in self.row_launches(step, 1):   # a work-item loops once a row
                events.append(launch.enqueue(self.queue, k, (self.np_, self.np_), (16, 16), xc,
                                             self._part() if later else self.s, np.int32(rows), np_))
                if later:   # these kernels only write S: a later launch's sums are added to it
                    events.append(self._add_part())
            return one_or_all(events)
        if step == "local_tiles":
            k, t = local_tiles_kernel(self.ctx, self.device, *([(tile,)] if isinstance(tile, int) else []))
            nt = self.np_ // t
            split = self.row_launches(step, (t + 1) / t)   # once a chunk of T rows, T times in it
            return one_or_all([k(self.queue, (nt * (nt + 1) // 2 * t, t), (t, t), xc, self.s, np.int32(rows),
                                 np_, np.int32(later)) for xc, rows, later in split])
        if step == "register_tiles":
            return launch_tiles(self.queue, self.xc, self.xc, self.s, self.mp, self.np_, self.np_,
                                self.np_, tile or self._tile(), extra=extra)
        raise ValueError(f"unknown step {step!r}; use one of {', '.join(STEPS)}")

    def row_launches(self, step, per_row, fixed=8):
        """(Xc's rows as a buffer, their count, whether a launch before wrote S) of each
        launch of a step whose work-items loop `per_row` times a row: all of Xc in one
        launch, but on a device that stops loops early (gpubook.loopcap) blocks of ROW_PAD
        rows at a time (sub-buffers: 64 padded rows start on a 32 KiB boundary) each within
        its cap."""
        split = launches(self.device, self.mp, per_row, fixed, step=ROW_PAD, what=f"step {step!r}",
                         unit="rows")
        if len(split) == 1:
            return [(self.xc, self.mp, False)]
        row = 4 * self.np_
        return [(self.xc.get_sub_region(row * i0, row * rows), rows, i0 > 0) for i0, rows in split]

    def _part(self):
        """A second S, for the sums of a later launch of the kernels that only write S."""
        if self.part is None:
            self.part = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, 4 * self.np_ ** 2)
        return self.part

    def _add_part(self):
        """S += the second S (PyOpenCL's own element-wise kernel); its event."""
        s, part = (cl_array.Array(self.queue, (self.np_ ** 2,), np.float32, data=b)
                   for b in (self.s, self.part))
        s += part
        return s.events[-1]

    def _tile(self):
        """Step 4's tile, or the TileError that says why none runs here."""
        if self.tile is None:
            raise tiles.TileError(str(self.tile_error))
        return self.tile

    def finish(self, d=None):
        """C = S / m - d dᵀ (d: a device buffer, zeros by default), mirrored, n x n."""
        d = self.zeros if d is None else d
        return launch_finish(self.queue, self.s, self.np_, self.c, self.n, self.n, d, d, 1.0 / self.m)

    def covariance_events(self, step, tile=None, extra=None):
        """One step from centred data to C: its kernel and the finishing kernel."""
        return flat(self.products(step, tile, extra), self.finish())

    def result(self):
        out = np.empty((self.n, self.n), np.float32)
        cl.enqueue_copy(self.queue, out, self.c)
        return out

    def run(self, x, step="register_tiles", tile=None, extra=None):
        """Upload, mean, centre, covariance: C as a NumPy array."""
        self.upload(x)
        self.mean()
        self.centre()
        self.covariance_events(step, tile, extra)
        return self.result()

    def one_pass(self, x, tile=None):
        """The textbook one-pass formula C = XᵀX/m - μμᵀ, all in float32."""
        self.upload(x)
        self.mean()
        self.centre(centred=False)
        mu = self.mean_vector()
        cl.enqueue_copy(self.queue, self.d, mu)
        self.products("register_tiles", tile)
        self.finish(self.d)
        out = self.result()
        cl.enqueue_copy(self.queue, self.d, np.zeros(self.n, np.float32))
        return out


def diag_skip_share(np_, shape, lv=4):
    """Share of step 4's multiply-adds that the diagonal skip saves: on each of the
    np_/TM diagonal tiles (of np_/TM·(np_/TM + 1)/2 launched), b(b-1)/2 of a work-item's
    b x b blocks of LV x LV (b = WM/LV) lie above the diagonal."""
    nt, b = np_ // shape["TM"], shape["WM"] // lv
    if shape["WM"] != shape["WN"] or shape["TM"] != shape["TN"]:
        return 0.0
    return nt * (b * (b - 1) / 2) / (b * b) / (nt * (nt + 1) / 2)
