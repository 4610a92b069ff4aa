"""Streaming rows through a device in blocks: the centred XᵀX of gpubook.xtx over
more rows than the device holds. Chapter 6 builds it; chapter 10 hands its blocks
to several devices.
"""
import time

import numpy as np
import pyopencl as cl

from .device import pinned_empty
from .loopcap import flat, loop_cap
from .timing import time_events
from .xtx import COL_PAD, ROW_PAD, SUM_ROWS, launch_centre, launch_col_sums, launch_finish, launch_tiles, round_up


def mean_offsets(queue, partial, zeros, sums, width, m):
    """d = mean - shift for `width` columns, from the accumulated partial sums of
    shifted data: the second column-sums pass, read back, divided by m (float64).
    Returns (d, the event of the pass)."""
    event = launch_col_sums(queue, partial, zeros, sums, SUM_ROWS, width, rows=1)
    out = np.empty(width, np.float32)
    cl.enqueue_copy(queue, out, sums)
    return out.astype(np.float64) / m, event


def undefined_columns(c, d):
    """C with NaN in the rows and columns of features whose mean is not finite (a NaN
    or an Inf among their values), as NumPy's two-pass covariance has them: the
    shifted formula C = S/m - d dᵀ would give ±Inf there for some pairs. d: each
    column's mean offset (or sum). Returns c, changed in place."""
    bad = ~np.isfinite(np.asarray(d, np.float64))
    if bad.any():
        c[bad, :] = np.nan
        c[:, bad] = np.nan
    return c


def stream_bytes(n, rows):
    """Device bytes of a Stream with blocks of `rows` rows: S, C, two raw slots,
    one padded block, and the column sums."""
    np_ = round_up(n, COL_PAD)
    return 4 * (np_ * np_ + n * n + 2 * rows * n + rows * np_ + (SUM_ROWS + 4) * n)


def plan_rows(budget, n, m=None):
    """The most rows per block (a multiple of ROW_PAD) that fit the budget."""
    per_row = stream_bytes(n, 1) - stream_bytes(n, 0)
    rows = (budget - stream_bytes(n, 0)) // per_row // ROW_PAD * ROW_PAD
    if rows < ROW_PAD:
        raise ValueError(f"a device-memory budget of {budget:,} bytes cannot hold one block: with n = {n:,} "
                         f"features streaming needs at least {stream_bytes(n, ROW_PAD):,} bytes "
                         f"(S and C, {ROW_PAD} rows); for a larger n see TilePairs")
    return rows if m is None else min(rows, round_up(m, ROW_PAD))


def blocks(m, rows):
    """(first row, row count) of each block."""
    return [(i, min(rows, m - i)) for i in range(0, m, rows)]


def check_features(n, name="n"):
    """n, the columns of the data, as an int of at least 1, or a clear error naming it."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{name} must be an integer count of features (columns), not {n!r}")
    if n < 1:
        raise ValueError(f"{name} must be at least 1 feature (column), not {n}")
    return int(n)


def check_host_rows(x, n, name="x", least=1):
    """x as it is, after checking that it is a C-contiguous m x n float32 NumPy
    array of at least `least` rows (the device reads its bytes as they lie);
    otherwise a TypeError or ValueError naming `name` and what was expected."""
    if not isinstance(x, np.ndarray) or x.dtype != np.float32:
        raise TypeError(f"{name}: expected a NumPy array of float32, got "
                        f"{getattr(x, 'dtype', type(x).__name__)} (convert with x.astype(np.float32))")
    if x.ndim != 2 or x.shape[1] != n:
        raise ValueError(f"{name}: expected rows of {n} features (m x {n}), got shape {x.shape}")
    if x.shape[0] < least:
        raise ValueError(f"{name}: expected at least {least} row{'s' if least > 1 else ''}, got {x.shape[0]}")
    if not x.flags.c_contiguous:
        raise ValueError(f"{name}: expected a C-contiguous array (rows one after the other), not strides "
                         f"{x.strides}: pass np.ascontiguousarray({name})")
    return x


def _queues(ctx, device):
    prof = cl.command_queue_properties.PROFILING_ENABLE
    return cl.CommandQueue(ctx, device, properties=prof), cl.CommandQueue(ctx, device, properties=prof)


class Stream:
    """Covariance of an m x n host array through a device-memory budget."""

    def __init__(self, ctx, device, n, budget, tile, m=None):
        n = check_features(n)
        self.ctx, self.n, self.tile = ctx, n, tile
        self.rows = plan_rows(budget, n, m)
        self.np_ = round_up(n, COL_PAD)
        self.bytes = stream_bytes(n, self.rows)
        self.copyq, self.queue = _queues(ctx, device)
        loop_cap(device)   # probed now, not in a timed run (launch_tiles asks)
        mf, f = cl.mem_flags, 4
        self.s = cl.Buffer(ctx, mf.READ_WRITE, f * self.np_ ** 2)
        self.c = cl.Buffer(ctx, mf.READ_WRITE, f * n * n)
        self.raw = [cl.Buffer(ctx, mf.READ_WRITE, f * self.rows * n) for _ in range(2)]
        self.xc = cl.Buffer(ctx, mf.READ_WRITE, f * self.rows * self.np_)
        self.partial = cl.Buffer(ctx, mf.READ_WRITE, f * SUM_ROWS * n)
        self.sums, self.shift, self.d = (cl.Buffer(ctx, mf.READ_WRITE, f * n) for _ in range(3))
        self.zeros = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.zeros(n, np.float32))
        self.s_host = None

    def begin(self, shift):
        """Start a sum over blocks of rows shifted by `shift` (n floats)."""
        cl.enqueue_copy(self.queue, self.shift, np.ascontiguousarray(shift, np.float32))
        self.count, self.free, self.copies, self.kernels = 0, [None, None], [], []

    def wait_slot(self):
        """Block until the slot the next block will use is free again: the
        kernels that last read it have finished (and so has its copy)."""
        event = self.free[self.count % 2]
        if event is not None:
            event.wait()

    def add(self, rows_x):
        """Copy a block of rows (a C-contiguous host array, at most `rows` rows)
        into the next slot and add it to the sums; returns the copy's event."""
        rows, n = check_host_rows(rows_x, self.n, "rows_x").shape
        if rows > self.rows:
            raise ValueError(f"a block of {rows_x.shape} does not fit slots of {self.rows} x {self.n}")
        slot, k = self.count % 2, self.count
        wait = [self.free[slot]] if self.free[slot] is not None else None
        copy = cl.enqueue_copy(self.copyq, self.raw[slot], rows_x, is_blocking=False, wait_for=wait)
        self.copyq.flush()
        events = self._compute(slot, rows, k > 0, [copy])
        self.free[slot] = events[1]  # the centring is the slot's last reader
        self.queue.flush()
        self.copies.append(("block", copy))
        self.kernels += list(zip(("sums", "centre") + ("tiles",) * (len(events) - 2), events))
        self.count += 1
        return copy

    def _compute(self, slot, rows, accumulate, wait_for=None):
        """The kernels of one block in a slot: column sums, centring, products."""
        e_sum = launch_col_sums(self.queue, self.raw[slot], self.shift, self.partial, rows, self.n,
                                accumulate=accumulate, wait_for=wait_for)
        rows_p = round_up(rows, ROW_PAD)
        e_centre = launch_centre(self.queue, self.raw[slot], self.shift, self.xc, 1.0, rows, self.n,
                                 rows_p, self.np_)
        return flat(e_sum, e_centre, launch_tiles(self.queue, self.xc, self.xc, self.s, rows_p, self.np_,
                                                  self.np_, self.np_, self.tile, accumulate=accumulate))

    def block_seconds(self, repeats=5):
        """Device time of one full block's kernels, the block already on the
        device: what a block costs when no copy has to be waited for."""
        return time_events(lambda: self._compute(0, self.rows, True), repeats=repeats).median

    def totals(self, copy=False):
        """The sums so far, read back: (S = Σ (v - shift)(v - shift)ᵀ, n x n
        float32, mirrored from its lower triangle on the device, and the column
        sums Σ (v - shift) in float64). S is read into page-locked memory that the
        next call reuses: ask for a copy to keep it longer. Zeros when no block was
        added."""
        n = self.n
        if self.count == 0:
            return np.zeros((n, n), np.float32), np.zeros(n)
        if self.s_host is None:  # pinned on first use: run() does not need it
            self.s_host = pinned_empty(self.ctx, self.queue, (n, n))
        partial = np.empty((SUM_ROWS, n), np.float32)
        cl.enqueue_copy(self.queue, partial, self.partial)
        self.kernels.append(("mirror", launch_finish(self.queue, self.s, self.np_, self.c, n, n,
                                                     self.zeros, self.zeros, 1.0)))
        self.readback = cl.enqueue_copy(self.queue, self.s_host, self.c)  # blocking
        self.readback_ns = time.perf_counter_ns()  # the host's clock just after the read-back ended
        return (self.s_host.copy() if copy else self.s_host), partial.sum(axis=0, dtype=np.float64)

    def run(self, x):
        """C of the host array x (pinned memory for full-speed copies). The
        events of the run are in `self.lanes` afterwards, for a timeline."""
        m, n = check_host_rows(x, self.n).shape
        self.begin(x[0])
        for i0, rows in blocks(m, self.rows):
            self.add(x[i0:i0 + rows])
        d, e_sums = mean_offsets(self.queue, self.partial, self.zeros, self.sums, n, m)
        self.kernels.append(("sums", e_sums))
        cl.enqueue_copy(self.queue, self.d, d.astype(np.float32))
        self.kernels.append(("finish", launch_finish(self.queue, self.s, self.np_, self.c, n, n,
                                                     self.d, self.d, 1.0 / m)))
        out = np.empty((n, n), np.float32)
        cl.enqueue_copy(self.queue, out, self.c)
        self.lanes = {"copy queue": self.copies, "compute queue": self.kernels}
        return undefined_columns(out, d)
