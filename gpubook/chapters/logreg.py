"""Logistic regression by gradient ascent: the data and the NumPy reference.

One training iteration, the same on every device and in every chapter:
    scores   = labels - sigmoid(X @ w)
    gradient = X.T @ scores
    w       += rate * gradient
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


# ---------------------------------------------------------------------------
# What chapters 1-4 share: the benchmark, the seed's figures, launching and
# checking single-work-group training kernels, the NumPy baseline, plots.

import time
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import pyopencl as cl

from .. import launch
from ..device import check_work_group
from ..kernels import kernel as _kernel
from ..records import other_devices
from ..timing import stats, time_events

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

    def reference(self, iterations=None):
        """float64 weights after `iterations` (default: all) steps from w = 0."""
        n = self.iterations if iterations is None else iterations
        if n not in self._refs:
            self._refs[n] = train(self.X, self.labels, self.rate, n)
        return self._refs[n]


def problem(scale, J=None, K=None, iterations=None, seed=0):
    """The benchmark at this scale (`full`: the seed's J=2048, K=8, 50,000
    iterations; `small`: the same data, fewer iterations); arguments override."""
    size = dict(SIZES[scale])
    for name, value in (("J", J), ("K", K), ("iterations", iterations)):
        if value is not None:
            size[name] = value
    if size["iterations"] < 1:
        raise ValueError(f"iterations must be at least 1, got {size['iterations']}")
    X, labels = two_classes(size["J"], size["K"], seed=seed)
    return Problem(size["J"], size["K"], size["iterations"], X, labels, learning_rate(size["J"]))


def check_shape(device, step, J, K, work_items, defines):
    """Raise ValueError when kernels/logreg/<step>.cl cannot run this shape here."""
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
        if iterations < 1:
            raise ValueError(f"iterations must be at least 1, got {iterations}")
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


class Trainer:
    """A training set on the device and launches of single-work-group kernels."""

    def __init__(self, ctx, queue, prob):
        mf = cl.mem_flags
        self.queue, self.prob = queue, prob
        self.X = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=prob.X)
        self.labels = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=prob.labels)
        self.w = cl.Buffer(ctx, mf.READ_WRITE, 4 * prob.K)
        self.zeros = np.zeros(prob.K, np.float32)

    def launch(self, knl, work_items, iterations=None, w0=None):
        """Set w (default 0), then train `iterations` (default: the problem's)
        in one launch; returns the kernel's event."""
        n = self.prob.iterations if iterations is None else iterations
        start = self.zeros if w0 is None else np.asarray(w0, np.float32)
        compiled = knl.compiled(n, self.prob.rate)
        cl.enqueue_copy(self.queue, self.w, start)
        return compiled(self.queue, (work_items,), (work_items,), self.X, self.labels, self.w)

    def weights(self):
        out = np.empty(self.prob.K, np.float32)
        cl.enqueue_copy(self.queue, out, self.w)
        return out

    def train(self, knl, work_items, iterations=None, w0=None):
        """Weights after training (and the kernel's event)."""
        event = self.launch(knl, work_items, iterations, w0)
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


def benchmark(ctx, queue, scale, name, with_numpy=True):
    """How chapters 1-4 start: the benchmark at this scale, its training set on
    the device and (with_numpy) the NumPy baseline's iterations/s on the host;
    prints one line saying what runs where. Returns (prob, trainer, numpy_rate),
    numpy_rate None without with_numpy."""
    prob = problem(scale)
    trainer = Trainer(ctx, queue, prob)
    line = (f"{name}, scale {scale}: J={prob.J} examples, K={prob.K} features, "
            f"{prob.iterations:,} iterations, learning rate 1/J = {prob.rate:.3g}")
    numpy_rate = None
    if with_numpy:
        numpy_rate = prob.iterations / numpy_timing(prob).median
        line += f"; NumPy on the host CPU: {numpy_rate:,.0f} iterations/s"
    print(line)
    return prob, trainer, numpy_rate


def check(w, w_ref, tol=TOLERANCE):
    """Relative max-norm error of float32 weights; AssertionError beyond tol."""
    err = float(np.max(np.abs(np.asarray(w, np.float64) - w_ref)) / np.max(np.abs(w_ref)))
    assert err < tol, f"weights differ from the float64 reference by {err:.2e} (tolerance {tol:.0e})"
    return err


def numpy_timing(prob, iterations=None, repeats=3):
    """Wall-clock seconds of the same training in vectorised float32 NumPy on the host."""
    n = prob.iterations if iterations is None else iterations
    X, y, rate = prob.X, prob.labels, np.float32(prob.rate)
    times = []
    for _ in range(repeats):
        w = np.zeros(prob.K, np.float32)
        t0 = time.perf_counter()
        for _ in range(n):
            w += rate * (X.T @ (y - np.float32(1) / (np.float32(1) + np.exp(-(X @ w)))))
        times.append(time.perf_counter() - t0)
    check(w, prob.reference(n))
    return stats(times)


def sweep_work_items(trainer, device, steps, work_items, repeats=3, iterations=None):
    """Train with every step's kernel at every work-group size; each run's
    weights are checked against the float64 reference. steps: {label: (step,
    defines)}, defines a dict or a function of the work-group size. Returns
    sweep records (variant = label, x = work_items, rate in iterations/s)."""
    prob = trainer.prob
    n = prob.iterations if iterations is None else iterations
    w_ref = prob.reference(n)
    records = []
    for label, (step, defines) in steps.items():
        for N in work_items:
            d = defines(N) if callable(defines) else defines
            knl = build(trainer.queue.context, device, step, prob.J, prob.K, N, **d)
            timing, w = trainer.time(knl, N, repeats, n)
            check(w, w_ref)
            records.append(as_record(label, timing, n, work_items=N))
    return records


def work_item_counts(device, J, most=None):
    """Powers of two from 1 up to the device's work-group limit (and J, and `most`)."""
    top = min(launch.device_max(device), J, most or J)
    return [2**i for i in range(top.bit_length()) if 2**i <= top]


def best(records, variant):
    """The record with the highest rate among a variant's records."""
    return max((r for r in records if r["variant"] == variant), key=lambda r: r["rate"])


def reference_sweeps(chapter, device, key="sweep", variants=None, prefixes=None):
    """Recorded sweeps of this chapter on the book's other reference devices,
    as {device name: records} for plot_sweep's `references`.

    variants: keep only these variant names. prefixes: {prefix: label}: keep the
    variants whose name starts with a prefix, renamed to its label (for names
    that carry a device-dependent part, such as "fastest config, N = 128").
    Devices with no matching records are left out, so that a plot's legend
    never names a device it draws nothing for."""
    found = {}
    for entry in other_devices(chapter, device).values():
        recs = []
        for r in entry["data"].get(key, []):
            if prefixes is not None:
                label = next((lab for pre, lab in prefixes.items() if r["variant"].startswith(pre)), None)
                if label is not None:
                    recs.append({**r, "variant": label})
            elif variants is None or r["variant"] in variants:
                recs.append(r)
        if recs:
            found[entry["device"]] = recs
    return found


def device_label(entry):
    """A recorded device as the prose names it: its name and what it is
    ('NVIDIA H100 80GB HBM3, a GPU', '..., a CPU through PoCL')."""
    kind = entry["data"].get("kind") or entry["data"].get("summary", {}).get("type", "")
    kind = str(kind).lower() or ("cpu" if "cpu" in entry["device"].lower() else "")
    platform = entry.get("platform", "")
    if "cpu" in kind:
        what = "a CPU" + (" through PoCL" if "portable" in platform.lower() or "pocl" in platform.lower() else "")
    elif "gpu" in kind or "NVIDIA" in entry.get("vendor", "") or "AMD" in entry.get("vendor", ""):
        what = "a GPU"
    else:
        what = "another device"
    return f"{entry['device']}, {what}"


def reduction_only_timing(trainer, device, step, work_items, repeats=3, iterations=None):
    """Timing of `step` (work_items or tree) built with PER_ITEM=0: every
    iteration runs the reduction, its barriers and the update of w, but no
    example. What is left of an iteration without its examples (the weights
    stay 0, so nothing is checked: a measurement, not training)."""
    if step not in ("work_items", "tree"):
        raise ValueError(f"PER_ITEM=0 is a build option of work_items and tree, not of {step!r}")
    knl = build(trainer.queue.context, device, step, trainer.prob.J, trainer.prob.K, work_items, PER_ITEM=0)
    timing, _ = trainer.time(knl, work_items, repeats, iterations)
    return timing


def one_change_steps(device, J, K, work_items):
    """Chapter 4's way from the float4 kernel to fast.cl, one change per row, at
    one work-group size: [(label, step, defines)], each row adding one change to
    the row before. The local-memory rounds start at the smallest radix (2 if it
    fits) so that they match the float4 tree's one round per halving; the warp
    shuffle is last, and only where the device has it."""
    N = work_items
    radix = next((r for r in (2, 4, 8, 16) if fits(device, "fast", J, K, N, SHUFFLE=0, RADIX=r,
                                                    IN_REGS=0, SLICES=1)), None)
    if radix is None:
        raise ValueError(f"fast.cl does not fit {N} work-items on {device.name.strip()}")
    in_regs = fast_defines(device, J, N, shuffle=False)["IN_REGS"]
    d = {"SHUFFLE": 0, "RADIX": radix, "IN_REGS": 0, "SLICES": 1}
    rows = [("float4 + tree (step 4)", "float4", {}),
            (f"w in registers, every work-item updates it (local rounds of radix {radix})", "fast", dict(d))]
    d["SLICES"] = 0
    rows.append(("rows interleaved: neighbours read neighbouring rows", "fast", dict(d)))
    d["IN_REGS"] = in_regs
    rows.append((f"examples in registers ({in_regs} per work-item)", "fast", dict(d)))
    if radix != 16 and fits(device, "fast", J, K, N, **{**d, "RADIX": 16}):
        d["RADIX"] = 16
        rows.append(("local rounds of radix 16 (fewer barriers)", "fast", dict(d)))
    if has_warp_shuffle(device) and fits(device, "fast", J, K, N, **{**d, "SHUFFLE": 1}):
        d["SHUFFLE"] = 1
        rows.append(("warp shuffle, one barrier per iteration", "fast", dict(d)))
    return rows


def time_steps(trainer, device, steps, work_items, repeats=5):
    """Time each (label, step, defines) at one work-group size, checking every
    run's weights; returns records with `variant` = label and `kernel` = the
    compiled cl.Kernel (for gb.resource_table; not JSON: drop it before recording)."""
    prob = trainer.prob
    w_ref = prob.reference()
    out = []
    for label, step, defines in steps:
        knl = build(trainer.queue.context, device, step, prob.J, prob.K, work_items, **defines)
        timing, w = trainer.time(knl, work_items, repeats)
        check(w, w_ref)
        rec = as_record(label, timing, prob.iterations, work_items=work_items, step=step, defines=defines)
        rec["kernel"] = knl.compiled(prob.iterations, prob.rate)
        out.append(rec)
    return out


def step_rows(steps, numpy_rate):
    """Rows of the chapter's summary table. steps: list of (label, it/s)."""
    rows = [["kernel", "iterations/s", "vs previous row", "vs NumPy on the host"]]
    previous = None
    for label, rate in steps:
        rows.append([label, f"{rate:,.0f}",
                     "" if previous is None else f"{rate / previous:.2f}x",
                     f"{rate / numpy_rate:.2f}x"])
        previous = rate
    rows.append(["NumPy, float32, host CPU", f"{numpy_rate:,.0f}", "", "1.00x"])
    return rows


def plot_data(X, labels, w, ax):
    """The two classes seen in a 2-D slice through feature space: the learned
    direction w (across the decision boundary w·x = 0) against the direction of
    largest spread orthogonal to it."""
    u = np.asarray(w, np.float64) / np.linalg.norm(w)
    Xd = np.asarray(X, np.float64)
    rest = Xd - np.outer(Xd @ u, u)
    v = np.linalg.svd(rest - rest.mean(axis=0), full_matrices=False)[2][0]
    for cls, color in ((0, "tab:red"), (1, "tab:blue")):
        sel = labels == cls
        ax.scatter(Xd[sel] @ u, Xd[sel] @ v, s=4, alpha=0.5, color=color, label=f"label {cls}")
    ax.axvline(0.0, color="black", linewidth=1.2, label="decision boundary (w·x = 0)")
    ax.set_xlabel("x · w / |w|  (along the learned weights)")
    ax.set_ylabel("x · v  (widest orthogonal direction)")
    ax.legend(fontsize=8, markerscale=3)
    return ax


def as_record(variant, timing, n_iterations, **extra):
    """A tidy record of one timed kernel (rates in iterations/s)."""
    rec = {"variant": variant, **extra, "median_s": timing.median, "q20_s": timing.q20,
           "q80_s": timing.q80}
    rec["rate"], rec["rate_lo"], rec["rate_hi"] = timing.rate(n_iterations)
    return rec


def seed_lines(*names):
    """The seed's figures as (rate, label) lines for plot_sweep's `limits`."""
    return [(SEED_FIGURES[n], f"seed, {SEED_DEVICE}: {n}") for n in names]


def likelihood_curve(trainer, knl, work_items, checkpoints):
    """Log-likelihood of the kernel's weights after each checkpoint's number of
    iterations: one training run, stopped and resumed at every checkpoint."""
    w = np.zeros(trainer.prob.K, np.float32)
    done, curve = 0, []
    for n in checkpoints:
        if n > done:
            w, _ = trainer.train(knl, work_items, iterations=n - done, w0=w)
            done = n
        curve.append((n, log_likelihood(trainer.prob.X, trainer.prob.labels, w)))
    return curve, w


def plot_bars(bars, xlabel, title, device_name, limits=(), ax=None):
    """Horizontal bars on a log scale. bars: (label, value, kind) with kind one
    of 'this device', 'reference device', 'seed'; limits: (value, label) lines."""
    colors = {"this device": "tab:blue", "reference device": "tab:gray", "seed": "tab:orange"}
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 0.45 * len(bars) + 1.6))
    ys = np.arange(len(bars))[::-1]
    for y, (label, value, kind) in zip(ys, bars):
        ax.barh(y, value, color=colors[kind], hatch="//" if kind == "reference device" else None,
                edgecolor="white")
        ax.annotate(f"{value:,.0f}", xy=(value, y), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize=8)
    for value, label in limits:
        ax.axvline(value, color="black", linestyle=":", linewidth=1)
        ax.annotate(label, xy=(value, 1.0), xycoords=("data", "axes fraction"), xytext=(3, 3),
                    textcoords="offset points", fontsize=8)
    ax.set_yticks(ys, [b[0] for b in bars], fontsize=8)
    ax.set_xscale("log")
    values = [b[1] for b in bars] + [v for v, _ in limits]
    ax.set_xlim(min(values) / 2, max(values) * 4)
    ax.set_xlabel(xlabel)
    ax.set_title(f"{title}\n{device_name}", fontsize=11)
    ax.grid(True, axis="x", which="major", alpha=0.3)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c, hatch="//" if k == "reference device" else None)
               for k, c in colors.items() if any(b[2] == k for b in bars)]
    ax.legend(handles, [k for k in colors if any(b[2] == k for b in bars)], fontsize=8,
              loc="lower right")
    return ax


def sweep_examples(ctx, queue, device, sizes, variants, iterations, repeats=3, with_numpy=True):
    """Training speed against the number of examples J (K as in SIZES).

    variants: {label: (step, work_items, defines)}, defines a dict or a function
    of (J, work_items). iterations: a function of J. Every run is checked against
    the float64 reference. Returns records with x = `examples`; with_numpy adds
    the NumPy baseline on the host as the variant 'NumPy, host CPU'.
    """
    records = []
    for J in sizes:
        prob = problem("full", J=J, iterations=iterations(J))
        trainer = Trainer(ctx, queue, prob)
        w_ref = prob.reference()
        for label, (step, N, defines) in variants.items():
            d = defines(J, N) if callable(defines) else defines
            knl = build(ctx, device, step, J, prob.K, N, **d)
            timing, w = trainer.time(knl, N, repeats)
            check(w, w_ref)
            records.append(as_record(label, timing, prob.iterations, examples=J,
                                     iterations=prob.iterations))
        if with_numpy:
            timing = numpy_timing(prob, repeats=repeats)
            records.append(as_record("NumPy, host CPU", timing, prob.iterations, examples=J,
                                     iterations=prob.iterations))
    return records


def rates_at(ctx, queue, device, variants, J=None, K=None, iterations=20, repeats=3):
    """Iterations/s of a few kernels on one small problem (the exercises' knob
    turns): variants {label: (step, work_items, defines)}; every run's weights
    are checked against the float64 reference."""
    prob = problem("small", J=J, K=K, iterations=iterations)
    trainer = Trainer(ctx, queue, prob)
    w_ref = prob.reference()
    rates = {}
    for label, (step, N, defines) in variants.items():
        knl = build(ctx, device, step, prob.J, prob.K, N, **defines)
        timing, w = trainer.time(knl, N, repeats)
        check(w, w_ref)
        rates[label] = prob.iterations / timing.median
    return rates
