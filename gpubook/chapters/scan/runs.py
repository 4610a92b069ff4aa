"""The runs both pages of chapter 7 make (the main line and its Going-further page):
the list of labels and its work-group sweep, the device-wide scans checked and timed
over their tile shapes and lengths, and the population sweep. Each function is one
step of the chapter, so that a page calls it instead of copying the other's cells."""
import time
import types
import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from pyopencl.scan import InclusiveScanKernel

from ... import launch
from ...timing import stats, sweep, time_events
from .steps import (DEVICE_STEPS, LIST_STEPS, DeviceScan, ListFitness, Population,
                    ShuffleUnavailable, fitness_reference, list_sizes, make_population,
                    order, tile_shapes)

SCAN_RTOL = 1e-5     # of the total: float32 sums of up to n positive floats
POP_TOL = 1e-6


def list_run(ctx, queue, device, scores, labels, n_list):
    """Steps 1 and 2 built at every work-group size the device runs, each checked
    against the float64 fitness of the best model's sorted labels repeated to
    `n_list`: a namespace of the labels' buffer, the kernels and the skipped sizes."""
    ref = fitness_reference(scores, labels)
    list_labels = np.resize(labels[order(scores[int(np.argmax(ref))])].astype(np.int32),
                            n_list)
    list_ref = fitness_reference(-np.arange(n_list, dtype=np.float64), list_labels)
    buf = cla.to_device(queue, list_labels)
    kernels, skipped = {}, []
    for step in LIST_STEPS:
        for wg in list_sizes(device):       # 32 to 1024, or what a small device runs
            try:
                kernels[step, wg] = ListFitness(ctx, queue, step, wg=wg)
            except launch.LaunchError as err:  # more work-items or local memory
                skipped.append(f"{step}, WG={wg}: {err}")
                continue
            got = kernels[step, wg].fitness(buf, n_list)
            assert abs(got - list_ref) < 1e-12, (step, wg, got, list_ref)
    return types.SimpleNamespace(buf=buf, ref=list_ref, n=n_list, kernels=kernels,
                                 skipped=skipped)


def list_sweep(lists):
    """Both steps timed at every work-group size built: records of labels per second."""
    wgs = sorted({wg for _, wg in lists.kernels})
    records = sweep(
        "work_items", wgs, list(LIST_STEPS),
        lambda step, wg: time_events(
            lambda: lists.kernels[step, wg].enqueue(lists.buf, lists.n), repeats=5)
        if (step, wg) in lists.kernels else stats([np.nan]),
        amount=lambda step, wg: lists.n / 1e9)
    return [r for r in records if np.isfinite(r["median_s"])]


def device_run(ctx, queue, device, n_scan):
    """Reduce-then-scan and the single pass at each tile shape that fits (with the
    warp-shuffle variants where the platform has them) and pyopencl.scan, each checked
    against the float64 prefix sums at lengths that do and do not fill their tiles."""
    host = np.random.default_rng(5).random(n_scan, dtype=np.float32)
    src = cla.to_device(queue, host)
    dst = cla.empty_like(src)
    ref = np.cumsum(host, dtype=np.float64)
    # each step is timed at each of the device's tile shapes (steps.tile_shapes), and the
    # fastest is the step's: on an H200 (2026-11-29, the single pass with warp shuffles at
    # 2^28 floats) 256 x 32 ran at 95% of chapter 0's copy rate, 512 x 16 at 93%, 1,024 x 8
    # at 73%
    shapes, shapes_skipped = tile_shapes(device)
    scans = {}
    for step in DEVICE_STEPS:
        for wg, items in shapes:
            try:
                scans[f"{step}, WG={wg}, ITEMS={items}"] = DeviceScan(ctx, queue, step,
                                                                      wg=wg, items=items)
            except launch.LaunchError as err:  # the built kernel allows fewer work-items
                shapes_skipped.append(((wg, items), f"{step}: {err}"))
        if not any(k.startswith(f"{step}, ") for k in scans):
            # no shape fits the built kernels (llvmpipe's allow 32): their largest
            ds = DeviceScan(ctx, queue, step, items=shapes[0][1])
            scans[f"{step}, WG={ds.wg}, ITEMS={shapes[0][1]}"] = ds
    shuffle_skipped = []
    for step in DEVICE_STEPS:
        for wg, items in shapes:
            try:
                scans[f"{step}, WG={wg}, ITEMS={items}, warp shuffle"] = DeviceScan(
                    ctx, queue, step, wg=wg, items=items, shuffle=True)
            # not NVIDIA, no PTX, or too many work-items
            except (ShuffleUnavailable, launch.LaunchError) as err:
                shuffle_skipped.append(str(err))
    for m_ in (n_scan, n_scan - 12_345, 1):
        for name, ds in scans.items():
            ds.enqueue(src, dst, m_)
            err = np.max(np.abs(dst.get()[:m_] - ref[:m_])) / ref[m_ - 1]
            assert err < SCAN_RTOL, (name, m_, err)
    # PyOpenCL's scan has a non-empty compiler log on some drivers: chatter
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)
        lib_scan = InclusiveScanKernel(ctx, np.float32, "a + b", neutral="0")
        lib_scan(src, dst, queue=queue)
    assert np.max(np.abs(dst.get() - ref)) / ref[-1] < SCAN_RTOL
    return types.SimpleNamespace(host=host, src=src, dst=dst, ref=ref, n=n_scan,
                                 queue=queue, scans=scans, lib_scan=lib_scan,
                                 shapes_skipped=shapes_skipped,
                                 shuffle_skipped=shuffle_skipped)


def time_scan(run, name, m_, repeats):
    """The time of one scan of `run` (a name of run.scans, or "pyopencl.scan") over
    the first `m_` floats."""
    if name == "pyopencl.scan":
        def launch_lib():
            run.lib_scan(run.src[:m_], run.dst[:m_], queue=run.queue)
            start = cl.enqueue_marker(run.queue)
            run.lib_scan(run.src[:m_], run.dst[:m_], queue=run.queue)
            return [start, cl.enqueue_marker(run.queue)]
        return time_events(launch_lib, repeats=repeats)
    return time_events(lambda: run.scans[name].enqueue(run.src, run.dst, m_),
                       repeats=repeats)


def shape_times(run, repeats):
    """(median time of each scan at the full length, the fastest shape of each step)."""
    times = {name: time_scan(run, name, run.n, repeats).median for name in run.scans}
    best_of = {step: min((n_ for n_ in run.scans if n_.startswith(step)), key=times.get)
               for step in DEVICE_STEPS}
    return times, best_of


def scan_sweep(run, best_of, first_power, repeats):
    """Each step's best shape and pyopencl.scan over lengths 2^first_power, ... up to
    run.n by factors of 4: records of GB/s (read + write)."""
    sizes = [2**k for k in range(first_power, run.n.bit_length(), 2)]
    variants = [best_of[s] for s in DEVICE_STEPS] + ["pyopencl.scan"]
    return sweep("floats", sizes, variants,
                 lambda v, m_: time_scan(run, v, m_, repeats),
                 amount=lambda v, m_: 8 * m_ / 1e9)


def numpy_scan_s(run, tries=3):
    """The median time of np.cumsum over the host copy (one core)."""
    times = []
    for _ in range(tries):
        t0 = time.perf_counter()
        np.cumsum(run.host)
        times.append(time.perf_counter() - t0)
    return stats(times).median


def population_sweep(ctx, queue, models, pop_sizes, variants):
    """Both population kernels (`variants`: sort + scan, sort + rank sum) timed on
    `models` models at each n of `pop_sizes`, and NumPy on the host: (the kernels by
    (variant, n), records of models per second, NumPy's time by n)."""
    data = {n_: make_population(models, n_) for n_ in pop_sizes}
    objs = {(v, n_): Population(ctx, queue, n_, shortcut=(v == "sort + rank sum"))
            for v in variants for n_ in pop_sizes}
    bufs = {key: obj.upload(*data[key[1]]) for key, obj in objs.items()}
    records = sweep("examples", pop_sizes, list(variants),
                    lambda v, n_: time_events(lambda: objs[v, n_].enqueue(*bufs[v, n_]),
                                              repeats=5),
                    amount=lambda v, n_: models)
    numpy_pop = {}
    for n_ in pop_sizes:
        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            fitness_reference(*data[n_])
            times.append(time.perf_counter() - t0)
        numpy_pop[n_] = min(times)
        records.append({"variant": "NumPy on the host", "examples": n_,
                        "median_s": numpy_pop[n_],
                        "q20_s": numpy_pop[n_], "q80_s": numpy_pop[n_],
                        "rate": models / numpy_pop[n_]})
    return objs, records, numpy_pop


def population_sizes(full, n_pop):
    """The n of the population sweep: 256 to 4096 at full scale, 64 to 512 small."""
    return [s for s in (256, 512, 1024, 2048, 4096) if s <= n_pop] if full \
        else [64, 128, 256, 512]


def others_note(others):
    """One line per other device's record (gb.other_devices): its single pass and
    np.cumsum in GB/s at its own length, or "none"."""
    def single_pass_gbs(d):
        best = min(r["median_s"] for r in d["scan_sweep"]
                   if r["floats"] == d["n_scan"] and r["variant"].startswith(DEVICE_STEPS[1]))
        return 8 * d["n_scan"] / best / 1e9

    return "; ".join(f"{e['device']} ({e['scale']} scale): single pass "
                     f"{single_pass_gbs(e['data']):,.0f} GB/s, np.cumsum "
                     f"{8 * e['data']['n_scan'] / e['data']['numpy_scan_s'] / 1e9:,.1f} GB/s"
                     for e in others.values()) or "none"
