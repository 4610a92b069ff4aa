"""Chapters 1-4, measured: the timings of the trainers of `training` against
NumPy, the sweeps over work-items and examples, the one-change step tables,
and the records other devices left for comparison."""
import time

import numpy as np

from ... import launch
from ...logistic import log_likelihood
from ...records import other_devices
from ...timing import stats
from .training import (SEED_DEVICE, SEED_FIGURES, TOLERANCE, Trainer, build, fast_defines, fits, has_warp_shuffle,
                       problem)


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
