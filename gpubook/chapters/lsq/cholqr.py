"""Chapter 8's step 6: CholeskyQR2 with every step on the device, float64
(kernels/lsq/7_cholesky.cl, the register tiles of gpubook.tiles, and the
small helpers of kernels/lsq/6_tsqr.cl).

R of A (m x C) from its Gram matrix, twice (Fukaya, Nakatsukasa, Yanagisawa
and Yamamoto's CholeskyQR2):

    G1 = A'A,  G1 = R1'R1,  Q1 = A R1^-1,  G2 = Q1'Q1,  G2 = R2'R2,  R = R2 R1.

The first pass alone (the normal equations) loses what rounding took from
G1; the second pass, on the nearly orthonormal Q1, repairs it. Almost all
the work is four products over all m rows or C columns, which the register
tiles run near the FMA rate; the Cholesky factorisations are blocked
(`DeviceCholesky`) and R1^-1 comes out of the first one almost for free.

CholeskyQR2 is exact enough only while A is well conditioned: the first
factor's diagonal ratio estimates cond(A), and above `limit` (1e7 by
default: squared, the Gram matrix would lose more than half of float64's
digits), or where either Cholesky factorisation meets a pivot that is not
positive, the factorisation falls back to TSQR (gpubook.chapters.tsqr).
Everything is enqueued at once; the host looks at the pivots only at the
end, and factors again by the fallback where they say so.
"""
import numpy as np
import pyopencl as cl

from ... import dmma, launch
from ...device import compute_units, require_fp64
from ...kernels import kernel
from .cholesky import (PANEL, PATH, PRODUCT_SHAPE, UPDATE_SHAPE, DeviceCholesky,  # noqa: F401 (cholqr's names)
                       diagonal_ratio)
from .products import Products
from . import inputs
from .tsqr import PATH as TSQR_PATH, TSQR, checked, checked_rows_buffer, fit_rows, rank_checked_fit

COND_LIMIT = 1e7
GRAM_SHAPE = {"TM": 64, "TN": 64, "WM": 8, "WN": 8, "K": 8, "STAGES": 2}
# Rows that one work-item adds up in one sum of a Gram product: longer sums
# lose more to rounding (their error grows about as the square root of the
# count), so the rows are split in chunks of at most this many, and the
# chunks' sums added afterwards.
SUM_ROWS = 2048
# The Gram product's tile on the FP64 tensor cores for a wide matrix (WIDE_FROM
# columns or more): 128 x 128, 2 x 4 warps (each 64 x 32), one local stage. A
# warp's block of 64 x 32 reads 3 doubles from local memory per 128 flops, against
# 4 for dmma.SHAPE's blocks of 32 x 32. On an H100 (2026-11-26, tools/sweep_dmma.py,
# 25,000 x 5,001) the Gram took 17.9 ms against 20.4 ms with dmma.SHAPE, and
# CholeskyQR2 93.2 against 98.9 ms. A narrow matrix keeps dmma.SHAPE: a few tiles of
# 128 would leave most compute units idle and pad the rest.
GRAM_WIDE = {"TM": 128, "TN": 128, "WARPS_M": 2, "WARPS_N": 4, "KC": 16, "STAGES": 1}
WIDE_FROM = 1024
# The edges of the products on the FP64 tensor cores. Where a matrix is a few
# columns wider than a multiple of the tile (the tall case's [X y] is 129 = 2 x 64
# + 1), the last row of Gram tiles, or the last column of Q1's tiles, computes a
# whole tile for those few: on 1,000,000 x 129, half of each Gram product's work
# and a third of Q1's. Those few rows (or columns) run apart in narrow tiles instead.
EDGE_ROWS = {"TM": 16, "TN": 64, "WARPS_M": 1, "WARPS_N": 2, "KC": 16}
EDGE_COLS = {"TM": 64, "TN": 8, "WARPS_M": 4, "WARPS_N": 1, "KC": 16}
# Q1 = A R1^-1 of a matrix at most Q1_WHOLE_MAX columns wide, reading A as stored:
# one tile as wide as the matrix (TN, the columns rounded up to 16), so that a
# work-group reads its rows of A once and no edge launch follows. On an H200
# (2026-11-28, tools/probe_full_width.py, 1,000,000 x 129) 128 x 144 tiles of 4 x 2
# warps took 1.68-1.71 ms against 2.17-2.20 ms for 64 x 64 tiles and the edge
# column; 64 x 144 took 2.03 ms, and 192 x 144 (6 x 2 warps) 41 ms.
Q1_WHOLE = {"TM": 128, "WARPS_M": 4, "WARPS_N": 2, "KC": 16, "STAGES": 1}
Q1_WHOLE_MAX = 144


def _round_up(n, step):
    return -(-int(n) // int(step)) * int(step)


class Factors:
    """The calls a factorisation with enqueue, settle and r gives: R of a device buffer's
    rows, or of a host array (CholeskyQR2 here, the shifted passes of shifted.py)."""

    def factor_buffer(self, buf, m, trace=None):
        """R of the m rows in buf (overwritten only where the factorisation says so)."""
        self.enqueue(buf, m, trace)
        self.settle(buf, m, trace)
        return self.r()

    def r_factor(self, a):
        a = checked(a, self.C)
        return self.factor_buffer(self.upload(a), len(a))


class CholeskyQR2(Factors):
    """R of an m x `cols` float64 matrix by CholeskyQR2 on the device, with
    TSQR where it is too ill-conditioned. band: the columns of each launch of
    the triangular products (Q1 = A R1^-1, and R2 R1 where it does not run in one
    launch: Products.upper_in_one), which skip the zero half of the triangle band
    by band. mma=True: the products over all m rows
    (the Gram matrices, Q1) and R2 R1 on the FP64 tensor cores (gpubook.dmma,
    NVIDIA only), and the Cholesky factorisations' updates too: with panels of
    PANEL blocks they are deep enough to gain there (an H100, 2026-11-26:
    97 ms of device time against 105 ms with one-block updates on the
    register tiles); the Gram products of a wide matrix in GRAM_WIDE's larger
    tiles (`gram_note` says which). panel: the blocks of one panel, overlap: L^-1
    on a second queue (DeviceCholesky). Shapes given explicitly pick their own
    kernel (Products). After each factorisation: `method`
    ("CholeskyQR2" or "TSQR"), `cond_estimate` (the first factor's diagonal
    ratio, inf when its Cholesky failed) and `reason` (why it fell back, ''
    when it did not)."""

    def __init__(self, ctx, queue, cols, limit=COND_LIMIT, gram_shape=None, product_shape=None, block=64,
                 band=512, update_shape=None, inverse_shape=None, mma=False, emulate=False, tsqr_options=None,
                 panel=PANEL, bind=True, edges=True, across=None, overlap=True):
        device = queue.device
        require_fp64(device)
        self.ctx, self.queue, self.C = ctx, queue, inputs.count("cols", cols, 1)
        self.edges = bool(edges)
        self._across = across
        self.limit = float(limit)
        self.products = Products(emulate, bind)
        self.gram_note = ""
        if gram_shape is None and mma:
            gram_shape = self._mma_gram(ctx, device)
        self.gram_shape = dict(gram_shape or GRAM_SHAPE)
        self.product_shape = dict(product_shape or (dmma.SHAPE if mma else PRODUCT_SHAPE))
        if self.gram_shape["TM"] != self.gram_shape["TN"]:
            raise ValueError("the Gram product needs square tiles (TM = TN)")
        self.products.check(ctx, device, self.gram_shape, triangle=True)
        self.products.check(ctx, device, self.product_shape)
        if self.products.upper_in_one(self.product_shape):
            self.products.check(ctx, device, self.product_shape, upper=True)
        if self.gram_edge:
            self.products.check(ctx, device, EDGE_ROWS)
        if self.edges and self.products.on_tensor_cores(self.product_shape):
            self.products.check(ctx, device, EDGE_COLS)
        self.q1_shape = self._q1_whole(ctx, device) or self._q1_wide(ctx, device) or self.product_shape
        if mma:
            update_shape, inverse_shape = update_shape or dmma.SHAPE, inverse_shape or dmma.SHAPE
        self.chol = DeviceCholesky(ctx, queue, cols, block, update_shape, inverse_shape, self.products, panel,
                                   overlap)
        self.band = _round_up(max(1, band), self.product_shape["TN"])
        self.TT = launch.square_side(device, (16, 8, 4, 2, 1), lambda t: 8 * t * (t + 1))
        defines = {"PART": 3, "C": self.C, "TT": self.TT}
        self.k = {name: kernel(ctx, TSQR_PATH, name, defines) for name in ("sum_chunks", "transpose_rows")}
        launch.check(device, self.TT ** 2, kern=self.k["transpose_rows"])
        mf, c = cl.mem_flags, self.C
        self.G1, self.G2, self.E, self.Rinv, self.R = (cl.Buffer(ctx, mf.READ_WRITE, 8 * c * c) for _ in range(5))
        self._tsqr_options = dict(tsqr_options or {})
        self._tsqr, self._m, self._fallback = None, None, None
        self.method, self.cond_estimate, self.reason = None, None, ""
        self.dependent = []

    def _mma_gram(self, ctx, device):
        """GRAM_WIDE for a wide matrix where the device builds and holds it, else
        dmma.SHAPE; `gram_note` says which and why."""
        if self.C < WIDE_FROM:
            self.gram_note = f"{dmma.label(dmma.SHAPE)}: fewer than {WIDE_FROM:,} columns"
            return dmma.SHAPE
        try:
            self.products.check(ctx, device, GRAM_WIDE, triangle=True)
        except launch.LaunchError as err:
            self.gram_note = f"{dmma.label(dmma.SHAPE)}: {dmma.label(GRAM_WIDE)} does not fit ({err})"
            return dmma.SHAPE
        self.gram_note = f"{dmma.label(GRAM_WIDE)}: {self.C:,} columns"
        return GRAM_WIDE

    def _q1_whole(self, ctx, device):
        """Q1_WHOLE, as wide as the matrix, where Q1's product reads A as stored, the
        matrix is at most Q1_WHOLE_MAX columns and the device holds the tile; else None."""
        if not (self.edges and self.reads_a_across and self.C <= Q1_WHOLE_MAX):
            return None
        shape = {**Q1_WHOLE, "TN": _round_up(self.C, 16)}
        try:
            self.products.check(ctx, device, shape)
        except launch.LaunchError:
            return None
        return shape

    def _q1_wide(self, ctx, device):
        """GRAM_WIDE for Q1 = A R1^-1 of a wide matrix on the FP64 tensor cores, read
        from A's transposed copy, where the device holds the tile; else None. On an
        H200 (2026-11-28, tools/probe_mixed_cholqr.py, 25,000 x 5,001, bands of 512)
        Q1 took 18.7 ms against 20.3 ms in dmma.SHAPE's tiles."""
        if self.C < WIDE_FROM or self.reads_a_across or not self.products.on_tensor_cores(self.product_shape):
            return None
        try:
            self.products.check(ctx, device, GRAM_WIDE)
        except launch.LaunchError:
            return None
        return GRAM_WIDE

    @property
    def gram_edge(self):
        """The last rows of the Gram matrix that EDGE_ROWS computes apart (0: none):
        on the tensor cores, where they are at most 16 past a multiple of the tile."""
        extra = self.C % self.gram_shape["TN"]
        on = self.edges and self.products.on_tensor_cores(self.gram_shape) and self.C > self.gram_shape["TN"]
        return extra if on and extra <= EDGE_ROWS["TM"] else 0

    def col_edge(self, width, shape=None):
        """The last columns of a product `width` wide in tiles of `shape` (Q1's by
        default) that EDGE_COLS computes apart."""
        shape = self.q1_shape if shape is None else shape
        tn, extra = shape["TN"], width % shape["TN"]
        on = self.edges and self.products.on_tensor_cores(shape) and width > tn
        return extra if on and extra <= EDGE_COLS["TN"] else 0

    def passes(self):
        """(count, words): the passes that `enqueue` makes over the m x C matrix and
        its Q1 (each one read or one write of all m rows), and the words that list
        them (plain text, for a glue). The banded Q1 product reads the first j1
        columns of A for its band ending at j1: a fraction of a pass, and another
        where the band's last columns run apart."""
        bands = [(j0, min(self.C, j0 + self.band)) for j0 in range(0, self.C, self.band)]
        q1_edge = any(self.col_edge(j1 - j0) for j0, j1 in bands)
        q1_reads = sum(j1 / self.C * (2 if self.col_edge(j1 - j0) else 1) for j0, j1 in bands)
        gram_reads, across = (2 if self.gram_edge else 1), self.reads_a_across
        last = "row" if self.gram_edge == 1 else f"{self.gram_edge} rows"
        twice = f" twice (its last {last} apart)" if self.gram_edge else ""
        again = " (and again for its last columns)" if q1_edge else ""
        words = [f"the first Gram product reads A{twice}"]
        if across:
            words.append(f"Q₁'s product reads A as it is stored{again} and writes Q₁")
        else:
            words += ["the transpose reads A and writes it",
                      f"Q₁'s product reads that{again} and writes Q₁"]
        words.append(f"the second Gram product reads Q₁{' twice' if self.gram_edge else ''}")
        count = 2 * gram_reads + (0 if across else 2) + q1_reads + 1
        return count, ", ".join(words[:-1]) + " and " + words[-1]

    @property
    def tsqr(self):
        if self._tsqr is None:
            self._tsqr = TSQR(self.ctx, self.queue, self.C, **self._tsqr_options)
        return self._tsqr

    def upload(self, a):
        a = checked(a, self.C)
        return cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=a)

    def _buffers(self, m):
        if self._m != m:
            mf, c = cl.mem_flags, self.C
            self.chunk, chunks = self._chunking(m)
            self.Q = cl.Buffer(self.ctx, mf.READ_WRITE, 8 * m * c)
            self.At = None if self.reads_a_across else cl.Buffer(self.ctx, mf.READ_WRITE, 8 * m * c)
            self.part = cl.Buffer(self.ctx, mf.READ_WRITE, 8 * chunks * c * c) if chunks > 1 else None
            self._m = m

    def _chunking(self, m):
        """Rows per work-group row of the Gram product: enough chunks to give
        every compute unit four work-groups, and none longer than SUM_ROWS,
        as far as the chunks' partial sums fit one buffer."""
        t = -(-(self.C - self.gram_edge) // self.gram_shape["TN"])
        tri = t * (t + 1) // 2
        kk = Products.rows_step(self.gram_shape)
        fit = max(1, int(self.queue.device.max_mem_alloc_size) // (8 * self.C * self.C))
        chunks = max(-(-4 * compute_units(self.queue.device) // tri), min(fit, -(-m // SUM_ROWS)))
        chunks = max(1, min(chunks, -(-m // kk)))
        chunk = _round_up(-(-m // chunks), kk)
        return chunk, -(-m // chunk)

    def enqueue_gram(self, buf, m, g, trace):
        """g = A'A (its lower triangle) for the m x C matrix in buf."""
        c, q = self.C, self.queue
        chunks = -(-m // self.chunk)
        out = g if chunks == 1 else self.part
        edge = self.gram_edge
        main = c - edge
        trace.append(("tiles: Gram", self.products(q, self.gram_shape, buf, 0, c, buf, 0, c, out, 0, c,
                                                  main, main, 0, m, k_chunk=self.chunk, c_stride=c * c,
                                                  triangle=True)))
        if edge:                                 # its last rows, all their columns
            trace.append(("tiles: Gram", self.products(q, EDGE_ROWS, buf, main, c, buf, 0, c, out, main * c, c,
                                                      edge, c, 0, m, k_chunk=self.chunk, c_stride=c * c)))
        if chunks > 1:
            sums = (self.part, np.int32(chunks), np.int32(c * c), np.int32(c * c), g)
            trace.append(("sum_chunks", launch.enqueue(q, self.k["sum_chunks"], (c * c,), (256,), *sums,
                                                       bound=self.products.bound)))

    def _banded(self, name, a, lda, b, out, rows, trace, **kw):
        """out[:, j0:j1] = a' b[:, j0:j1] for an upper-triangular b (C x C),
        band by band: the sum runs over rows 0..j1 of b only, and rows(j1)
        rows of out are written (the rest of the band is below R's diagonal).
        kw: more arguments of the product (a_trans)."""
        q, c = self.queue, self.C
        for j0 in range(0, c, self.band):
            j1 = min(c, j0 + self.band)
            edge = self.col_edge(j1 - j0)
            for shape, lo, hi in ((self.q1_shape, j0, j1 - edge), (EDGE_COLS, j1 - edge, j1)):
                if hi > lo:
                    trace.append((name, self.products(q, shape, a, 0, lda, b, lo, c,
                                                     out, lo, c, rows(j1), hi - lo, 0, j1, **kw)))

    @property
    def reads_a_across(self):
        """True where Q1 = A R1^-1 reads A as it is stored (the FP64 tensor-core
        kernel's a_trans), False where it reads a transposed copy of A: `across`
        where given, else True for a matrix on the tensor cores narrower than
        WIDE_FROM. On an H200 (2026-11-28, tools/probe_dmma_edges.py) reading
        across saved the tall case's 0.69 ms transpose for 0.43 ms more product
        (1,000,000 x 129), and cost 3.2 ms of product for 0.65 ms of transpose
        on 25,000 x 5,001, whose rows of 5,001 doubles start off the 32-byte
        sectors; the register tiles always read the copy."""
        if not self.products.on_tensor_cores(self.product_shape):
            return False
        return self.C < WIDE_FROM if self._across is None else bool(self._across)

    def _triangular_product(self, name, low, up, out, trace, **kw):
        """out = low' up for two upper-triangular factors held as low (R2',
        lower) and up (R1). On the FP64 tensor cores in square tiles, one launch
        of the tiles on and above the diagonal, each summing over its rows i0..j1
        only (dmma.product's upper: on an H200, 2026-11-28, 5,001 columns in
        dmma.SHAPE's tiles took 1.31 ms, 32 TFLOP/s, where the 55 launches of bands
        of 512, about 64 work-groups each, spanned 10.0 ms as plain dmma.product
        calls); else block by block:
        the band of rows [i0, i1) of column band [j0, j1) sums over rows i0..j1
        only. kw: more arguments of the product (accumulate=True adds to out)."""
        q, c = self.queue, self.C
        if self.products.upper_in_one(self.product_shape):
            trace.append((name, self.products(q, self.product_shape, low, 0, c, up, 0, c, out, 0, c, c, c, 0, c,
                                             upper=True, **kw)))
            return
        for j0 in range(0, c, self.band):
            j1 = min(c, j0 + self.band)
            for i0 in range(0, j1, self.band):
                i1 = min(j1, i0 + self.band)
                trace.append((name, self.products(q, self.product_shape, low, i0, c, up, j0, c, out,
                                                 i0 * c + j0, c, i1 - i0, j1 - j0, i0, j1, **kw)))

    def enqueue_q(self, x, m, out, trace):
        """out = x R^-1 for the m rows in x, with R^-T in E: R^-1 transposed
        into Rinv, then the banded product, which reads x as it is stored on the
        FP64 tensor cores and a transposed copy of it on the register tiles."""
        c, tt = self.C, (self.TT, self.TT)
        across = self.reads_a_across
        for src, rows, dst in ((self.E, c, self.Rinv),) + (() if across else ((x, m, self.At),)):
            trace.append(("transpose_rows", self.products.launch(
                self.queue, self.k["transpose_rows"], launch.global_size((c, rows), tt), tt, src, np.int32(rows), dst)))
        if across:
            self._banded("tiles: Q1 = A R1^-1", x, c, self.Rinv, out, lambda j1: m, trace, a_trans=True)
        else:
            self._banded("tiles: Q1 = A R1^-1", self.At, m, self.Rinv, out, lambda j1: m, trace)

    def enqueue(self, buf, m, trace=None):
        """Enqueue all of CholeskyQR2 on the m rows in buf (left as they are);
        `settle` then reads the pivots and falls back where they say so."""
        m = checked_rows_buffer(buf, m, self.C)
        trace = [] if trace is None else trace
        self._buffers(m)
        self.enqueue_gram(buf, m, self.G1, trace)
        self.chol.enqueue(self.G1, 0, self.E, trace)                 # R1 above, R1^-T in E
        self.enqueue_q(buf, m, self.Q, trace)
        self.enqueue_gram(self.Q, m, self.G2, trace)
        self.chol.enqueue(self.G2, 1, None, trace)                   # R2 above, R2' below
        self.chol.triangle(self.G2, self.E, upper=False, trace=trace)
        self.chol.triangle(self.G1, self.Rinv, upper=True, trace=trace)
        self._triangular_product("tiles: R = R2 R1", self.E, self.Rinv, self.R, trace)
        self.method = None

    def settle(self, buf, m, trace=None):
        """After `enqueue`: the method that holds R, falling back to TSQR
        (which overwrites buf) when the pivots say CholeskyQR2 cannot."""
        ok1, diag = self.chol.status(0)
        ok2, _ = self.chol.status(1)
        self.cond_estimate = diagonal_ratio(ok1, diag)
        if not ok1:
            return self._fall_back(buf, m, trace, "the Gram matrix is not numerically positive definite")
        if not self.cond_estimate <= self.limit:
            return self._fall_back(buf, m, trace, f"cond(A) is about {self.cond_estimate:.1e}, above the limit "
                                                  f"{self.limit:.0e}")
        if not ok2:
            return self._fall_back(buf, m, trace, "the second Cholesky factorisation failed")
        self.method, self.reason = "CholeskyQR2", ""
        return self.method

    def _fall_back(self, buf, m, trace, reason):
        self.method, self.reason = "TSQR", reason
        self.tsqr.enqueue(buf, m, trace)
        return self.method

    def r(self):
        """R (C x C, upper triangular) of the last settled factorisation."""
        if self.method is None:
            raise RuntimeError("nothing factored yet: call enqueue and settle (or r_factor)")
        if self.method == "TSQR":
            return self.tsqr.r()
        out = np.empty((self.C, self.C))
        cl.enqueue_copy(self.queue, out, self.R)
        return np.triu(out)

    def least_squares(self, x, y):
        """(X's triangle, Q'y, residual sum of squares) of the fit of y on x;
        columns of x that depend on earlier ones (`dependent`) get zero rows
        and the residual sum is the true minimum (tsqr.rank_checked_fit).
        Where CholeskyQR2's own R shows such columns (its pivots passed, but
        the data are rank-deficient), the fit is made again by TSQR, the path
        that keeps R'R = A'A to rounding whatever the rank."""
        a = fit_rows(x, y, self.C)
        buf = self.upload(a)
        *fit, self.dependent = rank_checked_fit(self.factor_buffer(buf, len(a)))
        if self.dependent and self.method == "CholeskyQR2":
            self._fall_back(buf, len(a), None, f"columns {self.dependent} of x depend on the others")
            *fit, self.dependent = rank_checked_fit(self.r())
        return tuple(fit)
