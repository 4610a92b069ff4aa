"""Chapter 8's step 4, which chapter 10 spreads over devices: the residual sum of squares of every k-subset of p
candidate regressors (the intercept always in), one subset per work-item
(kernels/lsq/4_subsets.cl), and the batched NumPy baseline."""
from itertools import combinations
from math import comb

import numpy as np
import pyopencl as cl

from . import launch
from .device import require_fp64
from .inputs import real_array
from .kernels import kernel


def unrank(g, k, p):
    """The k-subset of range(p) with rank g in the combinatorial number system."""
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
    p = len(xty) - 1
    subs = np.array(list(combinations(range(p), k)), dtype=np.int64).reshape(-1, k)
    cols = np.column_stack([np.zeros(len(subs), np.int64), subs + 1])
    blocks = xtx[cols[:, :, None], cols[:, None, :]]
    rhs = xty[cols]
    coef = np.linalg.solve(blocks, rhs[..., None])[..., 0]
    return yty - np.sum(coef * rhs, axis=1), subs


def checked(name, a, shape):
    """`a` as a C-contiguous float64 array of `shape` with finite values, or a
    TypeError (not real numbers) or ValueError (shape, NaN or Inf) naming it."""
    got = np.shape(a)
    if got != shape:
        raise ValueError(f"{name} must have shape {shape}, got {got}")
    return real_array(name, a, len(shape))


class SubsetSearch:
    """Step 4: the RSS of every k-subset of p candidates, one subset per work-item."""

    def __init__(self, ctx, queue, p, k, wg=128):
        require_fp64(queue.device)
        for name, v in (("p", p), ("k", k), ("wg", wg)):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        p, k, wg = int(p), int(k), int(wg)
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
        """Device copies of X'X ((p+1) x (p+1), the intercept first) and X'y (p+1)."""
        q = self.p + 1
        mf = cl.mem_flags
        return [cl.Buffer(self.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=checked(name, v, shape))
                for name, v, shape in (("xtx", xtx, (q, q)), ("xty", xty, (q,)))]

    def enqueue(self, data, yty):
        """The RSS of every subset into `rss`; a subset whose columns are
        (numerically) collinear gets +infinity."""
        yty = float(checked("yty", yty, ()))
        return launch.enqueue(self.queue, self.kernel, (self.count,), (self.wg,), data[0], data[1],
                              np.float64(yty), np.uint64(0), np.uint64(self.count), self.binom, self.rss)

    def best(self, xtx, xty, yty):
        """(smallest RSS, its subset of candidate indices); a clear error where
        every subset is collinear (has an infinite RSS)."""
        self.enqueue(self.upload(xtx, xty), yty)
        out = np.empty(self.count)
        cl.enqueue_copy(self.queue, out, self.rss)
        g = int(np.argmin(out))
        if not np.isfinite(out[g]):
            raise ValueError(f"xtx: every subset of {self.k} candidates (with the intercept) is collinear")
        return float(out[g]), unrank(g, self.k, self.p)
