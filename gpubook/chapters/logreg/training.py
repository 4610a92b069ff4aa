"""Chapters 1-4: logistic regression trained in one work-group.

One training iteration, the same on every device and in every chapter (the
model and its NumPy reference are gpubook.logistic):
    scores   = labels - sigmoid(X @ w)
    gradient = X.T @ scores
    w       += rate * gradient

Here: the benchmark's sizes, the seed's figures, and building, launching and
checking the single-work-group training kernels of kernels/logreg/.
"""
from dataclasses import dataclass, field

import numpy as np
import pyopencl as cl

from ...device import check_work_group
from ...kernels import kernel as _kernel
from ...logistic import check_data, real_array, train, two_classes
from ...loopcap import LoopCapError, loop_cap
from ...paths import KERNELS
from ...timing import time_events

#: Iterations per second that the seed measured on its laptop GPU, for J=2048
#: examples, K=8 features and 50,000 iterations in one launch.
SEED_DEVICE = "AMD Radeon R7 M360"
SEED_FIGURES = {
    "naive": 50_000 / 100,        # "more than 100 s": at most 500 it/s
    "merged loops": 1151,         # 43.43 s
    "float4 + tree, 256 work-items": 70_000,
}

#: Relative tolerance of a float32 kernel's weights against the float64
#: reference of the same iterations: max |w - w_ref| / max |w_ref|.
TOLERANCE = 1e-4

SIZES = {
    "full": {"J": 2048, "K": 8, "iterations": 50_000},
    "small": {"J": 2048, "K": 8, "iterations": 500},
}


def learning_rate(J):
    """The step size: 1/J keeps rate * (largest curvature) well below 2 for the
    two_classes data, so gradient ascent converges without oscillating."""
    return 1.0 / J


@dataclass
class Problem:
    """One training set and the number of iterations every kernel runs."""
    J: int
    K: int
    iterations: int
    X: np.ndarray
    labels: np.ndarray
    rate: float
    _refs: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        # What the kernels read: X (J x K) and labels (J,) as float32 in C order
        # (a float64 or Fortran-order X is copied), labels in {0, 1}.
        self.X, self.labels = check_data(self.X, self.labels, J=self.J, K=self.K)
        self.iterations = count(self.iterations, "iterations")
        if not (isinstance(self.rate, (int, float, np.integer, np.floating)) and 0 < self.rate < np.inf):
            raise ValueError(f"rate must be a finite positive step size, not {self.rate}")

    def reference(self, iterations=None):
        """float64 weights after `iterations` (default: all) steps from w = 0."""
        n = self.iterations if iterations is None else iterations
        if n not in self._refs:
            self._refs[n] = train(self.X, self.labels, self.rate, n)
        return self._refs[n]


def problem(scale, J=None, K=None, iterations=None, seed=0):
    """The benchmark at this scale (`full`: the seed's J=2048, K=8, 50,000
    iterations; `small`: the same data, fewer iterations); arguments override."""
    if scale not in SIZES:
        raise ValueError(f"unknown scale {scale!r}; use one of {', '.join(map(repr, SIZES))}")
    size = dict(SIZES[scale])
    for name, value in (("J", J), ("K", K), ("iterations", iterations)):
        if value is not None:
            size[name] = count(value, name)
    X, labels = two_classes(size["J"], size["K"], seed=seed)
    return Problem(size["J"], size["K"], size["iterations"], X, labels, learning_rate(size["J"]))


def count(value, name, least=1):
    """`value` as an int of at least `least`, or a clear TypeError or ValueError naming `name`."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if value < least:
        raise ValueError(f"{name} must be at least {least}, got {value}")
    return int(value)


def check_shape(device, step, J, K, work_items, defines):
    """Raise ValueError when kernels/logreg/<step>.cl cannot run this shape here."""
    steps = sorted(p.stem for p in (KERNELS / "logreg").glob("*.cl"))
    if step not in steps:
        raise ValueError(f"unknown step {step!r}; use one of {', '.join(steps)}")
    J, K, work_items = count(J, "J"), count(K, "K"), count(work_items, "work_items")
    if J % work_items:
        raise ValueError(f"{work_items} work-items do not divide J={J} examples")
    if work_items > 1 and work_items & (work_items - 1) and step != "work_items":
        raise ValueError(f"{step} needs a power-of-two number of work-items, got {work_items}")
    if step in ("float4", "fast") and K % 4:
        raise ValueError(f"{step} reads float4 vectors: K={K} must be a multiple of 4")
    local_bytes = {"work_items": 4 * K * work_items, "tree": 4 * K * work_items,
                   "float4": 4 * K * work_items}.get(step, 0)
    if step == "fast":
        if defines.get("SHUFFLE") and (work_items % 32 or K != 8):
            raise ValueError("fast.cl with SHUFFLE=1 needs K=8 and a multiple of 32 work-items")
        if not 0 <= defines.get("IN_REGS", 0) <= J // work_items:
            raise ValueError(f"IN_REGS must lie in 0..J/N = {J // work_items}")
        radix = defines.get("RADIX", 16)
        local_bytes = (8 * K * (work_items // 32) if defines.get("SHUFFLE")
                       else 8 * (K * work_items + K * work_items // radix))
    check_work_group(device, work_items, local_bytes)


def fits(device, step, J, K, work_items, **defines):
    """True when check_shape accepts this shape."""
    try:
        check_shape(device, step, J, K, work_items, defines)
    except ValueError:
        return False
    return True


def rate_literal(rate):
    """The float32 step size as an exact OpenCL C literal (hexadecimal float)."""
    return float(np.float32(rate)).hex() + "f"


@dataclass(frozen=True)
class TrainKernel:
    """A training kernel of kernels/logreg/<step>.cl for one shape, not yet
    compiled: the number of iterations and the step size are build options
    (ITERS, RATE), as in the seed, so each count compiles its own program.

    A runtime trip count cost the one-work-item kernels of chapter 1 up to a
    quarter of their speed on NVIDIA's compiler; compiled in, the loop is the
    same arithmetic with a constant bound.
    """
    ctx: cl.Context
    step: str
    J: int
    K: int
    work_items: int
    defines: tuple

    def compiled(self, iterations, rate):
        """The cl.Kernel that runs `iterations` steps of size `rate`; it takes (X, labels, w)."""
        iterations = count(iterations, "iterations")
        return _kernel(self.ctx, f"logreg/{self.step}.cl", "train",
                       {"J": self.J, "K": self.K, "N": self.work_items, **dict(self.defines),
                        "ITERS": int(iterations), "RATE": rate_literal(rate)})


def build(ctx, device, step, J, K, work_items=1, **defines):
    """The training kernel of kernels/logreg/<step>.cl for J examples, K
    features and one work-group of `work_items`, after checking that the shape
    fits. Every logreg kernel runs the whole training loop in one launch of
    one work-group; Trainer compiles it for the iteration count it launches.
    """
    check_shape(device, step, J, K, work_items, defines)
    # The launch itself checks the group size against the compiled kernel; NVIDIA's
    # driver answers 256 to CL_KERNEL_WORK_GROUP_SIZE for every kernel, even
    # ones it then runs with 1024 work-items, so that query is not used here.
    return TrainKernel(ctx, step, J, K, work_items, tuple(sorted(defines.items())))


def has_warp_shuffle(device):
    """True on NVIDIA GPUs, whose OpenCL compiler accepts the inline PTX
    `shfl.sync` that fast.cl uses when built with SHUFFLE=1 (warps of 32)."""
    warp = getattr(device, "warp_size_nv", None) if "cl_nv_device_attribute_query" in device.extensions else None
    return bool(device.type & cl.device_type.GPU) and "NVIDIA" in device.vendor.upper() and warp == 32


def fast_defines(device, J, work_items, shuffle=None, radix=16):
    """Build options for fast.cl: the reduction (warp shuffle where the device
    has it, else local-memory rounds of `radix`) and how many examples each
    work-item keeps in registers: at most 16, and at most 2048 / N above 256
    work-items, where the group's share of the register file gets small."""
    shuffle = has_warp_shuffle(device) if shuffle is None else shuffle
    cap = 16 if work_items <= 256 else max(1, 2048 // work_items)
    return {"SHUFFLE": int(bool(shuffle)), "RADIX": radix, "IN_REGS": min(J // work_items, cap)}


def iterations_per_launch(cap, J, K, iterations, work_items=1):
    """How many training iterations one launch may run on a device that stops each
    work-item's loops after `cap` iterations (None: no cap, all of them). A bound on
    one iteration's loops in any work-item of the logreg kernels: its share of the
    J + 2*J*K loops over examples (scores and gradient), a serial sum of N partials of
    K (chapter 2), log2(N) rounds of a tree over K (chapters 3-4), the update and the
    loop itself."""
    if cap is None:
        return iterations
    n = work_items
    loops = -(-(2 * J * K + J) // n) + n * K + 2 * K * max(1, n.bit_length()) + 2 * K + 1
    per = cap // loops
    if per < 1:
        raise LoopCapError(f"one iteration at J={J}, K={K} on {n} work-item(s) loops longer than this "
                         f"device's cap of {cap:,} iterations per work-item and launch (gpubook.loopcap)")
    return min(per, iterations)


class Trainer:
    """A training set on the device and launches of single-work-group kernels."""

    def __init__(self, ctx, queue, prob):
        mf = cl.mem_flags
        self.queue, self.prob = queue, prob
        X, labels = check_data(prob.X, prob.labels, J=prob.J, K=prob.K)  # as the kernels read them
        self.X = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=X)
        self.labels = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=labels)
        self.w = cl.Buffer(ctx, mf.READ_WRITE, 4 * prob.K)
        self.zeros = np.zeros(prob.K, np.float32)

    def launch(self, knl, work_items, iterations=None, w0=None):
        """Set w (default 0; else K finite weights), then train `iterations`
        (default: the problem's) in one launch of the work-group `knl` was built
        for; returns the kernel's event."""
        prob = self.prob
        if (knl.J, knl.K, knl.work_items) != (prob.J, prob.K, work_items):
            raise ValueError(f"knl was built for J={knl.J}, K={knl.K} and {knl.work_items} work-items; "
                             f"this launch has J={prob.J}, K={prob.K} and {work_items}")
        n = count(prob.iterations if iterations is None else iterations, "iterations")
        start = self.zeros if w0 is None else real_array(w0, "w0", np.float32, (prob.K,))
        cl.enqueue_copy(self.queue, self.w, start)
        # A device that stops loops early (gpubook.loopcap: Mesa's llvmpipe) gets the
        # iterations in launches that each stay under its cap, w carried in global memory
        # from one to the next; their events' span is the training's time.
        per = iterations_per_launch(loop_cap(self.queue.device), prob.J, prob.K, n, work_items)
        events = []
        for done in range(0, n, per):
            compiled = knl.compiled(min(per, n - done), self.prob.rate)
            events.append(compiled(self.queue, (work_items,), (work_items,), self.X, self.labels, self.w))
        return events[0] if len(events) == 1 else events

    def weights(self):
        out = np.empty(self.prob.K, np.float32)
        cl.enqueue_copy(self.queue, out, self.w)
        return out

    def train(self, knl, work_items, iterations=None, w0=None):
        """Weights after training (and the kernel's event: its last, where a loop cap
        split the training over launches)."""
        event = self.launch(knl, work_items, iterations, w0)
        event = event[-1] if isinstance(event, list) else event
        event.wait()
        return self.weights(), event

    def time(self, knl, work_items, repeats=3, iterations=None):
        """Timing of full training runs after a one-iteration warm-up, and the
        weights the last run trained (each run starts again from w = 0).

        The warm-up runs a one-iteration build of the same kernel: it wakes the
        device without costing a whole training run. The full-length build is
        compiled at the first timed launch, on the host: event timing covers only
        the kernel's execution on the device."""
        self.train(knl, work_items, iterations=1)
        timing = time_events(lambda: self.launch(knl, work_items, iterations), repeats, warmup=0)
        return timing, self.weights()

