"""Chapter 7: where a tile of the single-pass scan spends its time, read from inside
with the SM's cycle counter (4_single_pass.cl built with PHASES=1, NVIDIA only).

Work-item 0 of each work-group marks, for each tile it scans, the cycle at which the
tile's loads were issued, had arrived, the tile was scanned, its prefix was known
(the look-back) and it was written, with the SM it ran on. Per SM, the time-average
number of tiles between "issued" and "arrived" times the tile's bytes is the read
data the SM had asked for and not yet used: Little's law wants the copy rate times
the loaded latency of a load, per SM, in flight. The marks order the code around
them, so the marked build is timed beside the unmarked one.
"""
import numpy as np
import pyopencl as cl

from ... import clock
from ...kernels import KernelBuildError
from ...timing import time_events
from .steps import DEVICE_STEPS, DeviceScan, check_prefix

PHASES = ("load", "scan", "look_back", "write")
BUILDS = {"all of a work-item's loads first (the page's)": True,
          "each float4 stored as it comes": False}


def compare(scan_run, ds, ghz, repeats, rtol):
    """The single pass `ds` (a DeviceScan) built both ways of BUILDS: each checked
    against scan_run's float64 prefix sums (rtol of the total), timed (median of
    `repeats`), and its phases marked (`measure`): {label: {"s", "gbs", "phases"}};
    {} where the single pass fell back to reduce-then-scan (ds.fallback says why)."""
    if ds.fallback:
        return {}
    if ds.step != DEVICE_STEPS[1]:
        raise ValueError(f"compare: the phases are the single pass's, not {ds.step}'s")
    out, queue, n = {}, ds.queue, scan_run.n
    for label, first in BUILDS.items():
        shape = dict(ds.options, loads_first=first)
        build = DeviceScan(ds.ctx, queue, DEVICE_STEPS[1], **shape)
        build.enqueue(scan_run.src, scan_run.dst, n)
        check_prefix(scan_run.dst.get(), scan_run.ref, rtol)
        t = time_events(lambda: build.enqueue(scan_run.src, scan_run.dst, n),
                        repeats=repeats).median
        out[label] = {"s": t, "gbs": 8 * n / t / 1e9,
                      "phases": measure(ds.ctx, queue, scan_run.src, scan_run.dst, n, ghz,
                                        **shape)}
    return out


def table(compared):
    """compare's result as rows for gb.markdown_table: time, rate, and the median ns a
    tile spends in each phase (a dash where the phases were not marked)."""
    rows = [["build", "time (ms)", "GB/s", "loads (ns)", "scan (ns)", "look-back (ns)",
             "writes (ns)"]]
    for label, r in compared.items():
        ph = r["phases"]
        rows.append([label, f"{r['s'] * 1e3:.3f}", f"{r['gbs']:,.0f}"]
                    + [f"{ph[p]:,.0f}" if p in ph else "–" for p in PHASES])
    return rows


def measure(ctx, queue, src, dst, n, ghz, **shape):
    """One marked scan of n floats with DeviceScan(**shape): per phase the median ns
    a tile spends in it, per SM (median over SMs) the tiles in flight (issued, not
    yet arrived) and the tiles alive, and the read bytes in flight; or {"why_not"}."""
    why = clock.why_not(queue.device)
    if why or not ghz:
        return {"why_not": why or "no SM clock was measured to turn cycles into time"}
    try:
        ds = DeviceScan(ctx, queue, "4_single_pass", phases=True, **shape)
        ds.enqueue(src, dst, n)
        tiles = -(-n // ds.tile)
        got = np.empty((tiles, 6), np.uint64)
        cl.enqueue_copy(queue, got, ds.marks)
    except (cl.Error, KernelBuildError) as err:
        return {"why_not": f"the marked build did not build or run here: "
                           f"{str(err).splitlines()[0][:160]}"}
    return summarise(got, ghz, 4 * ds.tile)


def summarise(marks, ghz, tile_bytes):
    """The phases of marks (tiles x [SM, issued, arrived, scanned, known, written],
    cycles) at ghz, as `measure` returns them."""
    sm = marks[:, 0].astype(np.int64)
    t = marks[:, 1:].astype(np.int64)
    steps = np.diff(t, axis=1) / ghz                  # ns per phase, per tile
    if (steps < 0).any():
        raise ValueError("the SM cycle counter ran backwards within a tile")
    out = {name: float(np.median(steps[:, i])) for i, name in enumerate(PHASES)}
    in_flight, alive = [], []
    for s in np.unique(sm):
        mine = t[sm == s]
        span = mine[:, 4].max() - mine[:, 0].min()
        in_flight.append((mine[:, 1] - mine[:, 0]).sum() / span)
        alive.append((mine[:, 4] - mine[:, 0]).sum() / span)
    out.update(tile_ns=float(np.median(steps.sum(axis=1))), sms=len(in_flight),
               tiles_in_flight=float(np.median(in_flight)),
               tiles_alive=float(np.median(alive)),
               bytes_in_flight=float(np.median(in_flight)) * tile_bytes, ghz=ghz)
    return out
