"""What chapter 3's main line and its Going-further page both compute from one
work-group's runs (kept here so that neither page copies the other's cells)."""
import numpy as np


def round_fit(rest, warp=32):
    """A line (slope, intercept) through `rest` {n: seconds} against log2 n, in
    seconds per round and besides, over the groups smaller than a warp (2 <= n <
    warp): there a round's few active work-items fit in one warp, and each round
    costs about the same. From a full warp on, a round's cost grows with its
    active work-items (their K-float strides collide in the banks), so a line
    through every size gives a slope and an intercept that mean nothing (a
    negative fixed cost). With fewer than two such sizes it takes every n > 1."""
    small = [n for n in sorted(rest) if 1 < n < warp]
    sizes = small if len(small) >= 2 else [n for n in sorted(rest) if n > 1]
    return tuple(np.polyfit(np.log2(np.array(sizes, float)), [rest[n] for n in sizes], 1))


def without_examples(seconds_at, counts, iteration_s, warp=32):
    """The tree built with PER_ITEM=0 at every work-group size: `seconds_at(n)` is
    its time per iteration at n work-items, `iteration_s` {n: the training
    kernel's time per iteration}. Returns (rest {n: s}, `round_fit`'s (slope,
    intercept) over the groups smaller than a warp, in seconds per round and
    besides, and the table's rows)."""
    rest = {n: seconds_at(n) for n in counts}
    line = round_fit(rest, warp)
    rows = [["N", "rounds", "iteration (µs)", "without examples (µs)", "examples (µs)"]]
    for n in counts:
        rows.append([n, int(np.log2(n)), f"{iteration_s[n] * 1e6:.2f}",
                     f"{rest[n] * 1e6:.2f}", f"{(iteration_s[n] - rest[n]) * 1e6:.2f}"])
    return rest, line, rows
