"""The algorithms of gpubook.chapters.lsq.shifted in NumPy float64, for the tests:
CholeskyQR passes with and without the shift (`reference`), and the chosen method's
rule (`reference_chosen`), its predicted shifts included."""
import numpy as np

from .shifted import LIMIT, MAX_SHIFTS, ConditionError, planned_shifts, shift_coefficient


def _chol(g):
    try:
        return np.linalg.cholesky(g).T
    except np.linalg.LinAlgError as err:
        raise ConditionError(f"a Cholesky factorisation broke down ({err})") from None


def _solve(x, r):
    return np.linalg.solve(r.T, x.T).T


def kappa_f(r):
    """||R||_F ||R^-1||_F of an upper-triangular R (NumPy): the estimate's formula."""
    return float(np.linalg.norm(r) * np.linalg.norm(np.linalg.inv(r)))


def reference(a, shifts=1, passes=2):
    """(Q, R) by `shifts` shifted CholeskyQR passes, then `passes` plain ones, in NumPy
    float64: shifts=0 is CholeskyQR2 (passes=1 CholeskyQR), shifts=1 shifted CholeskyQR3.
    Raises ConditionError where a Cholesky factorisation breaks down."""
    x = np.asarray(a, np.float64)
    m, n = x.shape
    r = np.eye(n)
    for p in range(shifts + passes):
        g = x.T @ x
        if p < shifts:
            g = g + shift_coefficient(m, n) * np.trace(g) * np.eye(n)
        rp = _chol(g)
        x, r = _solve(x, rp), rp @ r
    return x, r


def _estimate(g):
    try:
        return kappa_f(np.linalg.cholesky(g).T)
    except np.linalg.LinAlgError:
        return np.inf


def reference_chosen(a, limit=LIMIT, max_shifts=MAX_SHIFTS, predict=True):
    """(Q, R, shifts) by Chosen's rule in NumPy float64: from the first finite estimate
    above the limit, the shifts that planned_shifts predicts, then the estimate again;
    where it is still above the limit, the rule again with one shift per estimate."""
    x = np.asarray(a, np.float64)
    m, n = x.shape
    r, shifts, plan, predicted = np.eye(n), 0, 0, False
    while True:
        g = x.T @ x
        if not plan:
            est = _estimate(g)
            if est <= limit:
                q, r2 = reference(x, 0, 2)
                return q, r2 @ r, shifts
            if predicted:
                return reference_chosen(a, limit, max_shifts, predict=False)
            if shifts >= max_shifts:
                raise ConditionError(f"still above the limit after {max_shifts} shifts")
            predicted = predict and np.isfinite(est)
            plan = min(planned_shifts(est, m, n, limit) if predicted else 1, max_shifts - shifts)
        plan, shifts = plan - 1, shifts + 1
        rp = _chol(g + shift_coefficient(m, n) * np.trace(g) * np.eye(n))
        x, r = _solve(x, rp), rp @ r
