"""Chapter 8: least squares by row-by-row QR updates (Miller's AS 274 `includ`).

The factorisation X'WX = R'DR is kept as D (d), the strictly upper part of the
unit upper-triangular R packed by rows (rbar), the rotated response (thetab)
and the residual sum of squares (sserr). This module holds the NumPy float64
versions (the algorithm row by row, and the checks against a direct
factorisation and `lstsq`) and the launches of kernels/lsq/.
"""
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from .device import check_work_group, default_work_group, require_fp64
from .kernels import build, kernel
from .timing import event_seconds, time_events

STEPS = ("1_sequential", "2_row_group")
# Columns of X whose sqrt(d) falls below TOL times the column's weighted norm
# count as linearly dependent on the columns before them (Miller's tolset/sing).
TOL = 1e-10


def packed_size(n):
    return n * (n - 1) // 2


def row_start(i, n):
    """Index in rbar of R[i, i+1]."""
    return i * (2 * n - i - 1) // 2


@dataclass
class Factor:
    d: np.ndarray
    rbar: np.ndarray
    thetab: np.ndarray
    sserr: float

    @classmethod
    def empty(cls, n):
        return cls(np.zeros(n), np.zeros(packed_size(n)), np.zeros(n), 0.0)

    def r(self):
        """R as a dense unit upper-triangular matrix."""
        n = len(self.d)
        r = np.eye(n)
        r[np.triu_indices(n, 1)] = self.rbar  # row by row, as rbar is packed
        return r

    def triangular(self):
        """(R with its diagonal, the rotated response z): the Householder form
        sqrt(D) R and sqrt(D) thetab, as step 3 keeps it."""
        root = np.sqrt(self.d)
        return root[:, None] * self.r(), root * self.thetab

    @classmethod
    def from_triangular(cls, rt, z, sserr):
        """Miller's form from an upper-triangular R (any signs) and z = Q'y."""
        n = len(z)
        diag = np.diag(rt).copy()
        safe = np.where(diag == 0.0, 1.0, diag)
        unit = np.where(diag[:, None] == 0.0, 0.0, rt / safe[:, None])
        return cls(diag**2, unit[np.triu_indices(n, 1)].copy(), np.where(diag == 0.0, 0.0, z / safe),
                   float(sserr))

    def column_norms(self):
        """sqrt of the diagonal of X'WX = R'DR, without the data."""
        return np.sqrt(np.einsum("i,ij,ij->j", self.d, self.r(), self.r()))

    def rss_nested(self):
        """Residual sums of squares of the models with the first k columns, k = 0..n."""
        tail = self.d * self.thetab**2
        return self.sserr + np.concatenate([np.cumsum(tail[::-1])[::-1], [0.0]])


def includ_reference(x, y, w=None, factor=None):
    """Miller's includ in float64, row after row (the inner loop vectorised)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    w = np.ones(len(x)) if w is None else np.asarray(w, np.float64)
    f = Factor.empty(x.shape[1]) if factor is None else factor
    for row in range(len(x)):
        include_row(f, x[row], y[row], w[row])
    return f


def include_row(f, xrow, yelem, weight, first=0):
    """One row into the factorisation; its columns before `first` are zero and
    xrow holds columns first .. n-1."""
    n = len(f.d)
    xrow = np.concatenate([np.zeros(first), xrow])
    for i in range(first, n):
        if weight == 0.0:
            break
        xi = xrow[i]
        if xi == 0.0:
            continue
        dpi = f.d[i] + weight * xi * xi
        cbar, sbar = f.d[i] / dpi, weight * xi / dpi
        weight *= cbar
        f.d[i] = dpi
        s = slice(row_start(i, n), row_start(i + 1, n))
        xk = xrow[i + 1:].copy()
        xrow[i + 1:] = xk - xi * f.rbar[s]
        f.rbar[s] = cbar * f.rbar[s] + sbar * xk
        yk = yelem
        yelem = yk - xi * f.thetab[i]
        f.thetab[i] = cbar * f.thetab[i] + sbar * yk
    f.sserr += weight * yelem * yelem


def sing(f, tol=TOL):
    """Miller's sing: every column whose sqrt(d) is at most `tol` times its
    weighted norm is linearly dependent on the columns before it. Its d,
    row of R and thetab become zero, and what that row still held (weight d)
    is included again into the rows below, so that R'DR and the residual sums
    are unchanged. Returns the dependent columns; f is changed in place."""
    n = len(f.d)
    limit = tol * f.column_norms()
    dependent = []
    for i in range(n):
        if np.sqrt(f.d[i]) > limit[i]:
            continue
        dependent.append(i)
        s = slice(row_start(i, n), row_start(i + 1, n))
        weight, xrow, yelem = f.d[i], f.rbar[s].copy(), f.thetab[i]
        f.d[i], f.rbar[s], f.thetab[i] = 0.0, 0.0, 0.0
        if weight > 0.0:
            include_row(f, xrow, yelem, weight, first=i + 1)
    return dependent


def factor_error(f, x, w=None):
    """max |R'DR - X'WX| relative to max |X'WX|."""
    x = np.asarray(x, np.float64)
    w = np.ones(len(x)) if w is None else np.asarray(w, np.float64)
    xtwx = x.T @ (w[:, None] * x)
    r = f.r()
    return float(np.max(np.abs(r.T @ (f.d[:, None] * r) - xtwx)) / np.max(np.abs(xtwx)))


def rss_lstsq(x, y, w=None):
    """Residual sum of squares of the weighted least-squares fit, by NumPy's lstsq."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    sw = np.ones(len(x)) if w is None else np.sqrt(np.asarray(w, np.float64))
    coef, *_ = np.linalg.lstsq(x * sw[:, None], y * sw, rcond=None)
    return float(np.sum((sw * (y - x @ coef)) ** 2))


def make_problem(m, n, seed=8, noise=0.1):
    """A regression with an intercept column, n - 1 random regressors, a few of
    which matter, and Gaussian noise."""
    rng = np.random.default_rng(seed)
    x = np.column_stack([np.ones(m), rng.standard_normal((m, n - 1))])
    beta = np.zeros(n)
    beta[:min(n, 6)] = [1.0, 2.0, -1.5, 1.0, 0.5, -0.5][:min(n, 6)]
    return x, x @ beta + noise * rng.standard_normal(m)


def checked_rows(x, y, w, n):
    """Rows of n values, their responses and weights as float64, or a clear
    error for a wrong shape, non-finite data or a negative weight."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if x.ndim != 2 or x.shape[1] != n:
        raise ValueError(f"expected rows of {n} values, got shape {x.shape}")
    if not np.all(np.isfinite(x)) or not np.all(np.isfinite(y)):
        raise ValueError("the data contain NaN or infinite values")
    w = np.ones(len(x)) if w is None else np.asarray(w, np.float64)
    if np.any(w < 0):
        raise ValueError("weights must not be negative")
    return x, y, w


class Includ:
    """Rows into the factorisation on the device, with one of STEPS."""

    def __init__(self, ctx, queue, n, step, wg=None):
        device = queue.device
        require_fp64(device)
        if step not in STEPS:
            raise ValueError(f"unknown step {step!r}; use one of {', '.join(STEPS)}")
        self.ctx, self.queue, self.n, self.step = ctx, queue, n, step
        if step == "2_row_group":
            self.wg = default_work_group(device, 1024) if wg is None else int(wg)
            if 8 * n > device.local_mem_size:
                raise ValueError(f"a row of n = {n:,} doubles needs {8 * n:,} bytes of local memory; "
                                 f"{device.name.strip()} has {device.local_mem_size:,}")
            check_work_group(device, self.wg, 8 * n)
            self.kernel = kernel(ctx, f"lsq/{step}.cl", "includ_row_group", {"WG": self.wg, "NMAX": n})
        else:
            self.wg = 1
            self.kernel = kernel(ctx, f"lsq/{step}.cl", "includ_sequential")
            self.xrow = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 8 * n)
        mf = cl.mem_flags
        self.state = [cl.Buffer(ctx, mf.READ_WRITE, 8 * max(1, s)) for s in (n, packed_size(n), n, 1)]
        self.reset()

    def reset(self):
        for buf, size in zip(self.state, (self.n, packed_size(self.n), self.n, 1)):
            cl.enqueue_fill_buffer(self.queue, buf, np.zeros(1), 0, 8 * max(1, size))

    def load(self, f):
        """Start from a factorisation in Miller's form."""
        for host, buf in zip((f.d, f.rbar, f.thetab, np.array([f.sserr])), self.state):
            if host.size:
                cl.enqueue_copy(self.queue, buf, np.ascontiguousarray(host, np.float64))
        return self

    def upload(self, x, y, w=None):
        """Device copies of the rows (float64), their responses and weights."""
        x, y, w = checked_rows(x, y, w, self.n)
        mf = cl.mem_flags
        return [cl.Buffer(self.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(a))
                for a in (x, y, w)]

    def enqueue(self, data, row0, rows):
        """Include rows row0 .. row0+rows-1 of uploaded data; returns the event."""
        x, y, w = data
        args = (x, y, w, np.int32(row0), np.int32(rows), np.int32(self.n), *self.state)
        if self.step == "1_sequential":
            return self.kernel(self.queue, (1,), (1,), *args, self.xrow)
        return self.kernel(self.queue, (self.wg,), (self.wg,), *args)

    def factor(self):
        out = [np.empty(max(1, s)) for s in (self.n, packed_size(self.n), self.n, 1)]
        for host, buf in zip(out, self.state):
            cl.enqueue_copy(self.queue, host, buf)
        return Factor(out[0], out[1][:packed_size(self.n)], out[2], float(out[3][0]))

    def run(self, x, y, w=None):
        """The factorisation of all rows, from zero."""
        self.reset()
        self.enqueue(self.upload(x, y, w), 0, len(x))
        return self.factor()


class BlockedQR:
    """Step 3: rows in blocks into R by blocked Householder reflections of
    [R; block], over all the device's compute units (kernels/lsq/3_blocked.cl).

    R is kept with its diagonal (n x (n+1), the response as column n); `factor`
    gives Miller's form. nb: panel width; block_rows: rows per block."""

    WGS, RPI, TN, QL, RL, RT, KC = 128, 1, 32, 4, 8, 64, 512

    def __init__(self, ctx, queue, n, nb=32, block_rows=32768):
        device = queue.device
        require_fp64(device)
        if n < 1 or nb < 1 or block_rows < 1:
            raise ValueError("n, nb and block_rows must be positive")
        self.ctx, self.queue, self.n, self.nb, self.ld = ctx, queue, n, int(nb), n + 1
        local = max(8 * self.WGS * self.nb, 8 * self.QL * self.nb * self.TN)
        check_work_group(device, max(self.WGS, self.TN * self.QL, self.TN * self.RL), local)
        self.block_rows = int(min(block_rows, max(1, device.max_mem_alloc_size // (8 * self.ld))))
        defines = {"NB": self.nb, "WGS": self.WGS, "RPI": self.RPI, "TN": self.TN, "QL": self.QL,
                   "RL": self.RL, "RT": self.RT, "KC": self.KC}
        prg = build(ctx, "lsq/3_blocked.cl", defines)
        self.k = {name: cl.Kernel(prg, name) for name in
                  ("house_dots", "house_step", "trail_w", "trail_finish", "trail_update", "column_ss")}
        self.step = [cl.Kernel(prg, "house_step") for _ in range(2)]  # one per partial-sums parity
        mf, ld = cl.mem_flags, self.ld
        groups = self._groups(self.block_rows)
        self.R = cl.Buffer(ctx, mf.READ_WRITE, 8 * n * ld)
        self.B = cl.Buffer(ctx, mf.READ_WRITE, 8 * self.block_rows * ld)
        self.part = [cl.Buffer(ctx, mf.READ_WRITE, 8 * groups * self.nb) for _ in range(2)]
        self.tau = cl.Buffer(ctx, mf.READ_WRITE, 8 * n)
        self.T, self.rnew = (cl.Buffer(ctx, mf.READ_WRITE, 8 * self.nb * self.nb) for _ in range(2))
        self.W = cl.Buffer(ctx, mf.READ_WRITE, 8 * self.nb * ld)
        self.Zp = cl.Buffer(ctx, mf.READ_WRITE, 8 * -(-self.block_rows // self.KC) * self.nb * ld)
        self.sspart = cl.Buffer(ctx, mf.READ_WRITE, 8 * groups)
        self.reset()

    def _groups(self, b):
        return -(-b // (self.WGS * self.RPI))

    def reset(self):
        cl.enqueue_fill_buffer(self.queue, self.R, np.zeros(1), 0, 8 * self.n * self.ld)
        self.sserr = 0.0

    def block(self, x, y, w=None):
        """The rows as step 3 takes them: sqrt(w) * [x, y], float64, row-major."""
        x, y, w = checked_rows(x, y, w, self.n)
        return np.sqrt(w)[:, None] * np.column_stack([x, y])

    def upload(self, rows):
        """Copy a block (from `block`, at most block_rows rows) to the device."""
        if len(rows) > self.block_rows:
            raise ValueError(f"a block holds at most {self.block_rows:,} rows")
        return cl.enqueue_copy(self.queue, self.B, np.ascontiguousarray(rows))

    def enqueue(self, b, trace=None):
        """Fold the b rows in the device's block buffer into R; returns the
        events of the first and the last launch. With a list as `trace`, every
        launch's (kernel name, event) goes into it."""
        q, n, nb, ld = self.queue, self.n, self.nb, self.ld
        i32 = np.int32
        groups = self._groups(b)
        events = []

        def note(name, event):
            events.append(event)
            if trace is not None:
                trace.append((name, event))

        for k0 in range(0, n, nb):
            pw = min(nb, n - k0)
            note("house_dots", self.k["house_dots"](q, (groups * self.WGS,), (self.WGS,), self.B, i32(b),
                                                    i32(ld), i32(k0), i32(pw), self.part[0]))
            for jj in range(pw):
                kern = self.step[jj % 2]
                kern.set_args(self.B, self.R, i32(b), i32(ld), i32(k0), i32(pw), i32(jj), i32(groups),
                              self.part[jj % 2], self.part[1 - jj % 2], self.tau, self.T, self.rnew)
                note("house_step", cl.enqueue_nd_range_kernel(q, kern, (groups * self.WGS,), (self.WGS,)))
            trail = ld - (k0 + pw)
            tiles = -(-trail // self.TN)
            chunks = -(-b // self.KC)
            note("trail_w", self.k["trail_w"](q, (tiles * self.TN * self.QL, chunks), (self.TN * self.QL, 1),
                                              self.B, i32(b), i32(ld), i32(k0), i32(pw), self.Zp))
            note("trail_finish", self.k["trail_finish"](q, (-(-trail // 64) * 64,), (64,), self.R, i32(ld),
                                                        i32(k0), i32(pw), i32(chunks), self.Zp, self.T,
                                                        self.rnew, self.W))
            rows = -(-b // self.RT)
            note("trail_update", self.k["trail_update"](q, (tiles * self.TN, rows * self.RL), (self.TN, self.RL),
                                                        self.B, i32(b), i32(ld), i32(k0), i32(pw), self.W))
        note("column_ss", self.k["column_ss"](q, (groups * self.WGS,), (self.WGS,), self.B, i32(b), i32(ld),
                                              i32(n), self.sspart))
        return [events[0], events[-1]]

    def add(self, x, y, w=None):
        """Fold rows into R, block by block."""
        rows = self.block(x, y, w)
        for start in range(0, len(rows), self.block_rows):
            part = rows[start:start + self.block_rows]
            self.upload(part)
            self.enqueue(len(part))
            self.collect(len(part))
        return self

    def collect(self, b):
        """Add the block's residual (what its reflections left of y) to sserr."""
        out = np.empty(self._groups(b))
        cl.enqueue_copy(self.queue, out, self.sspart)
        self.sserr += float(np.sum(out))

    def triangular(self):
        out = np.empty((self.n, self.ld))
        cl.enqueue_copy(self.queue, out, self.R)
        return np.triu(out[:, :self.n]), out[:, self.n].copy()

    def factor(self):
        """Miller's form (d, rbar, thetab, sserr) of what has been folded in."""
        rt, z = self.triangular()
        return Factor.from_triangular(rt, z, self.sserr)

    def load(self, f):
        """Start from a factorisation in Miller's form."""
        rt, z = f.triangular()
        cl.enqueue_copy(self.queue, self.R, np.ascontiguousarray(np.column_stack([rt, z])))
        self.sserr = f.sserr
        return self


def includ_flops(n):
    """Floating-point operations of one row through includ, as the kernels do
    them: 5 per element of R the rotations touch (2 to update the row, 3 for
    R), and about 12 per column for d, the rotation and the response."""
    return 5 * packed_size(n) + 12 * n


def qr_flops(m, n):
    """LAPACK's count for a Householder QR of an m x n matrix."""
    return 2 * m * n * n - 2 * n**3 / 3


def time_includ(ctx, queue, step, f, x, y, wg=None, repeats=3):
    """Timing of one launch that adds the rows x, y to the factorisation f
    (reloaded before every launch, so every launch does the same work)."""
    inc = Includ(ctx, queue, len(f.d), step, wg=wg)
    data = inc.upload(x, y)

    def launch():
        inc.load(f)
        return inc.enqueue(data, 0, len(x))
    return time_events(launch, repeats=repeats, warmup=1)


def time_blocked(ctx, queue, x, y, nb, repeats=3):
    """Step 3 on all rows of x into an empty R: (Timing, device seconds per
    kernel in the last run, the BlockedQR holding the result)."""
    qr = BlockedQR(ctx, queue, x.shape[1], nb=nb, block_rows=len(x))
    pristine = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                         hostbuf=np.ascontiguousarray(qr.block(x, y)))
    trace = []

    def launch():
        cl.enqueue_copy(queue, qr.B, pristine)
        qr.reset()
        trace.clear()
        return qr.enqueue(len(x), trace)
    t = time_events(launch, repeats=repeats, warmup=1)
    qr.collect(len(x))
    by_kernel = {}
    for name, event in trace:
        by_kernel[name] = by_kernel.get(name, 0.0) + event_seconds(event)
    return t, by_kernel, qr


def cross_products(f, yty):
    """X'X = R'DR and X'y = R'D thetab from a factorisation (and y'y given)."""
    r = f.r()
    return r.T @ (f.d[:, None] * r), r.T @ (f.d * f.thetab), float(yty)


def unrank(g, k, p):
    """The k-subset of range(p) with rank g in the combinatorial number system."""
    from math import comb

    subset, c = [], p
    for i in range(k, 0, -1):
        c -= 1
        while comb(c, i) > g:
            c -= 1
        g -= comb(c, i)
        subset.append(c)
    return tuple(sorted(subset))


def subsets_numpy(xtx, xty, yty, k):
    """(RSS of every k-subset of the candidates with the intercept, the subsets),
    by batched Cholesky solves in NumPy."""
    from itertools import combinations

    p = len(xty) - 1
    subs = np.array(list(combinations(range(p), k)), dtype=np.int64).reshape(-1, k)
    cols = np.column_stack([np.zeros(len(subs), np.int64), subs + 1])
    blocks = xtx[cols[:, :, None], cols[:, None, :]]
    rhs = xty[cols]
    coef = np.linalg.solve(blocks, rhs[..., None])[..., 0]
    return yty - np.sum(coef * rhs, axis=1), subs


class SubsetSearch:
    """Step 4: the RSS of every k-subset of p candidates, one subset per work-item."""

    def __init__(self, ctx, queue, p, k, wg=128):
        from math import comb

        require_fp64(queue.device)
        if not 1 <= k <= min(p, 8):
            raise ValueError(f"subset size k = {k} must be 1 to min(p, 8) = {min(p, 8)}")
        self.ctx, self.queue, self.p, self.k, self.wg = ctx, queue, p, k, wg
        self.count = comb(p, k)
        table = np.array([[comb(c, i) for i in range(k + 1)] for c in range(p + 1)], np.uint64)
        mf = cl.mem_flags
        self.binom = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=table)
        self.rss = cl.Buffer(ctx, mf.READ_WRITE, 8 * self.count)
        self.kernel = kernel(ctx, "lsq/4_subsets.cl", "subset_rss", {"K": k, "P": p})

    def upload(self, xtx, xty):
        if xtx.shape != (self.p + 1, self.p + 1) or xty.shape != (self.p + 1,):
            raise ValueError(f"expected X'X of {self.p + 1} x {self.p + 1} and X'y of {self.p + 1}")
        mf = cl.mem_flags
        return [cl.Buffer(self.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(v, np.float64))
                for v in (xtx, xty)]

    def enqueue(self, data, yty):
        groups = -(-self.count // self.wg)
        return self.kernel(self.queue, (groups * self.wg,), (self.wg,), data[0], data[1], np.float64(yty),
                           np.uint64(self.count), self.binom, self.rss)

    def best(self, xtx, xty, yty):
        """(smallest RSS, its subset of candidate indices)."""
        self.enqueue(self.upload(xtx, xty), yty)
        out = np.empty(self.count)
        cl.enqueue_copy(self.queue, out, self.rss)
        g = int(np.argmin(out))
        return float(out[g]), unrank(g, self.k, self.p)
