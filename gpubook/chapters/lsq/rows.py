"""Chapter 8: least squares by row-by-row QR updates (Miller's AS 274 `includ`).

The factorisation X'WX = R'DR is kept as D (d), the strictly upper part of the
unit upper-triangular R packed by rows (rbar), the rotated response (thetab)
and the residual sum of squares (sserr). This module holds the NumPy float64
versions (the algorithm row by row, and the checks against a direct
factorisation and `lstsq`) and the launches of steps 1-2; step 3's blocked
reflections live in gpubook.blocked_qr, step 4's subset search in gpubook.subsets.
"""
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from . import blocked as blocked_qr, inputs, tiled as tiled_qr
from .blocked import checked_rows
from ... import launch
from ...device import require_fp64
from ...kernels import kernel
from ...timing import seconds_by_kernel, time_events

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
        """Miller's form from an upper-triangular R (any signs) and z = Q'y.
        A row whose pivot is exactly zero may still hold non-zeros to its right
        (a Householder step that meets an exactly zero column leaves its row as
        it was): Miller's form cannot keep them on that row (d = 0), so the row
        goes into the rows below as a row of data of weight 1, as includ does
        where d is zero, and what it held of y that they cannot take goes into
        the residual. R'DR and the residual sums are then those of R and z."""
        rt, z = inputs.array("rt", rt, 2), inputs.vector("z", z, len(rt))
        n = len(z)
        if rt.shape != (n, n):
            raise ValueError(f"rt must be square ({n} x {n}, as z), got shape {rt.shape}")
        diag = np.diag(rt).copy()
        zero = diag == 0.0
        safe = np.where(zero, 1.0, diag)
        unit = np.where(zero[:, None], 0.0, rt / safe[:, None])
        f = cls(diag**2, unit[np.triu_indices(n, 1)].copy(), np.where(zero, 0.0, z / safe),
                inputs.scalar("sserr", sserr))
        for i in np.flatnonzero(zero):
            include_row(f, rt[i, i + 1:].copy(), z[i], 1.0, first=i + 1)
        return f

    def gram(self):
        """X'WX as the factorisation holds it: R'DR."""
        r = self.r()
        return r.T @ (self.d[:, None] * r)

    def column_norms(self):
        """sqrt of the diagonal of X'WX = R'DR, without the data."""
        r = self.r()
        return np.sqrt(np.einsum("i,ij,ij->j", self.d, r, r))

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
    return float(np.max(np.abs(f.gram() - xtwx)) / np.max(np.abs(xtwx)))


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
        n = inputs.count("n", n, 1)
        if step not in STEPS:
            raise ValueError(f"unknown step {step!r}; use one of {', '.join(STEPS)}")
        self.ctx, self.queue, self.n, self.step = ctx, queue, n, step
        if step == "2_row_group":
            if launch.local_memory(device) and 8 * n > launch.local_memory(device):
                raise ValueError(f"a row of n = {n:,} doubles needs {8 * n:,} bytes of local memory; "
                                 f"{device.name.strip()} has {launch.local_memory(device):,}")
            # by default the largest work-group that the built kernel allows (its registers decide)
            self.wg = launch.largest(device, 1024, lambda w: 8 * n) if wg is None else int(wg)
            launch.check(device, self.wg, 8 * n)
            self.kernel = kernel(ctx, f"lsq/{step}.cl", "includ_row_group", {"WG": self.wg, "NMAX": n})
            while wg is None and self.wg > 1 and launch.why_not(device, self.wg, kern=self.kernel):
                self.wg //= 2
                self.kernel = kernel(ctx, f"lsq/{step}.cl", "includ_row_group", {"WG": self.wg, "NMAX": n})
            launch.check(device, self.wg, kern=self.kernel)
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
        if len(f.d) != self.n:
            raise ValueError(f"f must be a factorisation of {self.n} columns, got {len(f.d)}")
        for host, buf in zip((f.d, f.rbar, f.thetab, np.array([f.sserr])), self.state):
            if host.size:
                cl.enqueue_copy(self.queue, buf, np.ascontiguousarray(host, np.float64))
        return self

    def upload(self, x, y, w=None):
        """Device copies of the rows (float64), their responses and weights."""
        x, y, w = checked_rows(x, y, w, self.n)
        mf = cl.mem_flags
        if not len(x):            # no rows: buffers of one value (OpenCL has none of 0 bytes), none read
            return [cl.Buffer(self.ctx, mf.READ_ONLY, 8) for _ in range(3)]
        return [cl.Buffer(self.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a) for a in (x, y, w)]

    def enqueue(self, data, row0, rows):
        """Include rows row0 .. row0+rows-1 of uploaded data; returns the event
        (None where rows is 0: nothing to launch)."""
        x, y, w = data
        row0, rows = inputs.count("row0", row0, 0), inputs.count("rows", rows, 0)
        if not rows:
            return None
        inputs.buffer("data (its rows)", x, 8 * self.n * (row0 + rows))
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


class MillerForm:
    """Miller's form in and out of a factor kept in triangular form on the device."""

    def factor(self):
        """Miller's form (d, rbar, thetab, sserr) of what has been folded in."""
        rt, z = self.triangular()
        return Factor.from_triangular(rt, z, self.sserr)

    def load(self, f):
        """Start from a factorisation in Miller's form."""
        rt, z = f.triangular()
        return self.load_triangular(rt, z, f.sserr)


class BlockedQR(MillerForm, blocked_qr.BlockedQR):
    """Step 3 (gpubook.blocked_qr) with Miller's form in and out."""


class TiledQR(MillerForm, tiled_qr.TiledQR):
    """Step 5 (gpubook.tiled_qr) with Miller's form in and out."""


def resources_in_words(rows, label, device):
    """What the kernel of `rows` (resource_rows()) whose label starts with `label`
    uses, in words for the prose: registers and occupancy where the device reports them."""
    from ...resources import kernel_resources

    _, kern, size = next(r for r in rows if r[0].startswith(label))
    r = kernel_resources(kern, device, size)
    regs = ("registers not reported by this device" if r["registers"] is None
            else f"{r['registers']} registers per work-item, {r['spill_stores'] or 0} bytes spilled")
    occ = ("occupancy not known here" if r["occupancy"] is None
           else f"{r['occupancy']:.0%} occupancy (bound by {r['limiter']})")
    return f"{regs}, {occ}"


def includ_flops(n):
    """Floating-point operations of one row through includ, as the kernels do
    them: 5 per element of R the rotations touch (2 to update the row, 3 for
    R), and about 12 per column for d, the rotation and the response."""
    return 5 * packed_size(n) + 12 * n


def row_group_sizes(ctx, queue, ns, candidates=(32, 128, 256, 1024)):
    """(step 2's work-group sizes that this device and the built kernel run for every n
    of `ns`, [(size, reason)] for the others): the sweep skips those with the reason.
    Where none of the candidates runs (a device of 16 work-items per work-group), the
    largest power of two below them that does."""
    ok, skipped = [], []
    for wg in candidates:
        try:
            for n in ns:
                Includ(ctx, queue, n, "2_row_group", wg=wg)
            ok.append(wg)
        except ValueError as err:  # launch.LaunchError included
            skipped.append((wg, str(err)))
    wg = min(candidates) // 2
    while not ok and wg >= 1:
        try:
            for n in ns:
                Includ(ctx, queue, n, "2_row_group", wg=wg)
            ok.append(wg)
        except ValueError:
            wg //= 2
    return ok, skipped


def panel_widths(ctx, queue, widths, n=None):
    """(the panel widths of step 3 that this device and its built kernels run for n
    columns (by default the widest), [(width, reason)] for the others)."""
    ok, skipped = [], []
    for nb in widths:
        try:
            blocked_qr.BlockedQR(ctx, queue, n or max(widths), nb=nb, block_rows=64)
            ok.append(nb)
        except ValueError as err:  # launch.LaunchError included
            skipped.append((nb, str(err)))
    return ok, skipped


def time_includ(ctx, queue, step, f, x, y, wg=None, repeats=3):
    """Timing of one launch that adds the rows x, y to the factorisation f
    (reloaded before every launch, so every launch does the same work)."""
    inc = Includ(ctx, queue, len(f.d), step, wg=wg)
    data = inc.upload(x, y)

    def launch():
        inc.load(f)
        return inc.enqueue(data, 0, len(x))
    return time_events(launch, repeats=repeats, warmup=1)


def time_blocked(ctx, queue, x, y, nb, repeats=3, tiled=None):
    """Step 3 (or step 5, with `tiled` the TiledQR options: outer, shape,
    chunk) on all rows of x into an empty R: (Timing, device seconds per
    kernel in the last run, the factor holding the result)."""
    if tiled is None:
        qr = BlockedQR(ctx, queue, x.shape[1], nb=nb, block_rows=len(x))
    else:
        qr = TiledQR(ctx, queue, x.shape[1], nb=nb, block_rows=len(x), **tiled)
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
    return t, seconds_by_kernel(trace), qr


def gram_error(qr, x, y):
    """How far [R z]'[R z] plus the residual is from [X y]'[X y], relative to its largest entry."""
    rt, z = qr.triangular()
    a = np.column_stack([x, y])
    gram = a.T @ a
    gram[-1, -1] -= qr.sserr                                  # R'R holds all but the residual
    full_r = np.column_stack([rt, z])
    return float(np.max(np.abs(full_r.T @ full_r - gram)) / np.max(np.abs(gram)))


def cross_products(f, yty):
    """X'X = R'DR and X'y = R'D thetab from a factorisation (and y'y given)."""
    return f.gram(), f.r().T @ (f.d * f.thetab), float(yty)
