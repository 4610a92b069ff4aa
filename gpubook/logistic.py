"""Logistic regression, the model of chapters 1-5, in NumPy: two planted classes,
the sigmoid, plain gradient ascent and the log-likelihood. Chapters 1-4 train it
in one work-group; chapter 5 computes its gradient over the whole device.
"""
import numpy as np


def real_array(value, name, dtype=np.float32, shape=None):
    """`value` as a C-contiguous copy (or view) of `dtype`, after checking it: real
    numbers (TypeError otherwise), `shape` where given (None for any length along
    an axis) and finite in `dtype` (ValueError otherwise, naming `name`)."""
    a = np.asarray(value)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, not {a.dtype}")
    if shape is not None and (a.ndim != len(shape) or any(s is not None and s != d
                                                           for s, d in zip(shape, a.shape))):
        want = " x ".join("any" if s is None else str(s) for s in shape)
        raise ValueError(f"{name} must have shape ({want}), not {a.shape}")
    a = np.ascontiguousarray(a, dtype)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite in {np.dtype(dtype).name}: it has NaN, Inf or a value "
                         "too large for it")
    return a


def check_data(X, labels, dtype=np.float32, J=None, K=None, w=None, w_name="w0"):
    """X (J x K), labels (J,) in {0, 1} and, when given, weights w (K,), as
    C-contiguous arrays of `dtype` (copies where the input is of another dtype or
    order), or a clear TypeError or ValueError naming the argument. Returns
    (X, labels) or, with w, (X, labels, w)."""
    X = real_array(X, "X", dtype, (J, K))
    J, K = X.shape
    labels = real_array(labels, "labels", dtype, (J,))
    if not np.all((labels == 0) | (labels == 1)):
        bad = np.unique(labels[(labels != 0) & (labels != 1)])[:5]
        raise ValueError(f"labels must be 0 or 1, found {', '.join(f'{v:g}' for v in bad)}")
    if w is None:
        return X, labels
    return X, labels, real_array(w, w_name, dtype, (K,))


def two_classes(J, K, seed=0, separation=2.0):
    """J examples (half per class) of K features from two multivariate normals.

    Returns X (J, K) float32 row-major and labels (J,) float32 in {0, 1}. The class
    means sit `separation` apart along a random direction; both classes share one
    random covariance with unit-scale variances.
    """
    if J < 2 or K < 1:
        raise ValueError(f"need J >= 2 examples and K >= 1 features, got J={J}, K={K}")
    rng = np.random.default_rng(seed)
    direction = rng.standard_normal(K)
    direction /= np.linalg.norm(direction)
    mixing = rng.standard_normal((K, K)) / np.sqrt(K)
    cov = 0.5 * np.eye(K) + 0.5 * mixing @ mixing.T
    chol = np.linalg.cholesky(cov)
    labels = np.zeros(J)
    labels[J // 2:] = 1.0
    means = np.where(labels[:, None] > 0, 0.5, -0.5) * separation * direction
    X = means + rng.standard_normal((J, K)) @ chol.T
    return X.astype(np.float32), labels.astype(np.float32)


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def train(X, labels, rate, iterations, w0=None):
    """Weights after `iterations` steps of gradient ascent, in float64."""
    X64, y64 = check_data(X, labels, np.float64)
    w = np.zeros(X64.shape[1]) if w0 is None else real_array(w0, "w0", np.float64, (X64.shape[1],)).copy()
    for _ in range(iterations):
        w += rate * (X64.T @ (y64 - sigmoid(X64 @ w)))
    return w


def log_likelihood(X, labels, w):
    """Sum over examples of log P(label | x, w); rises toward 0 as the fit improves."""
    X64, y64, w64 = check_data(X, labels, np.float64, w=w, w_name="w")
    return float(np.sum(log_likelihood_terms(X64 @ w64, y64)))


def log_likelihood_terms(z, labels):
    """log P(label | x) of each example, from its score z = x . w (in float64)."""
    z = np.asarray(z, np.float64)
    y = real_array(labels, "labels", np.float64, z.shape)
    # log sigmoid(z) = -log(1 + exp(-z)), written stably with logaddexp
    return -y * np.logaddexp(0.0, -z) - (1.0 - y) * np.logaddexp(0.0, z)
