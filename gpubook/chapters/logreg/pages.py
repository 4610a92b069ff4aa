"""Steps that a chapter's main line and its Going-further page both run (chapters
1 and 2), kept here so that neither page copies the other's cells."""
import numpy as np

from .training import build


def bend_fit(records, J, iterations):
    """Chapter 2: the least-squares fit of t(N) = a J/N + b N + c to a sweep's
    times per iteration (`records` of sweep_work_items), and its optimum
    N* = sqrt(aJ/b) (NaN where a or b is not positive). Returns (a, b, c, N*)."""
    N = np.array([r["work_items"] for r in records], float)
    t = np.array([r["median_s"] for r in records]) / iterations
    design = np.stack([J / N, N, np.ones_like(N)], axis=1)
    (a, b, c), *_ = np.linalg.lstsq(design, t, rcond=None)
    best = np.sqrt(a * J / b) if a > 0 and b > 0 else float("nan")
    return a, b, c, best


def loop_kernels(ctx, device, prob):
    """Chapter 1: its three kernels (naive, reordered, merged), one work-item each,
    built for the problem `prob`."""
    return {step: build(ctx, device, step, prob.J, prob.K)
            for step in ("naive", "reordered", "merged")}
