"""Chapter 6, out of core: the covariance of data larger than a device-memory budget.

`Stream` sends blocks of rows through the budget: two device slots for raw
blocks, filled on a copy queue while a second queue computes on the other
slot, and S accumulated on the device. The data are shifted by their first
observation instead of their mean (unknown until every block has passed):
C = S/m - d dᵀ with d = mean - shift, which keeps the digits that the
textbook one-pass formula loses.

`TilePairs` is the lecture notes' case where S itself does not fit: C is
computed one pair of column panels at a time, each panel gathered from the
row-major host array either by the host (flatten, then a plain copy) or by
OpenCL's rectangular copies, and each tile of C scattered back (unflatten).
"""
import time

import numpy as np
import pyopencl as cl

from ...device import pinned_empty
from ...loopcap import flat, loop_cap
from ...stream import (_queues, blocks, check_features, check_host_rows, mean_offsets, stream_bytes,
                      undefined_columns)
from ...xtx import COL_PAD, ROW_PAD, SUM_ROWS, launch_centre, launch_col_sums, launch_finish, launch_tiles, round_up

MIN_PAIR_ROWS = 8 * ROW_PAD  # fewer rows per launch and launch overhead dominates


def pair_bytes(width, rows):
    """Device bytes of TilePairs with panels `width` wide and blocks of `rows` rows:
    S and C tiles, two slots of two raw panels, two padded panels, the sums."""
    return 4 * (2 * width * width + 4 * rows * width + 2 * rows * width + (SUM_ROWS + 6) * width)


def plan_pairs(budget, n):
    """(panel width, rows per block): the widest panel (the notes: x as large as
    the memory allows) that still leaves MIN_PAIR_ROWS rows per block."""
    for width in range(round_up(n, COL_PAD), 0, -COL_PAD):
        per_row = pair_bytes(width, 1) - pair_bytes(width, 0)
        rows = (budget - pair_bytes(width, 0)) // per_row // ROW_PAD * ROW_PAD
        if rows >= MIN_PAIR_ROWS:
            return width, rows
    raise ValueError(f"a device-memory budget of {budget:,} bytes cannot hold one pair of panels: "
                     f"it needs at least {pair_bytes(COL_PAD, MIN_PAIR_ROWS):,} bytes "
                     f"({COL_PAD}-column panels, {MIN_PAIR_ROWS} rows)")


class TilePairs:
    """Covariance one tile pair at a time, for when S does not fit the budget."""

    def __init__(self, ctx, device, n, budget, tile, width=None, rows=None):
        self.ctx, self.n, self.tile = ctx, check_features(n), tile
        self.width, self.rows = plan_pairs(budget, n) if width is None else (width, rows)
        if self.width % tile["TM"]:
            raise ValueError(f"panel width {self.width} is not a multiple of the tile width {tile['TM']}")
        self.bytes = pair_bytes(self.width, self.rows)
        self.copyq, self.queue = _queues(ctx, device)
        loop_cap(device)   # probed now, not in a timed run (launch_tiles asks)
        mf, f, w, r = cl.mem_flags, 4, self.width, self.rows
        self.s = cl.Buffer(ctx, mf.READ_WRITE, f * w * w)
        self.c = cl.Buffer(ctx, mf.READ_WRITE, f * w * w)
        self.raw = [[cl.Buffer(ctx, mf.READ_WRITE, f * r * w) for _ in range(2)] for _ in range(2)]
        self.xc = [cl.Buffer(ctx, mf.READ_WRITE, f * r * w) for _ in range(2)]
        self.partial = cl.Buffer(ctx, mf.READ_WRITE, f * SUM_ROWS * w)
        self.sums, *self.shifts = (cl.Buffer(ctx, mf.READ_WRITE, f * w) for _ in range(3))
        self.ds = [cl.Buffer(ctx, mf.READ_WRITE, f * w) for _ in range(2)]
        self.zeros = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.zeros(w, np.float32))
        self.staging = None

    def panels(self):
        """(first column, width) of each column panel."""
        return [(j, min(self.width, self.n - j)) for j in range(0, self.n, self.width)]

    def pairs(self):
        """Panel pairs (p1, p2), p2 <= p1; each row starts with its diagonal pair,
        whose column sums give d for the later pairs of that row."""
        count = len(self.panels())
        return [(p1, p2) for p1 in range(count) for p2 in [p1] + list(range(p1))]

    def _rect_send(self, x, panel, i0, rows, dst, wait):
        j, w = panel
        return cl.enqueue_copy(self.copyq, dst, x, buffer_origin=(0, 0), host_origin=(4 * j, i0),
                               region=(4 * w, rows), buffer_pitches=(4 * w,),
                               host_pitches=(4 * x.shape[1],), is_blocking=False, wait_for=wait)

    def run(self, x, gather="flatten"):
        """C of the host array x; gather: 'flatten' (host gather into pinned
        staging, then a plain copy) or 'rect' (rectangular copies from x)."""
        if gather not in ("flatten", "rect"):
            raise ValueError(f"gather must be 'flatten' or 'rect', not {gather!r}")
        m, n = check_host_rows(x, self.n).shape
        if gather == "flatten" and self.staging is None:
            self.staging = [pinned_empty(self.ctx, self.queue, (2 * self.rows * self.width,))
                            for _ in range(2)]
        self.host_s, shift, d = 0.0, x[0].astype(np.float32), np.zeros(n, np.float64)
        out = np.empty((n, n), np.float32)
        copies, kernels, last = [], [], [None, None]
        panels, step = self.panels(), 0
        for p1, p2 in self.pairs():
            diag, pp = p1 == p2, [panels[p1], panels[p2]]
            for q, (j, w) in enumerate(pp[:1 if diag else 2]):
                cl.enqueue_copy(self.queue, self.shifts[q], shift[j:j + w])
            for k, (i0, rows) in enumerate(blocks(m, self.rows)):
                slot, rows_p = step % 2, round_up(rows, ROW_PAD)
                wait = [last[slot]] if last[slot] is not None else None
                for q, panel in enumerate(pp[:1 if diag else 2]):
                    dst = self.raw[slot][q]
                    copy = (self._rect_send(x, panel, i0, rows, dst, wait) if gather == "rect"
                            else self._flatten_send(x, panel, i0, rows, dst, slot, q, wait))
                    self.copyq.flush()
                    copies.append(("panel", copy))
                    if diag:
                        kernels.append(("sums", launch_col_sums(self.queue, dst, self.shifts[q], self.partial,
                                                                rows, panel[1], accumulate=k > 0,
                                                                wait_for=[copy])))
                    last[slot] = launch_centre(self.queue, dst, self.shifts[q], self.xc[q], 1.0, rows,
                                               panel[1], rows_p, self.width, wait_for=[copy])
                    kernels.append(("centre", last[slot]))
                b = self.xc[0] if diag else self.xc[1]
                kernels += [("tiles", e) for e in flat(launch_tiles(
                    self.queue, self.xc[0], b, self.s, rows_p, self.width, self.width, self.width, self.tile,
                    pair=(self.width, self.width), accumulate=k > 0))]
                self.queue.flush()
                step += 1
            (j1, w1), (j2, w2) = pp
            if diag:
                d[j1:j1 + w1], _ = mean_offsets(self.queue, self.partial, self.zeros, self.sums, w1, m)
            cl.enqueue_copy(self.queue, self.ds[0], d[j1:j1 + w1].astype(np.float32))
            cl.enqueue_copy(self.queue, self.ds[1], d[j2:j2 + w2].astype(np.float32))
            kernels.append(("finish", launch_finish(self.queue, self.s, self.width, self.c, w1, w2,
                                                    self.ds[0], self.ds[1], 1.0 / m, mirror=False)))
            self._scatter(out, j1, w1, j2, w2, gather)
        self.lanes = {"copy queue": copies, "compute queue": kernels}
        return undefined_columns(out, d)

    def _flatten_send(self, x, panel, i0, rows, dst, slot, q, wait):
        j, w = panel
        host = self.staging[slot][q * self.rows * self.width:][:rows * w].reshape(rows, w)
        if wait:
            cl.wait_for_events(wait)  # the slot's previous copies have left the staging area
        t0 = time.perf_counter()
        np.copyto(host, x[i0:i0 + rows, j:j + w])  # flatten
        self.host_s += time.perf_counter() - t0
        return cl.enqueue_copy(self.copyq, dst, host, is_blocking=False)

    def _scatter(self, out, j1, w1, j2, w2, gather):
        """Bring the finished w1 x w2 tile of C back into place, and its mirror."""
        if gather == "rect":
            cl.enqueue_copy(self.queue, out, self.c, buffer_origin=(0, 0), host_origin=(4 * j2, j1),
                            region=(4 * w2, w1), buffer_pitches=(4 * w2,), host_pitches=(4 * self.n,))
            t0 = time.perf_counter()
        else:
            tile = np.empty((w1, w2), np.float32)
            cl.enqueue_copy(self.queue, tile, self.c)
            t0 = time.perf_counter()
            out[j1:j1 + w1, j2:j2 + w2] = tile  # unflatten
        if j1 != j2:
            out[j2:j2 + w2, j1:j1 + w1] = out[j1:j1 + w1, j2:j2 + w2].T
        self.host_s += time.perf_counter() - t0


REPEAT = 4  # the in-core data this many times over: the same covariance, an exact check


def repeated(ctx, queue, x, repeat=REPEAT):
    """`x` `repeat` times over, row blocks one after another, in pinned host memory."""
    big = pinned_empty(ctx, queue, (repeat * x.shape[0], x.shape[1]), x.dtype)
    for r in range(repeat):
        big[r * x.shape[0]:(r + 1) * x.shape[0]] = x
    return big


def stream_budget(scale, n):
    """The device-memory budget that step 5 streams through: 2 GiB at full scale,
    blocks of 1,024 rows at small scale."""
    return 2 * 2**30 if scale == "full" else stream_bytes(n, 1024)
