"""The two checks of a QR factorisation, one definition each, for every method
(NumPy arrays on the host, PyTorch tensors where they live).

`gram_error(r, a)`: max |RᵀR − AᵀA| / max |AᵀA|, how well R reproduces the data.

`orthogonality(q)`: how far Q is from orthonormal columns, ||QᵀQ − I||_F,
the Frobenius norm, unscaled, as the CholeskyQR literature reports it (Fukaya,
Nakatsukasa, Yanagisawa and Yamamoto; Yamamoto et al.). One function for every
method, so that every number a page sets side by side means the same thing.

The check that R'R equals A'A (the Gram error) cannot see a bad Q: any Cholesky
factor of A'A passes it, and where A is ill conditioned Q = A R^-1 can still be
far from orthonormal. ||QᵀQ − I||_F can: it is zero only for orthonormal columns.

`orthogonality(q)` takes Q as a method formed it: a NumPy array (computed in
float64 on the host) or a PyTorch tensor (computed in float64 where it lives,
on the GPU for cuSOLVER's Q). `orthogonality_from_r(a, r)` forms Q = A R^-1 on
the host in float64 first, for a method that gives R only (TSQR's implicit Q,
step 5's reflections): that Q carries the solve's own rounding, about
u·κ(A), so above κ(A) ≈ 1e3 it measures A R^-1, not the method's implicit Q."""
import numpy as np


def _float64(q):
    """(Q in float64, whether every entry is finite): NumPy on the host, a tensor where it lives."""
    if isinstance(q, np.ndarray) or not hasattr(q, "double"):
        q = np.asarray(q, np.float64)
        return q, bool(np.isfinite(q).all())
    q = q.double()
    return q, bool(q.isfinite().all())


def gram_error(r, a, gram=None):
    """max |R'R - A'A| relative to max |A'A| (float64); `gram`: A'A where it is
    already known (for a large A it is the costly part; a is then not read)."""
    if gram is None:
        a, _ = _float64(a)
        gram = a.T @ a
    return float(abs(r.T @ r - gram).max() / abs(gram).max())


def orthogonality(q):
    """||QᵀQ − I||_F of an m x n matrix Q (n >= 1), in float64: a NumPy array on
    the host, a PyTorch tensor on its own device. Raises ValueError for a Q that
    is not 2-D, has no column, or holds NaN or infinite values."""
    q, finite = _float64(q)
    if q.ndim != 2 or q.shape[1] < 1 or q.shape[0] < 1:
        raise ValueError(f"Q must be a 2-D matrix with at least one row and column, got shape {tuple(q.shape)}")
    if not finite:
        raise ValueError("Q holds NaN or infinite values: no orthogonality to measure")
    g = q.T @ q
    diagonal = list(range(g.shape[0]))
    g[diagonal, diagonal] -= 1.0
    top = float(abs(g).max())
    if top == 0.0:
        return 0.0
    return top * float((((g / top) ** 2).sum()) ** 0.5)  # scaled: no overflow for a wildly wrong Q


def q_from_r(a, r):
    """Q = A R^-1 in float64 on the host (A m x n, R n x n upper triangular,
    its strictly lower part ignored). Raises ValueError where R is singular
    (a zero or non-finite diagonal: no such Q) or the shapes disagree."""
    a = np.asarray(a, np.float64)
    r = np.triu(np.asarray(r, np.float64))
    if a.ndim != 2 or r.shape != (a.shape[1], a.shape[1]):
        raise ValueError(f"R must be n x n for an m x n A: A is {a.shape}, R is {r.shape}")
    d = np.abs(np.diag(r))
    if not np.all(np.isfinite(r)) or not np.all(d > 0):
        raise ValueError("R is singular or not finite (a zero or non-finite diagonal): Q = A R^-1 does not exist")
    return np.linalg.solve(r.T, a.T).T                             # R'Q' = A', by LU with partial pivoting


def orthogonality_from_r(a, r):
    """||QᵀQ − I||_F for Q = A R^-1 formed on the host in float64 (`q_from_r`)."""
    return orthogonality(q_from_r(a, r))


def conditioned(m, n, cond, seed=7):
    """U diag(1 .. cond) Vᵀ, m x n: U and V random with orthonormal columns (NumPy's QR
    of Gaussian matrices), the singular values spaced evenly in log from 1 to `cond`,
    so κ(A) = cond. Unlike scaled columns, which CholeskyQR's first Cholesky factor
    absorbs (its Q1 comes out orthonormal to rounding), the rotation V mixes the
    columns: CholeskyQR's weakness. The same matrix for every method that factors it,
    the vendor's included (gpubook.vendor.measure_each)."""
    if m < n or n < 2:
        raise ValueError("expected m >= n >= 2")
    rng = np.random.default_rng(seed)
    u, _ = np.linalg.qr(rng.standard_normal((m, n)))
    v, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return (u * np.logspace(0, np.log10(cond), n)) @ v.T
