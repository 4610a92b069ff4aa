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


def loop_counts(J, K, line):
    """Chapter 1: per iteration, the memory accesses of each kernel (4 bytes each;
    the reads of w are not counted) and the `line`-byte cache lines of X it visits."""
    x_lines = J * K * 4 // line
    accesses = {"naive": 3 * J * K + 2 * J, "reordered": 2 * J * K + 3 * J,
                "merged": J * K + J}
    visits = {"naive": (1 + K) * x_lines, "reordered": 2 * x_lines, "merged": x_lines}
    return accesses, visits


def access_rows(accesses, visits, rates, line):
    """Chapter 1's memory table: per kernel its accesses, KiB and lines of X per
    iteration, its rate (iterations/s) and the time per access."""
    rows = [["kernel", "accesses / iteration", "KiB / iteration",
             f"{line}-byte lines of X visited", "iterations/s", "ns per access"]]
    for s in accesses:
        rows.append([s, f"{accesses[s]:,}", f"{4 * accesses[s] / 1024:.0f}",
                     f"{visits[s]:,}", f"{rates[s]:,.0f}",
                     f"{1e9 / (rates[s] * accesses[s]):.1f}"])
    return rows


def loop_bars(rates, others, numpy_rate, name):
    """Chapter 1's bar chart: this device's kernels (`rates`), the other recorded
    devices' (`others`, gb.other_devices), the seed's laptop GPU and NumPy's line."""
    from . import training
    from .figures import plot_bars

    bars = [(s, rates[s], "this device") for s in rates]
    for entry in others.values():
        bars += [(f"{r['variant']} ({entry['device']})", r["rate"], "reference device")
                 for r in entry["data"]["steps"]]
    seed, figures = training.SEED_DEVICE, training.SEED_FIGURES
    bars += [(f"naive, at most ({seed})", figures["naive"], "seed"),
             (f"merged loops ({seed})", figures["merged loops"], "seed")]
    return plot_bars(bars, "iterations per second (J=2048, K=8)",
                     "One work-item: loop order", name,
                     limits=[(numpy_rate, "NumPy, host CPU")])
