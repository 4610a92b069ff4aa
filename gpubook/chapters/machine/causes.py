"""Chapter 0's and the machine page's causes, as claims (gpubook.claims): the FMA
roof against the SM clock, the L1's size from two sweeps, and what the counters of
the pointer chase, the read plateau and stride 1 show. The claims module re-exports them."""
from ...claims import claim
from ...counters import trusted_metrics
from ...curves import human_bytes


def _kib(n):
    return human_bytes(n) if n is not None else None


# --- causes: experiments and counters that could show another cause
def _metric(row, key):
    """A trusted counter row's metric, or None (no row, or a row with a why_not)."""
    metrics = trusted_metrics(row)
    return None if metrics is None else metrics.get(key)


def fma_clock_cause(fp32_gflops, ghz, lanes):
    """Chapter 0 (kind "cause"): the FMA loop's best rate against what the FP32 lanes
    give at the SM clock measured under that load (gpubook.clock): `lanes` FMA lanes of
    the whole device x 2 flops x `ghz`. If the clock and the lanes set the peak, the
    loop sits within 5% of that product (the loop's other instructions and its launch
    take a few percent); a loop held by anything else (issue, latency, a lower clock
    than the one read) would land further off."""
    model = None if not (ghz and lanes) else lanes * 2 * ghz
    return claim("fma_peak_at_clock", "abs(share - 1) < 0.05",
                 "The SMs ran at {ghz:.3f} GHz under this load (read with `%clock64` against "
                 "the GPU's nanosecond timer); {lanes:,.0f} FP32 lanes × 2 flops at that clock "
                 "give {model:,.0f} GFLOP/s, and the loop reached {share:.1%} of it: the lanes "
                 "and the clock they run at set the FP32 roof",
                 "The SMs ran at {ghz:.3f} GHz under this load; {lanes:,.0f} FP32 lanes × 2 "
                 "flops at that clock give {model:,.0f} GFLOP/s, and the loop reached "
                 "{share:.1%} of it, more than 5% away: lanes × clock do not account for the "
                 "roof here",
                 missing="The SM clock under load (the line above says whether it was read) "
                         "or this architecture's FP32 lanes are not known here, so the roof "
                         "is not set against lanes × clock",
                 glue=False, kind="cause", fp32_gflops=fp32_gflops, ghz=ghz, lanes=lanes,
                 model=model, share=None if model is None else fp32_gflops / model)


def l1_size_cause(wrapped, rotated, facts):
    """The machine page (kind "cause"): how much each compute unit's L1 holds, from the
    page's two read sweeps, against what OpenCL reports as its global-memory cache.
    Where the wrapped read (each compute unit re-reads its own 1/CU of the set) runs at
    least twice the rotated one (every compute unit reads the whole set, so only the L2
    serves it), most of its bytes come from a level closer than the L2: the L1 holds
    that part. The largest such set, over the compute units, is a lower bound on one
    L1; the next set of the sweep an upper bound. If OpenCL's figure were the L1's
    size, the wrapped read would lose its lead past 4x that figure."""
    cu = facts.get("compute_units") or 1
    from .probes import l1_bounds

    wrap = {r["bytes"]: r["rate"] for r in wrapped}
    rot = {r["bytes"]: r["rate"] for r in rotated or []}
    lo, hi = l1_bounds(wrapped, rotated)
    reported = facts.get("cache_per_cu_bytes") or (
        facts["cache_bytes"] / cu if facts.get("cache_bytes") else None)
    return claim("l1_holds_more_than_reported", "lo_cu > 4 * reported_cu",
                 "At " + str(_kib(lo)) + " the wrapped read ran at {wrap_lo:,.0f} GB/s, "
                 "{ratio_lo:.1f}× the rotated read's {rot_lo:,.0f} (the L2 alone): each "
                 "compute unit re-read its own " + str(_kib(lo / cu if lo else None))
                 + " from its L1. At " + str(_kib(hi)) + " (" + str(_kib(hi / cu if hi else None))
                 + " each) the lead fell to {ratio_hi:.1f}×. So one L1 holds at least the first, "
                 "{times:.1f} times the " + str(_kib(reported)) + " per compute unit "
                 "that OpenCL reports as its global-memory cache, and that figure is not the "
                 "L1's size",
                 "The wrapped read ran at twice the rotated one only up to " + str(_kib(lo))
                 + " (" + str(_kib(lo / cu if lo else None)) + " per compute unit), not "
                 "past 4 times the " + str(_kib(reported)) + " per compute unit that OpenCL "
                 "reports: the sweeps do not show an L1 larger than that figure",
                 missing="The rotated read sweep ran in the GPU order only, so each compute "
                         "unit's L1 is not measured here (nor set against OpenCL's figure)",
                 glue=False, kind="cause", lo=lo, hi=hi, lo_cu=lo / cu if lo else None,
                 reported_cu=reported, times=lo / cu / reported if lo and reported else None,
                 wrap_lo=wrap.get(lo), rot_lo=rot.get(lo),
                 ratio_lo=wrap[lo] / rot[lo] if lo else None,
                 ratio_hi=wrap[hi] / rot[hi] if hi else None)


def chase_latency_cause(row, whose):
    """The machine page (kind "cause"): the pointer chase's time is one load's latency
    only if nothing overlaps its loads: one warp on the device (occupancy under 5%, a
    handful of the 64 warps an SM holds) and that warp stalled waiting on memory
    (long scoreboard) for over 90% of its stalls. `row`: the chase's counter row."""
    occ, stalls = _metric(row, "occupancy_pct"), _metric(row, "stalls") or {}
    wait = stalls.get("long_scoreboard") if stalls else None
    return claim("chase_is_latency", "occupancy < 5 and wait > 0.9",
                 f"{whose}'s counters for the chase at its largest set: occupancy "
                 "{occupancy:.1f}% (one warp) and {wait:.1%} of its stalls waiting on a "
                 "load (long scoreboard): nothing overlaps the loads, so a step's time is "
                 "one load's latency",
                 f"{whose}'s counters for the chase: occupancy {{occupancy:.1f}}%, "
                 "{wait:.1%} of its stalls on a load: the step's time is not shown to be "
                 "one load's latency alone",
                 missing="No trusted counters of the pointer chase are recorded, so what its "
                         "time holds is not shown",
                 glue=False, kind="cause", occupancy=occ, wait=wait)


def read_l1_cause(row, whose):
    """The machine page (kind "cause"): the read kernel's profiled launch (the capture
    keeps a label's first launch at its largest size: the sweep's first working set)
    served from the L1s: L1 throughput over 80% of its peak while the L2 runs under
    10% and device memory under 1%. Were the L2 serving, its throughput would be high."""
    l1, l2, dram = (_metric(row, k) for k in ("l1_pct", "l2_pct", "dram_pct"))
    return claim("read_plateau_from_l1", "l1 > 80 and l2 < 10 and dram < 1",
                 f"{whose}'s counters for the read at the plateau: L1 at {{l1:.0f}}% of its "
                 "peak, L2 at {l2:.1f}% and device memory at {dram:.2f}%: the plateau's "
                 "bytes come from the L1s",
                 f"{whose}'s counters for the read at the plateau: L1 at {{l1:.0f}}%, L2 at "
                 "{l2:.1f}%, device memory at {dram:.2f}%: they do not show the L1s alone "
                 "serving it",
                 missing="No trusted counters of the read kernel are recorded, so which level "
                         "serves the plateau is not shown by counters",
                 glue=False, kind="cause", l1=l1, l2=l2, dram=dram)


def stride1_cause(row, whose, reads, warp=32):
    """The machine page (kind "cause"): the stride model divides by stride 1's time,
    taking it to be conflict-free. The profiled launch (the page's first, stride 1):
    no bank conflict counted, and one load wavefront per warp load (work-items / warp
    x `reads`), within 1%. A conflict anywhere would add wavefronts."""
    conflicts, waves = _metric(row, "shared_ld_conflicts"), _metric(row, "shared_ld_wavefronts")
    items = (row or {}).get("global") or [0]
    ideal = items[0] // warp * reads if reads else None
    return claim("stride1_conflict_free", "conflicts == 0 and abs(waves / ideal - 1) < 0.01",
                 f"{whose}'s counters at stride 1: {{conflicts:,.0f}} bank conflicts and "
                 "{waves:,.0f} local-load wavefronts, one per warp load ({ideal:,.0f}): the "
                 "base the slowdowns divide by has no conflict",
                 f"{whose}'s counters at stride 1: {{conflicts:,.0f}} bank conflicts, "
                 "{waves:,.0f} local-load wavefronts against {ideal:,.0f} warp loads: stride "
                 "1 is not conflict-free here",
                 missing="No trusted counters of the stride kernel are recorded, so stride 1 "
                         "is not shown conflict-free",
                 glue=False, kind="cause", conflicts=conflicts, waves=waves, ideal=ideal)


def queues_past_the_knee(loaded, read_gbs):
    """The machine page (kind "cause"): past the knee, more loads in flight only lengthen
    the queues. The read kernel's own loads, timed from inside at several launch sizes
    (gpubook.chapters.machine.loaded): from the knee (the smallest launch within 10% of
    the best rate) to the read kernel's full launch the rate grows by under 10%, and a
    load's wait grows by over 1.2 times as much as the rate: by Little's law the extra
    bytes in flight went into waiting, not into reading. Were memory still short of
    loads at the knee, the rate would grow with them and the wait would stay (as it does
    below the knee). `loaded`: loaded.measure's dict (why_not where not read)."""
    got = loaded if loaded and "knee" in loaded else {}
    knee, full = got.get("knee") or {}, got.get("full") or {}
    values = dict(alone=got.get("alone_ns"), knee_ns=knee.get("ns"), knee_gbs=knee.get("gbs"),
                  knee_items=knee.get("items_per_cu"), full_ns=full.get("ns"),
                  full_gbs=full.get("gbs"), full_items=full.get("items_per_cu"),
                  read_gbs=read_gbs)
    said = ("Timed from inside the read kernel with `%clock64`, a load waited {alone:,.0f} ns "
            "with one work-group on the device. Memory read {knee_gbs:,.0f} GB/s, within 10% "
            "of its best, from {knee_items:,.0f} work-items per compute unit, where a load "
            "waited {knee_ns:,.0f} ns; with the read kernel's {full_items:,.0f} it read "
            "{full_gbs:,.0f} GB/s and a load waited {full_ns:,.0f} ns")
    return claim("queues_past_the_knee",
                 "full_gbs < 1.1 * knee_gbs and full_ns / knee_ns > 1.2 * full_gbs / knee_gbs",
                 said + ": past the knee, more loads in flight only lengthen the queues, so "
                 "Little's law takes the knee's wait",
                 said + ": the read kernel's own launch is at or near the knee, so Little's law "
                 "takes the knee's wait",
                 missing="The latency under load is not measured here: "
                         + (loaded or {}).get("why_not", "no counter was read") + ". So "
                         "Little's law takes the pointer chase's latency, with the device "
                         "idle: the least that must be in flight",
                 glue=False, kind="cause", **values)
