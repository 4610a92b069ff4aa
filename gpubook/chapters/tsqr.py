"""Chapter 8's communication-avoiding panel: TSQR and CholeskyQR2 in float64
(kernels/lsq/6_tsqr.cl).

TSQR factors a tall-skinny matrix A (m x C, C small) without a launch per
column: every work-group reduces its block of rows to a C x C triangle, then
the triangles are stacked in pairs and reduced again, a tree of launches
until one R is left (Demmel, Grigori, Hoemmen and Langou, 2012). Carry the
response as the last column and R holds the least-squares fit: R[:w, :w] is
X's triangle, R[:w, w] = Q'y and R[w, w]^2 the residual sum of squares.

CholeskyQR2 gets R from the Gram matrix A'A (a register-tiled product,
gpubook.tiles), its Cholesky factor on the host, and a second pass over
Q1 = A R1^-1 that repairs what the first lost to rounding. It is exact enough
only while A is well conditioned: the first factor's diagonal ratio estimates
cond(A), and above `limit` (1e7 by default: squared, the Gram matrix would
lose more than half of float64's digits) it falls back to TSQR, as it does
when the Cholesky factorisation fails.
"""
import numpy as np
import pyopencl as cl

from .. import launch, tiles
from ..device import require_fp64
from ..kernels import kernel

PATH = "lsq/6_tsqr.cl"
COND_LIMIT = 1e7
GRAM_SHAPE = {"TM": 64, "TN": 64, "WM": 4, "WN": 4, "K": 8, "STAGES": 2}
PRODUCT_SHAPE = {"TM": 128, "TN": 64, "WM": 8, "WN": 4, "K": 8, "STAGES": 2}


def _round_up(n, step):
    return -(-int(n) // int(step)) * int(step)


def _columns_per_row(cols, wg):
    """TX: work-items along a row (a warp's worth, at most the columns rounded up to a power of two)."""
    tx = 1
    while tx < min(32, cols, wg):
        tx *= 2
    return tx


def gram_error(r, a):
    """max |R'R - A'A| relative to max |A'A| (float64)."""
    a = np.asarray(a, np.float64)
    g = a.T @ a
    return float(np.max(np.abs(r.T @ r - g)) / np.max(np.abs(g)))


def fit_from_r(r):
    """(X's triangle, z = Q'y, residual sum of squares) from R of [X y]."""
    w = r.shape[0] - 1
    return r[:w, :w].copy(), r[:w, w].copy(), float(r[w, w] ** 2)


def checked(a, cols=None):
    """A as a C-contiguous float64 matrix, or a clear error."""
    a = np.asarray(a, np.float64)
    if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 1:
        raise ValueError(f"expected a matrix with at least one row and one column, got shape {a.shape}")
    if cols is not None and a.shape[1] != cols:
        raise ValueError(f"expected {cols} columns, got {a.shape[1]}")
    if not np.all(np.isfinite(a)):
        raise ValueError("the matrix contains NaN or infinite values")
    return np.ascontiguousarray(a)


class TSQR:
    """R of a tall-skinny float64 matrix of `cols` columns on the device.

    block_rows: rows per leaf (by default 256, at least cols); wg: the largest
    work-group wanted. A leaf's block goes into local memory where it fits,
    else it is factored in place in global memory (the input is overwritten);
    in_local=False asks for global memory wherever it would fit."""

    def __init__(self, ctx, queue, cols, block_rows=None, wg=256, in_local=None):
        device = queue.device
        require_fp64(device)
        if cols < 1:
            raise ValueError("the matrix needs at least one column")
        self.ctx, self.queue, self.C = ctx, queue, int(cols)
        self.k, self.wg, self.in_local = {}, {}, {}
        for part, name in ((1, "tsqr_leaf"), (2, "tsqr_tree")):
            self._build(device, part, name, int(wg), block_rows, in_local)
        self._capacity, self.Ra, self.Rb, self._final = 0, None, None, None

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
        (kernel name, event)."""
        if m < 1:
            raise ValueError("the matrix needs at least one row")
        q, i32, c = self.queue, np.int32, self.C
        count = self.leaves(m)
        if count > self._capacity:
            mf = cl.mem_flags
            self.Ra, self.Rb = (cl.Buffer(self.ctx, mf.READ_WRITE, 8 * count * c * c) for _ in range(2))
            self._capacity = count
        wl, wt = self.wg["tsqr_leaf"], self.wg["tsqr_tree"]
        events = [self.k["tsqr_leaf"](q, (count * wl,), (wl,), buf, i32(m), self.Ra)]
        note = [("tsqr_leaf", events[0])]
        src, dst = self.Ra, self.Rb
        while count > 1:
            groups = -(-count // 2)
            events.append(self.k["tsqr_tree"](q, (groups * wt,), (wt,), src, i32(count), dst))
            note.append(("tsqr_tree", events[-1]))
            count, src, dst = groups, dst, src
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
        """(X's triangle, Q'y, residual sum of squares) of the fit of y on x."""
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        if x.ndim != 2 or y.shape != (len(x),):
            raise ValueError(f"expected x of m rows and y of m values, got {x.shape} and {y.shape}")
        return fit_from_r(self.r_factor(np.column_stack([x, y])))

    def factor(self, x, y):
        """The fit in Miller's form (chapter 8's lsq.Factor)."""
        from .lsq import Factor

        return Factor.from_triangular(*self.least_squares(x, y))


class CholeskyQR2:
    """R by CholeskyQR2 on the device (Gram products there, Cholesky on the
    host), with TSQR where A is too ill-conditioned. After each
    factorisation: `method` ("CholeskyQR2" or "TSQR"), `cond_estimate` (the
    first factor's diagonal ratio, inf when its Cholesky failed) and `reason`
    (why it fell back, '' when it did not)."""

    def __init__(self, ctx, queue, cols, limit=COND_LIMIT, gram_shape=None, product_shape=None,
                 tsqr_options=None):
        device = queue.device
        require_fp64(device)
        if cols < 1:
            raise ValueError("the matrix needs at least one column")
        self.ctx, self.queue, self.C, self.limit = ctx, queue, int(cols), float(limit)
        self.gram_shape = dict(gram_shape or GRAM_SHAPE)
        self.product_shape = dict(product_shape or PRODUCT_SHAPE)
        if self.gram_shape["TM"] != self.gram_shape["TN"]:
            raise ValueError("the Gram product needs square tiles (TM = TN)")
        # both shapes must run here: a clear error now, not at the first launch
        tiles.launch_kernel(ctx, device, self.gram_shape, np.float64, triangle=True)
        tiles.launch_kernel(ctx, device, self.product_shape, np.float64)
        self.TT = launch.square_side(device, (16, 8, 4, 2, 1), lambda t: 8 * t * (t + 1))
        defines = {"PART": 3, "C": self.C, "TT": self.TT}
        self.k = {name: kernel(ctx, PATH, name, defines) for name in ("sum_chunks", "transpose_rows")}
        launch.check(device, self.TT ** 2, kern=self.k["transpose_rows"])
        self._tsqr_options = dict(tsqr_options or {})
        self._tsqr = None
        self.method, self.cond_estimate, self.reason = None, None, ""

    @property
    def tsqr(self):
        if self._tsqr is None:
            self._tsqr = TSQR(self.ctx, self.queue, self.C, **self._tsqr_options)
        return self._tsqr

    def upload(self, a):
        a = checked(a, self.C)
        return cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=a)

    def _buffers(self, m):
        if getattr(self, "_m", None) != m:
            mf, c = cl.mem_flags, self.C
            self.chunk, chunks = self._chunking(m)
            self.At, self.Q = (cl.Buffer(self.ctx, mf.READ_WRITE, 8 * m * c) for _ in range(2))
            self.part = cl.Buffer(self.ctx, mf.READ_WRITE, 8 * chunks * c * c)
            self.G, self.Rinv = (cl.Buffer(self.ctx, mf.READ_WRITE, 8 * c * c) for _ in range(2))
            self._m = m

    def _chunking(self, m):
        """Rows per work-group row of the Gram product: enough chunks to give
        every compute unit four work-groups."""
        from ..device import compute_units

        t = -(-self.C // self.gram_shape["TN"])
        tri = t * (t + 1) // 2
        kk = self.gram_shape["K"]
        chunks = max(1, min(-(-4 * compute_units(self.queue.device) // tri), -(-m // kk)))
        chunk = _round_up(-(-m // chunks), kk)
        return chunk, -(-m // chunk)

    def enqueue_gram(self, buf, m, trace):
        """G = A'A (its lower triangle) for the m x C matrix in buf."""
        c, q = self.C, self.queue
        chunks = -(-m // self.chunk)
        out = self.G if chunks == 1 else self.part
        ev = tiles.launch(q, self.gram_shape, np.float64, buf, 0, c, buf, 0, c, out, 0, c, c, c, 0, m,
                          k_chunk=self.chunk, c_stride=c * c, triangle=True)
        trace.append(("tiles: A'A", ev))
        if chunks > 1:
            ev = launch.enqueue(q, self.k["sum_chunks"], (c * c,), (256,), self.part, np.int32(chunks),
                                np.int32(c * c), np.int32(c * c), self.G)
            trace.append(("sum_chunks", ev))
        g = np.empty((c, c))
        cl.enqueue_copy(q, g, self.G)
        low = np.tril(g)
        return low + np.tril(low, -1).T

    def _cholesky(self, g):
        """The upper Cholesky factor of g, or None when it does not exist."""
        try:
            r = np.linalg.cholesky(g).T
        except np.linalg.LinAlgError:
            return None
        return r if np.all(np.isfinite(r)) else None

    def factor_buffer(self, buf, m, trace=None):
        """R of the m rows in buf (overwritten only when it falls back to TSQR)."""
        if m < 1:
            raise ValueError("the matrix needs at least one row")
        trace = [] if trace is None else trace
        self._buffers(m)
        r1 = self._cholesky(self.enqueue_gram(buf, m, trace))
        if r1 is None:
            return self._fall_back(buf, m, trace, np.inf, "the Gram matrix is not numerically positive definite")
        d = np.abs(np.diag(r1))
        self.cond_estimate = float(d.max() / d.min()) if d.min() > 0 else np.inf
        if not self.cond_estimate <= self.limit:
            return self._fall_back(buf, m, trace, self.cond_estimate,
                                   f"cond(A) is about {self.cond_estimate:.1e}, above the limit {self.limit:.0e}")
        # Q1 = A R1^-1: A' (rows k = columns of A), then the product with R1^-1
        rinv = np.linalg.inv(r1)
        cl.enqueue_copy(self.queue, self.Rinv, np.ascontiguousarray(rinv))
        tt = (self.TT, self.TT)
        trace.append(("transpose_rows", self.k["transpose_rows"](
            self.queue, launch.global_size((self.C, m), tt), tt, buf, np.int32(m), self.At)))
        c = self.C
        trace.append(("tiles: A R1^-1", tiles.launch(self.queue, self.product_shape, np.float64, self.At, 0, m,
                                                     self.Rinv, 0, c, self.Q, 0, c, m, c, 0, c)))
        r2 = self._cholesky(self.enqueue_gram(self.Q, m, trace))
        if r2 is None:
            return self._fall_back(buf, m, trace, self.cond_estimate, "the second Cholesky factorisation failed")
        self.method, self.reason = "CholeskyQR2", ""
        return r2 @ r1

    def _fall_back(self, buf, m, trace, estimate, reason):
        self.method, self.cond_estimate, self.reason = "TSQR", estimate, reason
        self.tsqr.enqueue(buf, m, trace)
        return self.tsqr.r()

    def r_factor(self, a):
        a = checked(a, self.C)
        return self.factor_buffer(self.upload(a), len(a))

    def least_squares(self, x, y):
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        if x.ndim != 2 or y.shape != (len(x),):
            raise ValueError(f"expected x of m rows and y of m values, got {x.shape} and {y.shape}")
        return fit_from_r(self.r_factor(np.column_stack([x, y])))
