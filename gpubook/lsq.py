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
from .kernels import kernel

STEPS = ("1_sequential", "2_row_group")


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

    def rss_nested(self):
        """Residual sums of squares of the models with the first k columns, k = 0..n."""
        tail = self.d * self.thetab**2
        return self.sserr + np.concatenate([np.cumsum(tail[::-1])[::-1], [0.0]])


def includ_reference(x, y, w=None, factor=None):
    """Miller's includ in float64, row after row (the inner loop vectorised)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    m, n = x.shape
    w = np.ones(m) if w is None else np.asarray(w, np.float64)
    f = Factor.empty(n) if factor is None else factor
    for row in range(m):
        xrow, weight, yelem = x[row].copy(), w[row], y[row]
        for i in range(n):
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
    return f


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

    def upload(self, x, y, w=None):
        """Device copies of the rows (float64), their responses and weights."""
        x = np.ascontiguousarray(x, np.float64)
        if x.ndim != 2 or x.shape[1] != self.n:
            raise ValueError(f"expected rows of {self.n} values, got shape {x.shape}")
        if not np.all(np.isfinite(x)) or not np.all(np.isfinite(y)):
            raise ValueError("the data contain NaN or infinite values")
        w = np.ones(len(x)) if w is None else np.asarray(w, np.float64)
        if np.any(w < 0):
            raise ValueError("weights must not be negative")
        mf = cl.mem_flags
        return [cl.Buffer(self.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
                for a in (x, np.ascontiguousarray(y, np.float64), np.ascontiguousarray(w))]

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
