"""What chapter 3's main line and its Going-further page both compute from one
work-group's runs (kept here so that neither page copies the other's cells)."""
import numpy as np


def without_examples(seconds_at, counts, iteration_s):
    """The tree built with PER_ITEM=0 at every work-group size: `seconds_at(n)` is
    its time per iteration at n work-items, `iteration_s` {n: the training
    kernel's time per iteration}. Returns (rest {n: s}, a line's (slope, intercept)
    against log2 n in seconds per round and besides, and the table's rows)."""
    rest = {n: seconds_at(n) for n in counts}
    rn = np.array([n for n in counts if n > 1], float)
    line = np.polyfit(np.log2(rn), [rest[n] for n in rn.astype(int)], 1)
    rows = [["N", "rounds", "iteration (µs)", "without examples (µs)", "examples (µs)"]]
    for n in counts:
        rows.append([n, int(np.log2(n)), f"{iteration_s[n] * 1e6:.2f}",
                     f"{rest[n] * 1e6:.2f}", f"{(iteration_s[n] - rest[n]) * 1e6:.2f}"])
    return rest, tuple(line), rows
