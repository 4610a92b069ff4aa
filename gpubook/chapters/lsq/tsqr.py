"""Chapter 8's communication-avoiding QR of a tall-skinny matrix: TSQR in
float64 (kernels/lsq/6_tsqr.cl).

TSQR factors a tall-skinny matrix A (m x C, C small) without a launch per
column: every work-group reduces its block of rows to a C x C triangle, then
the triangles are stacked in pairs and reduced again, a tree of launches
until one R is left (Demmel, Grigori, Hoemmen and Langou, 2012). Carry the
response as the last column and R holds the least-squares fit: R[:w, :w] is
X's triangle, R[:w, w] = Q'y and R[w, w]^2 the residual sum of squares.

CholeskyQR2 (gpubook.chapters.cholqr) uses this file's two small helpers
and falls back to TSQR where the matrix is too ill-conditioned for it.
"""
import numpy as np
import pyopencl as cl

from ... import launch
from ...device import require_fp64
from ...kernels import kernel
from ...orthogonality import gram_error  # noqa: F401 - the check that every method's R passes
from . import inputs

PATH = "lsq/6_tsqr.cl"


def _round_up(n, step):
    return -(-int(n) // int(step)) * int(step)


def _columns_per_row(cols, wg):
    """TX: work-items along a row (a warp's worth, at most the columns rounded up to a power of two)."""
    tx = 1
    while tx < min(32, cols, wg):
        tx *= 2
    return tx


def fit_from_r(r):
    """(X's triangle, z = Q'y, residual sum of squares) from R of [X y]."""
    w = r.shape[0] - 1
    return r[:w, :w].copy(), r[:w, w].copy(), float(r[w, w] ** 2)


def rank_checked_fit(r):
    """(X's triangle, z = Q'y, residual sum of squares, dependent columns) from
    R of [X y], with Miller's `sing` (gpubook.chapters.lsq.rows) run on it as
    Includ and BlockedQR run it. A column of X that depends on the columns
    before it leaves only rounding (or an exact zero) on R's diagonal, and a
    reflection built from that rounding takes a random share of y away: the
    residual comes out below the true minimum and X's triangle is nearly
    singular. Such columns get a zero row (d = 0) and their share goes back
    into the residual, which is then lstsq's (an exact zero pivot's row is
    first folded into the rows below: Factor.from_triangular). Where no
    column depends on the others, R is used as it is."""
    from .rows import Factor, sing

    rt, z, rss = fit_from_r(r)
    f = Factor.from_triangular(rt, z, rss)
    dependent = sing(f)
    if dependent:
        rt, z = f.triangular()
        rss = float(f.sserr)
    return rt, z, rss, dependent


def checked(a, cols=None, name="a"):
    """A as a C-contiguous float64 matrix of at least one row (and `cols`
    columns where given), or a clear error."""
    return inputs.matrix(name, a, cols=cols, min_rows=1)


def fit_rows(x, y, cols):
    """[x y] for a factorisation of `cols` columns (x of cols - 1), or a clear error."""
    x = inputs.matrix("x", x, cols=cols - 1, min_rows=1, min_cols=0)
    return np.column_stack([x, inputs.vector("y", y, len(x))])


def checked_rows_buffer(buf, m, cols):
    """m (at least 1) rows of `cols` float64 values in buf, or a clear error."""
    m = inputs.count("m", m, 1)
    inputs.buffer("buf", buf, 8 * m * cols)
    return m


class TSQR:
    """R of a tall-skinny float64 matrix of `cols` columns on the device.

    block_rows: rows per leaf (by default 256, at least cols); wg: the largest
    work-group wanted. A leaf's block goes into local memory where it fits,
    else it is factored in place in global memory (the input is overwritten);
    in_local=False asks for global memory wherever it would fit."""

    def __init__(self, ctx, queue, cols, block_rows=None, wg=256, in_local=None):
        device = queue.device
        require_fp64(device)
        self.ctx, self.queue, self.C = ctx, queue, inputs.count("cols", cols, 1)
        if block_rows is not None:
            inputs.count("block_rows", block_rows, 1)
        self.k, self.wg, self.in_local = {}, {}, {}
        for part, name in ((1, "tsqr_leaf"), (2, "tsqr_tree")):
            self._build(device, part, name, self._wanted(device, int(wg)), block_rows, in_local)
        self._capacity, self.Ra, self.Rb, self._final = 0, None, None, None
        self.dependent = []

    def _wanted(self, device, wg):
        """The work-group asked for. On a CPU, at most 8 rows of work-items (TY): Debian's
        PoCL 3.1 corrupts the host's heap running tsqr_tree with more (seen with 16 and
        32), and a CPU runs a work-group as one thread's loop, so a smaller one costs
        little there. Likely the early return's miscompile that 6_tsqr.cl describes (each
        pair then wrote WG - C*C values past its triangle: 79 and 207 at C = 7, past the
        buffer's end at the last one), gone with it on PoCL 3.0; kept until Debian's 3.1
        is checked."""
        if device.type & cl.device_type.CPU:
            wg = min(wg, 8 * _columns_per_row(self.C, wg))
        return wg

    def _build(self, device, part, name, want, block_rows, allow_local):
        c = self.C
        part_bytes = lambda w: 8 * c * (w // _columns_per_row(c, w) + 1)  # noqa: E731
        wg = launch.largest(device, want, part_bytes)
        while True:
            tx = _columns_per_row(c, wg)
            if part == 1:
                self.BR = _round_up(block_rows or max(256, c), wg // tx)
                block = 8 * self.BR * c
            else:
                block = 16 * c * c
            in_local = int(allow_local is not False and launch.why_not(device, wg, part_bytes(wg) + block) is None)
            defines = {"PART": part, "C": c, "WG": wg, "TX": tx, "BR": getattr(self, "BR", 1),
                       "IN_LOCAL": in_local}
            if device.type & cl.device_type.CPU:
                # The blocks are factored in place; with the pointers `restrict`, Debian's PoCL 3.1
                # returned a wrong R now and then (about 1 run in 50 on a loaded 2-core host, in
                # global memory; 0 in 800 without). -Drestrict= drops the qualifier there.
                # Perhaps the same miscompile seen through timing (a wrong R now and then);
                # kept until checked on Debian's 3.1.
                defines["restrict"] = ""
            kern = kernel(self.ctx, PATH, name, defines)
            if launch.why_not(device, wg, kern=kern) is None:
                break
            if wg == 1:
                launch.check(device, wg, kern=kern)
            wg //= 2
        self.k[name], self.wg[name], self.in_local[name] = kern, wg, bool(in_local)

    def leaves(self, m):
        return -(-int(m) // self.BR)

    def upload(self, a):
        """A device copy of A (m x cols, float64, row-major)."""
        a = checked(a, self.C)
        return cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=a)

    def enqueue(self, buf, m, trace=None):
        """R of the m rows in `buf` (which may be overwritten); returns the
        events of the first and last launch, and with a list as `trace`, every
        (kernel name, event) (the copies of unpaired triangles between launches
        are no kernels and are not listed)."""
        m = checked_rows_buffer(buf, m, self.C)
        q, i32, c = self.queue, np.int32, self.C
        count = self.leaves(m)
        if count > self._capacity:
            mf = cl.mem_flags
            self.Ra, self.Rb = (cl.Buffer(self.ctx, mf.READ_WRITE, 8 * count * c * c) for _ in range(2))
            self._capacity = count
        wl, wt, size = self.wg["tsqr_leaf"], self.wg["tsqr_tree"], 8 * c * c
        events = [self.k["tsqr_leaf"](q, (count * wl,), (wl,), buf, i32(m), self.Ra)]
        note = [("tsqr_leaf", events[0])]
        src, dst = self.Ra, self.Rb
        while count > 1:
            pairs = count // 2
            events.append(self.k["tsqr_tree"](q, (pairs * wt,), (wt,), src, dst))
            note.append(("tsqr_tree", events[-1]))
            if count % 2:
                # The last triangle has no partner: copied here, not by a work-group that
                # returns early in the kernel (which PoCL 3.0 miscompiled: 6_tsqr.cl says how).
                # In order after the launch, which reads only the pairs' triangles of src.
                cl.enqueue_copy(q, dst, src, byte_count=size, src_offset=(count - 1) * size,
                                dst_offset=pairs * size)
            count, src, dst = pairs + count % 2, dst, src
        self._final = src
        if trace is not None:
            trace.extend(note)
        return [events[0], events[-1]]

    def r(self):
        """The last enqueued factorisation's R (cols x cols, upper triangular)."""
        out = np.empty((self.C, self.C))
        cl.enqueue_copy(self.queue, out, self._final)
        return np.triu(out)

    def r_factor(self, a):
        a = checked(a, self.C)
        self.enqueue(self.upload(a), len(a))
        return self.r()

    def least_squares(self, x, y):
        """(X's triangle, Q'y, residual sum of squares) of the fit of y on x;
        columns of x that depend on earlier ones (`dependent`) get zero rows
        and the residual sum is the true minimum (rank_checked_fit)."""
        *fit, self.dependent = rank_checked_fit(self.r_factor(fit_rows(x, y, self.C)))
        return tuple(fit)

    def factor(self, x, y):
        """The fit in Miller's form (chapter 8's lsq.Factor)."""
        from .rows import Factor

        return Factor.from_triangular(*self.least_squares(x, y))
