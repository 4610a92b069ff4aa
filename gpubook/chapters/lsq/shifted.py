"""Chapter 8's step 6 at any condition number: shifted CholeskyQR3 (Fukaya, Kannan,
Nakatsukasa, Yamamoto and Yanagisawa, SIAM J. Sci. Comput. 2020) on the device, and
a factorisation that chooses between it and CholeskyQR2 from a condition estimate.

CholeskyQR squares the condition number: the Gram matrix A'A has κ(A)², and its
rounding, about u ||A||², swamps its smallest eigenvalue once κ(A)² u nears 1, so the
first Q loses orthogonality like κ² u and the Cholesky factorisation breaks down a
little beyond. A shift keeps the first factorisation positive definite:

    G = A'A + s I,  s = 11 (m n + n (n + 1)) u ||A||_F²,  G = R1'R1,  Q1 = A R1^-1,

and Q1's condition number is then about κ(A) sqrt(s) / ||A||₂, small enough for
CholeskyQR2 on Q1 while that is below about u^-1/2; R = R3 R2 R1. Every pass is the
device's own pieces (cholqr.CholeskyQR2's Gram product, DeviceCholesky with its
inverse, the banded Q = X R^-1 product, the triangular R product), and two small
kernels of kernels/lsq/7_cholesky.cl: `shift_diagonal` (the trace and the shift on
the device) and `column_squares` (the condition estimate's two norms).

The estimate: κ_F(R) = ||R||_F ||R^-1||_F of a pass's unshifted Cholesky factor, with
R^-1 from the factorisation (DeviceCholesky's inverse), an upper bound of κ₂(R) (and
at most n times it). `Chosen` factors A unshifted first; where the estimate is at most
`limit` (cholqr.COND_LIMIT, 1e7: squared, the Gram matrix keeps more than half of
float64's digits, a margin of ten below u^-1/2 ≈ 9.5e7) it finishes by CholeskyQR2,
else it shifts and estimates again on the new Q, up to `max_shifts` times: one shift
is shifted CholeskyQR3, two are shifted CholeskyQR4 (needed where κ(A) sqrt(s) /
||A||₂ is itself above the limit, κ(A) near 1e13 and beyond at 2,000 × 50). Each
estimate read is a wait for the device, so from the first finite one the shifts still
needed are predicted (`planned_shifts`) and run before the next read.

Neither class forms Q: as CholeskyQR2, they give R, and `q()` forms Q = X R_last^-1 on
the host in float64 from the last pass's input X and its R (gpubook.orthogonality).
Where a Cholesky factorisation meets a pivot that is not positive, or `Shifted3`'s
CholeskyQR2 part receives a Q1 whose estimate is above u^-1/2, they raise
ConditionError: never a wrong Q. Each pass multiplies by its R^-1 formed explicitly (the
products' form), so Q R = A holds to about u κ(R1), where a triangular solve gives u: on
nearly square matrices of κ near 1e8 (6 x 6, a column 1e-7 from another) 5e-12 of ||A||,
against 2e-16 by solves in NumPy (tests/test_properties_fit.py holds it to that bound).
Both take CholeskyQR2's keywords (tile shapes, mma,
...) and its call style (upload, enqueue, settle, r, factor_buffer, r_factor, method,
cond_estimate, reason), so measure.time_factor times them as it times CholeskyQR2.
shifted_reference: the same algorithms in NumPy float64, for the tests."""
import numpy as np
import pyopencl as cl

from ... import launch
from ...kernels import kernel
from ...orthogonality import q_from_r
from . import cholqr, inputs
from .tsqr import checked, checked_rows_buffer

U = 2.0 ** -53                      # float64's unit roundoff
LIMIT = cholqr.COND_LIMIT           # the estimate up to which CholeskyQR2 is enough
ACCEPT = U ** -0.5                  # the largest κ(Q1) that Shifted3's CholeskyQR2 part takes
MAX_SHIFTS = 3


class ConditionError(ArithmeticError):
    """A matrix too ill-conditioned for the method: no R (and no Q) is given."""


def shift_coefficient(m, n):
    """s / ||A||_F² of Fukaya et al.'s shift for an m x n matrix: 11 (m n + n (n + 1)) u."""
    return 11.0 * (m * n + n * (n + 1)) * U


def predicted_q1_condition(a):
    """κ(Q1) after the shifted pass, about κ(A) sqrt(s) / ||A||₂ (where σ_min² ≪ s),
    from A's singular values on the host (NumPy float64): the mechanism's prediction."""
    a = np.asarray(a, np.float64)
    sv = np.linalg.svd(a, compute_uv=False)
    s = shift_coefficient(*a.shape) * float((sv ** 2).sum())
    big, small = sv[0] / np.sqrt(sv[0] ** 2 + s), sv[-1] / np.sqrt(sv[-1] ** 2 + s)
    return float(big / small)


def checked_limit(limit):
    """A condition-number limit as a float: positive, inf for none, or a clear error."""
    if isinstance(limit, (int, float, np.number)) and not limit > 0:     # NaN, -inf, 0 and below
        raise ValueError(f"limit must be a positive condition number (inf for none), got {limit!r}")
    return np.inf if limit == np.inf else inputs.scalar("limit", limit)


def planned_shifts(est, m, n, limit=LIMIT):
    """The shifted passes that take a finite condition estimate `est` of an m x n
    matrix to at most `limit` (at least one, and one where est is not finite): each
    divides κ by at least 1 / sqrt(n shift_coefficient(m, n)), as κ(Q1) is about
    κ(X) sqrt(s) / ||X||₂ and ||X||_F² <= n ||X||₂² (a bound: the estimate read after
    them checks it)."""
    limit = checked_limit(limit)
    c = np.sqrt(n * shift_coefficient(m, n))
    if not (np.isfinite(est) and est > limit and c < 1):
        return 1
    return max(1, int(np.ceil(np.log(est / limit) / -np.log(c))))


def product_flops(m, cols, shifts=1):
    """The useful flops of the products over all m rows with `shifts` shifted passes
    before CholeskyQR2 (measure.product_flops' count: m C (C + 1) for each Gram
    triangle and each Q = X R^-1), and C (C + 1) (C + 2) / 3 for each R_i R product:
    shifted CholeskyQR3 has five products over the rows where CholeskyQR2 has three."""
    c, big = int(cols), 3 + 2 * int(shifts)
    return big * m * c * (c + 1) + (1 + shifts) * c * (c + 1) * (c + 2) / 3


# ---- the device ---------------------------------------------------------------------

class _Passes(cholqr.Factors):
    """CholeskyQR passes on the device, built from a CholeskyQR2's pieces (`cq`)."""

    def __init__(self, ctx, queue, cols, **options):
        self.cq = cholqr.CholeskyQR2(ctx, queue, cols, **options)     # checks fp64 and the shapes
        self.ctx, self.queue, self.C = ctx, queue, self.cq.C
        ch = self.cq.chol
        # a second factorisation object: two more pivot slots, its own kernels' buffers
        self.chols = [ch, cholqr.DeviceCholesky(ctx, queue, self.C, ch.CB, ch.update_shape, ch.product_shape,
                                                self.cq.products, ch.panel)]
        self.k = {name: kernel(ctx, cholqr.PATH, name, {"CB": ch.CB, "WG": ch.wg})
                  for name in ("shift_diagonal", "column_squares")}
        launch.check(queue.device, ch.wg, kern=self.k["shift_diagonal"])
        mf, c = cl.mem_flags, self.C
        self.Gs, self.squares = cl.Buffer(ctx, mf.READ_WRITE, 8 * c * c), cl.Buffer(ctx, mf.READ_WRITE, 16 * c)
        self.G = [self.cq.G1, self.cq.G2]
        self._m, self.method, self.cond_estimate, self.reason = None, None, None, ""
        self.estimates, self.shifts, self.used = [], 0, []

    # the call style of CholeskyQR2
    def upload(self, a):
        return self.cq.upload(checked(a, self.C))

    def r(self):
        """R (C x C, upper triangular) of the last settled factorisation."""
        if self.method is None:
            raise RuntimeError("nothing factored yet: call enqueue and settle (or r_factor)")
        out = np.empty((self.C, self.C))
        cl.enqueue_copy(self.queue, out, self._r)
        return np.triu(out)

    def q(self):
        """Q = X R_last^-1 on the host, float64: X the last pass's input (read from the
        device), R_last its Cholesky factor; Q R = A to rounding."""
        if self.method is None:
            raise RuntimeError("nothing factored yet")
        g = np.empty((self.C, self.C))
        cl.enqueue_copy(self.queue, g, self._last[1])
        return q_from_r(self.last_input(), g)

    def last_input(self):
        """The last pass's input X from the device (for CholeskyQR2, its first pass's Q1)."""
        x = np.empty((self._m, self.C))
        cl.enqueue_copy(self.queue, x, self._last[0])
        return x

    # the pieces
    def _rows(self, buf, m):
        m = checked_rows_buffer(buf, m, self.C)
        if m < self.C:
            raise ValueError(f"A must have at least as many rows as columns ({self.C}), got {m} rows: "
                             "its Gram matrix is singular")
        return m

    def _buffers(self, m):
        if self._m != m:
            self.cq._buffers(m)
            self.X = [self.cq.Q, cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, 8 * m * self.C)]
            self._m = m

    def _g(self, i):
        while len(self.G) <= i:
            self.G.append(cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, 8 * self.C * self.C))
        return self.G[i]

    def _shift(self, g, m, trace):
        wg = self.cq.chol.wg
        trace.append(("shift_diagonal", launch.enqueue(
            self.queue, self.k["shift_diagonal"], (wg,), (wg,), g, np.int32(self.C), np.int32(self.C),
            np.float64(shift_coefficient(m, self.C)), bound=self.cq.products.bound)))

    def _factor(self, g, slot, inverse, trace, fresh=True):
        self.chols[slot // 2].enqueue(g, slot % 2, inverse, trace, fresh)
        if slot not in self.used:
            self.used.append(slot)

    def _estimate(self, g, trace, inverse=None):
        """Enqueue the two norms of the factor in g (upper) and its inverse (lower; E
        unless given)."""
        c = self.C
        for src, upper, at in ((g, 1, 0), (self.cq.E if inverse is None else inverse, 0, c)):
            trace.append(("column_squares", launch.enqueue(
                self.queue, self.k["column_squares"], (c,), (64,), src, np.int32(c), np.int32(c),
                np.int32(upper), self.squares, np.int32(at), bound=self.cq.products.bound)))

    def _read_estimate(self):
        sq = np.empty(2 * self.C)
        cl.enqueue_copy(self.queue, sq, self.squares)
        est = float(np.sqrt(sq[:self.C].sum()) * np.sqrt(sq[self.C:].sum()))
        return est if np.isfinite(est) else np.inf

    def _status(self, slot):
        return self.chols[slot // 2].ok(slot % 2)

    def _q(self, x, m, out, trace):
        """out = x R^-1, with R^-T in E: CholeskyQR2's own (enqueue_q)."""
        self.cq.enqueue_q(x, m, out, trace)

    def _product(self, gs, trace):
        """R = R_k ... R_1 from the factored Gram matrices gs (R_i in each one's upper
        triangle, R_i' in its lower): CholeskyQR2's triangles and triangular product."""
        cq = self.cq
        out = [cq.R, cq.Rinv]
        if len(gs) == 1:
            cq.chol.triangle(gs[0], cq.R, upper=True, trace=trace)
            self._r = cq.R
            return
        up = cq.Rinv
        cq.chol.triangle(gs[1], cq.E, upper=False, trace=trace)
        cq.chol.triangle(gs[0], up, upper=True, trace=trace)
        for i, g in enumerate(gs[1:]):
            if i:
                cq.chol.triangle(g, cq.E, upper=False, trace=trace)
            dst = out[i % 2]
            cq._triangular_product("tiles: R = R2 R1", cq.E, up, dst, trace)
            up = dst
        self._r = up


class Shifted3(_Passes):
    """Shifted CholeskyQR3 on the device: a shifted pass, then CholeskyQR2 on its Q1,
    all enqueued at once; `settle` reads the pivots and the estimate of κ(Q1) and
    raises ConditionError where a factorisation broke down or κ(Q1) is above ACCEPT
    (u^-1/2: CholeskyQR2's own limit) rather than give a Q that is not orthonormal.
    Where it settles, method is "shifted CholeskyQR3"; cond_estimate is κ_F of the
    second pass's factor, the estimate of κ(Q1)."""

    def enqueue(self, buf, m, trace=None):
        m = self._rows(buf, m)
        trace = [] if trace is None else trace
        self._buffers(m)
        self.method, self.used, self.shifts = None, [], 1
        x, gs = buf, []
        for i in range(3):
            g = self._g(i)
            self.cq.enqueue_gram(x, m, g, trace)
            if i == 0:
                self._shift(g, m, trace)
            last = i == 2
            self._factor(g, i, None if last else self.cq.E, trace)
            if i == 1:
                self._estimate(g, trace)
            gs.append(g)
            if not last:
                out = self.X[i % 2]
                self._q(x, m, out, trace)
                x = out
        self._last = (x, gs[-1])
        self._product(gs, trace)

    def settle(self, buf=None, m=None, trace=None):
        self.cond_estimate = self._read_estimate()
        self.estimates = [self.cond_estimate]
        bad = [i for i in self.used if not self._status(i)]
        if bad:
            self.method, self.reason = None, ""
            which = ["the shifted", "the second", "the third"][bad[0]]
            raise ConditionError(f"{which} Cholesky factorisation of shifted CholeskyQR3 broke down: A is too "
                                 "ill-conditioned for it (κ(A) beyond about 1 / (u sqrt(11 m n)))")
        if not self.cond_estimate <= ACCEPT:
            self.method, self.reason = None, ""
            raise ConditionError(f"after the shifted pass κ(Q1) is about {self.cond_estimate:.1e}, above "
                                 f"{ACCEPT:.1e} (u^-1/2), where CholeskyQR2 on Q1 loses orthogonality: A is "
                                 "too ill-conditioned for shifted CholeskyQR3")
        self.method, self.reason = "shifted CholeskyQR3", "asked for"
        return self.method


class Chosen(_Passes):
    """CholeskyQR2 or shifted CholeskyQR, chosen from the estimate κ_F of each pass's
    unshifted Cholesky factor (the module's note): `enqueue` runs the first pass and
    reads the estimate (one wait for the device). Above `limit` it shifts; from the
    first finite estimate on, it enqueues the shifts that `planned_shifts` predicts,
    with no estimate and no wait between them, then CholeskyQR2 on the last Q (where
    a pass follows a shift, its own shift goes in before the wait, beside the
    unshifted factor, and is dropped where the estimate needs none), and
    `settle` reads the estimate of that Q's own factor: where it is above the limit
    (the prediction fell short), the whole factorisation runs again with a wait after
    every pass (at most `max_shifts` shifts either way). After `settle`: method
    ("CholeskyQR2", "shifted CholeskyQR3", "shifted CholeskyQR4", ...), reason (why),
    cond_estimate (κ_F of A's own factor, inf where its Cholesky broke down),
    estimates (one per pass that estimated), shifts, predicted (the shifts run without
    a wait). Where CholeskyQR2 is chosen, the trace holds CholeskyQR2's launches in
    its order (measure.phases reads it); the Gram's copy, kept for a shift, and the
    estimate's two `column_squares` launches are the only other device work (inside
    the timed span, off the trace)."""

    def __init__(self, ctx, queue, cols, limit=LIMIT, max_shifts=MAX_SHIFTS, **options):
        self.limit, self.max_shifts = checked_limit(limit), inputs.count("max_shifts", max_shifts, 0)
        super().__init__(ctx, queue, cols, **options)
        self.predicted, self._deferred = 0, False
        # the unshifted factor's inverse, where the next shift runs beside it (enqueue)
        self.Eu = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 8 * self.C * self.C)

    def enqueue(self, buf, m, trace=None, predict=True):
        m = self._rows(buf, m)
        trace = [] if trace is None else trace
        self._buffers(m)
        self._input, self._deferred = (buf, m), False
        self.method, self.used, self.shifts, self.estimates, self.predicted = None, [], 0, [], 0
        x, gs, i, plan = buf, [], 0, 0
        while True:
            g = self._g(i)
            self.cq.enqueue_gram(x, m, g, trace)
            spec = False
            if not plan:
                # after a shift, the next shift goes in before the wait (in g, its own
                # flag), and the unshifted factor that estimates beside it (in Gs)
                spec, prior = predict and self.shifts and not self.predicted, list(self.used)
                if not self.predicted:
                    cl.enqueue_copy(self.queue, self.Gs, g)           # kept for a shift
                u, e = (self.Gs, self.Eu) if spec else (g, self.cq.E)
                self._factor(u, 0, e, trace)
                self._estimate(u, [], e)                              # not CholeskyQR2's: off the trace
                if self.predicted:              # the predicted shifts ran: settle reads this estimate
                    self._deferred = True
                    break
                if spec:
                    self._shift(g, m, trace)
                    self._factor(g, 3 if 1 in prior else 1, self.cq.E, trace)
                prior_ok = all(self._status(s) for s in prior)
                ok = self._status(0)
                est = self._read_estimate() if ok else np.inf
                self.estimates.append(est)
                if not prior_ok:
                    raise ConditionError("a shifted Cholesky factorisation broke down: A is too ill-conditioned "
                                         "for shifted CholeskyQR")
                if est <= self.limit:
                    if spec:                    # the unshifted factor after all, with its inverse
                        cl.enqueue_copy(self.queue, g, self.Gs)
                        cl.enqueue_copy(self.queue, self.cq.E, self.Eu)
                    break
                if self.shifts >= self.max_shifts:
                    raise ConditionError(f"the condition estimate is still {est:.1e} after {self.max_shifts} "
                                         f"shifted pass(es), above {self.limit:.0e}: A is too ill-conditioned")
                plan = 1
                if predict and np.isfinite(est):
                    plan = min(planned_shifts(est, m, self.C, self.limit), self.max_shifts - self.shifts)
                    self.predicted = plan
                if not spec:
                    cl.enqueue_copy(self.queue, g, self.Gs)
                self.used = self.used[-1:] if spec else []
            fresh = not self.used                   # the predicted shifts' failures add up in slot 1
            plan, self.shifts = plan - 1, self.shifts + 1
            if not spec:                            # (else this pass's shift already ran)
                self._shift(g, m, trace)
                self._factor(g, 1, self.cq.E, trace, fresh)
            gs.append(g)
            out = self.X[i % 2]
            self._q(x, m, out, trace)
            x, i = out, i + 1
        # CholeskyQR2 on x, its first factor already in g (with R^-T in E)
        gs.append(g)
        out = self.X[i % 2]
        self._q(x, m, out, trace)
        g2 = self._g(i + 1)
        self.cq.enqueue_gram(out, m, g2, trace)
        self.used = self.used if self._deferred else [0]      # (deferred: the shifts' slot and x's)
        self._factor(g2, 2, None, trace)
        gs.append(g2)
        self._last = (out, g2)
        self._product(gs, trace)

    def settle(self, buf=None, m=None, trace=None):
        if self._deferred:
            self._deferred = False
            est = self._read_estimate() if self._status(0) else np.inf
            self.estimates.append(est)
            if not est <= self.limit:         # the prediction fell short: again, a wait after each pass
                self.enqueue(*self._input, trace, predict=False)
                return self.settle(trace=trace)
        if not all(self._status(s) for s in self.used):
            self.method = None
            raise ConditionError("a Cholesky factorisation broke down: A is too ill-conditioned")
        self.cond_estimate = self.estimates[0]
        first = ("A's own Cholesky factorisation broke down" if not np.isfinite(self.cond_estimate)
                 else f"κ(A) is about {self.cond_estimate:.1e}, above {self.limit:.0e}")
        if self.shifts == 0:
            self.method = "CholeskyQR2"
            self.reason = f"κ(A) is about {self.cond_estimate:.1e}, at most {self.limit:.0e}"
        else:
            self.method = f"shifted CholeskyQR{2 + self.shifts}"
            after = ", then ".join(f"{e:.1e}" for e in self.estimates[1:])
            self.reason = (f"{first}; after {self.shifts} shifted "
                           f"pass{'es' if self.shifts > 1 else ''} the estimate is {after}")
            if self.predicted > 1:
                self.reason += f" ({self.predicted} shifts predicted from one estimate)"
        return self.method


def portable(ctx, queue, cols, cls=Chosen, **options):
    """cls on the register tiles that fit the device (measure.portable_shapes)."""
    from .measure import portable_shapes
    return cls(ctx, queue, cols, **{**portable_shapes(queue.device), **options})
