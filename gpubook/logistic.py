"""Logistic regression, the model of chapters 1-5, in NumPy: two planted classes,
the sigmoid, plain gradient ascent and the log-likelihood. Chapters 1-4 train it
in one work-group; chapter 5 computes its gradient over the whole device.
"""
import numpy as np


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
    X64 = np.asarray(X, np.float64)
    y64 = np.asarray(labels, np.float64)
    w = np.zeros(X64.shape[1]) if w0 is None else np.array(w0, np.float64)
    for _ in range(iterations):
        w += rate * (X64.T @ (y64 - sigmoid(X64 @ w)))
    return w


def log_likelihood(X, labels, w):
    """Sum over examples of log P(label | x, w); rises toward 0 as the fit improves."""
    return float(np.sum(log_likelihood_terms(np.asarray(X, np.float64) @ np.asarray(w, np.float64),
                                             labels)))


def log_likelihood_terms(z, labels):
    """log P(label | x) of each example, from its score z = x . w (in float64)."""
    z = np.asarray(z, np.float64)
    y = np.asarray(labels, np.float64)
    # log sigmoid(z) = -log(1 + exp(-z)), written stably with logaddexp
    return -y * np.logaddexp(0.0, -z) - (1.0 - y) * np.logaddexp(0.0, z)
