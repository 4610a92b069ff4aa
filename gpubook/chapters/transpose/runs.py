"""Chapter 5's problem and timed sweeps, one definition for its two pages: the
main line (notebooks/05_transpose) and its depth (notebooks/05_going_further)."""
import numpy as np
import pyopencl as cl

from ...timing import sweep, time_events
from .steps import GRADIENTS, ITERATIONS, TRANSPOSES, examples_that_fit, numpy_seconds

K = 292                      # the chapter's features (the data set behind it had 292)
ALPHA = 2.0                  # training step alpha / J
NUMPY = "NumPy (host CPU)"   # the host baseline's name in the iteration records


def problem(device, scale, kp):
    """(J_MAX, J_SIZES, REPEATS, J_WANT): the largest number of examples swept (a power
    of two whose two layouts fit the device), the sizes swept and the timing repeats."""
    j_want = 2**24 if scale == "full" else 2**14
    j_max = examples_that_fit(device, kp, j_want)
    low = 14 if scale == "full" else 10
    sizes = sorted({2**e for e in range(low, j_max.bit_length(), 2)} | {j_max})
    return j_max, sizes, (10 if scale == "full" else 5), j_want


def at(records, variant, n):
    """The record of `variant` at J = n."""
    return next(r for r in records if r["variant"] == variant and r["J"] == n)


def speedups(iter_records, sizes):
    """({J: NumPy time / fused time}, the smallest J from which the device is faster
    at every larger size, or None)."""
    speedup = {n: at(iter_records, NUMPY, n)["median_s"]
               / at(iter_records, "fused", n)["median_s"] for n in sizes}
    wins = [n for n in sizes if all(speedup[m] > 1 for m in sizes if m >= n)]
    return speedup, (wins[0] if wins else None)


class Sweeps:
    """The timed sweeps over J of one Logreg `lr` on its buffers `big`."""

    def __init__(self, lr, big, sizes, repeats):
        self.lr, self.big, self.sizes, self.repeats = lr, big, sizes, repeats
        self.kp = lr.kp

    def x_bytes(self, n, kp=None):
        return 4 * n * (self.kp if kp is None else kp)

    def scores_gb(self, variant, n):
        """X read once, y read and o written."""
        return (self.x_bytes(n) + 8 * n) / 1e9

    def gradient_gb(self, variant, n):
        """X and o read once, the partial sums written and read back, theta updated."""
        parts = self.lr.chunks(n) if variant == "blocks" else 0
        return (self.x_bytes(n) + 4 * n + 8 * self.kp * parts + 8 * self.kp) / 1e9

    def scores(self, variants):
        lr, big = self.lr, self.big
        return sweep("J", self.sizes, variants,
                     lambda v, n: time_events(lambda: lr.scores(v, big, n),
                                              repeats=self.repeats),
                     amount=self.scores_gb)

    def transposes(self):
        lr, big = self.lr, self.big
        return sweep("J", self.sizes, list(TRANSPOSES),
                     lambda v, n: time_events(lambda: lr.transpose(v, big, n),
                                              repeats=3 if v == "naive" else self.repeats),
                     amount=lambda v, n: 2 * self.x_bytes(n) / 1e9)

    def gradients(self, feature_max=2**20):
        """Every gradient kernel; one work-item per feature only up to feature_max."""
        lr, big = self.lr, self.big
        lr.scores("cols", big, max(self.sizes)).wait()

        def measure(v, n):
            return time_events(lambda: lr.gradient(v, big, n, 1e-12),
                               repeats=3 if v == "feature" else self.repeats)
        few = [n for n in self.sizes if n <= feature_max]
        return (sweep("J", few, [GRADIENTS[0]], measure, amount=self.gradient_gb)
                + sweep("J", self.sizes, list(GRADIENTS[1:]), measure,
                        amount=self.gradient_gb))

    def host_copy(self, queue, n):
        """X (n x kp, row-major) and y of the first n examples, on the host."""
        x_host = np.empty((n, self.kp), np.float32)
        cl.enqueue_copy(queue, x_host, self.big.x)
        return x_host, self.lr.get(self.big.y, n)

    def iterations(self, x_host, y_host, alpha=ALPHA):
        """Both device iterations and NumPy on the host, per byte of X read once."""
        lr, big = self.lr, self.big

        def measure(v, n):
            if v == NUMPY:
                return numpy_seconds(x_host[:n], y_host[:n], alpha / n,
                                     repeats=3 if n >= 2**22 else 5)
            return time_events(lambda: lr.iteration(v, big, n, alpha / n),
                               repeats=self.repeats)
        return sweep("J", self.sizes, list(ITERATIONS) + [NUMPY], measure,
                     amount=lambda v, n: self.x_bytes(n) / 1e9)


def in_flight(warp_bytes, rec):
    """What one warp's first load moves and uses, from its traced addresses
    (figures.traced_bytes), and the sentence of what Little's law then asks of
    each compute unit, from `rec`, the machine chapter's record of this device
    (chapters.machine.recorded; None where there is none):
    (moved, used, waste, little_line), the first three {kernel: value}."""
    from ...curves import human_bytes
    from .figures import KERNELS, sectors

    used = {v: sectors(a, KERNELS[v][2]) for v, a in warp_bytes.items()}
    moved = {v: 32 * len(touched) for v, (touched, _) in used.items()}
    waste = {v: moved[v] / used[v][1] for v in used}
    used = {v: u[1] for v, u in used.items()}
    if rec is None:
        return moved, used, waste, (
            "The machine chapter has no record for this device, so the bytes that must "
            "be in flight are not known here (run `00_machine` to record them).")
    per_cu = rec["little"]["per_cu_bytes"]
    return moved, used, waste, (
        f"The machine chapter measured a latency of {rec['little']['latency_ns']:,.0f} ns "
        f"and a read rate of {rec['little']['gbs']:,.0f} GB/s here, so by Little's law each compute "
        f"unit must keep {human_bytes(per_cu)} of useful data on its way. Row-major, "
        f"that means {human_bytes(per_cu * waste['rows'])} moving with `float` loads and "
        f"{human_bytes(per_cu * waste['rows4'])} with `float4`; transposed, "
        f"{human_bytes(per_cu * waste['cols'])}.")
