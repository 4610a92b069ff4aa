"""Chapters 1, 2 and 4: the causes read from hardware counters, as claims
(gpubook.claims); chapter 1's and 2's claims module re-exports them."""
from ...claims import claim
from ...counters import trusted_metrics

# --- causes read from hardware counters (gpubook.counters) ---------------------------
# `rows` is a chapter record's `counters` section ({kernel label: row}), `whose` the
# device that recorded it (gpubook.counters.stored). A row with a `why_not` says
# nothing; a claim that needs it is left unsettled, and its sentence says so.

def _defines(label):
    inside = label.partition("[")[2].rstrip("]")
    return dict(item.split("=", 1) for item in inside.split() if "=" in item)


def counter_label(rows, path, **defines):
    """The label of the counters row of kernel `path` (for example "logreg/naive.cl")
    built with exactly `defines` (the step size RATE aside), or a made-up label that
    gpubook.counters.table shows as "not profiled" where no row has them."""
    want = {k: str(v) for k, v in defines.items()}
    for label in rows:
        got = _defines(label)
        got.pop("RATE", None)
        if label.split(":")[0] == path and got == want:
            return label
    return f"{path}:train[" + " ".join(f"{k}={v}" for k, v in want.items()) + "]"


def counter_metrics(rows, path, **defines):
    """The metrics of that row, with its OpenCL time as `opencl_s`, where the row is
    trusted (its replay within 10% of the OpenCL time, its output equal); else None."""
    row = rows.get(counter_label(rows, path, **defines))
    metrics = trusted_metrics(row)
    return None if metrics is None else {**metrics, "opencl_s": row.get("opencl_s")}


def stall_share(metrics, reason):
    """A stall reason's share of the stall cycles; where it is not among the largest
    recorded, the smallest recorded share (an upper bound on it). None without metrics."""
    if not metrics or not metrics.get("stalls"):
        return None
    stalls = metrics["stalls"]
    return stalls.get(reason, min(stalls.values()))


def _get(metrics, key):
    return metrics.get(key) if metrics else None


def _ratio(a, b):
    return a / b if a is not None and b else None


def loop_order_counters(rows, whose, iters=10, J=2048, K=8):
    """Chapter 1, kind "cause", from `whose` counters of the three kernels at ITERS =
    `iters`: (1) a lone work-item is held by latency, not bandwidth: the L1 of its
    compute unit stays under 10% of its peak and almost every stall cycle
    is a wait on a result (long and short scoreboard, fixed-latency `wait`); (2) the
    naive kernel mostly waits on loads (long scoreboard); (3) reordering does not cut
    the instructions executed (within 10%) while the time falls by more than a quarter
    beyond that ratio: it waits less per instruction; (4) after merging, waiting on
    loads is no longer most of the stall cycles, and the fixed latency of dependent
    arithmetic (`wait`) is a larger share than the loads."""
    m = {k: counter_metrics(rows, f"logreg/{k}.cl", ITERS=iters, J=J, K=K, N=1)
         for k in ("naive", "reordered", "merged")}
    have = all(m.values())
    l1_top = max(x["l1_pct"] for x in m.values()) if have else None
    waits = (min(sum(stall_share(x, r) or 0 for r in ("long_scoreboard", "wait",
                                                       "short_scoreboard"))
                 for x in m.values()) if have else None)
    top_other = (max(max(x.get(k, 0) for k in ("dram_pct", "l2_pct", "sm_pct"))
                     for x in m.values()) if have else None)
    miss = ("Not settled from counters: {names} missing (" + str(whose)
            + " has no trusted counters row of a kernel at ITERS=" + str(iters) + ")")
    latency = claim(
        "lo_latency_not_bandwidth", "l1_top < 10 and waits > 0.8",
        "On " + str(whose) + "'s counters (one launch of " + str(iters) + " iterations "
        "each) the three kernels are held by latency, not bandwidth: the L1 of their "
        "compute unit ran at most {l1_top:.1f}% of its peak (DRAM, L2 and SM at most "
        "{top_other:.2f}%), and waits on a result were at least "
        "{waits:.0%} of every kernel's stall cycles",
        "On " + str(whose) + "'s counters the three kernels are not plainly held by "
        "latency: the L1 ran up to {l1_top:.1f}% of its peak, and waits on a result were "
        "as little as {waits:.0%} of a kernel's stall cycles",
        missing=miss, glue=False, kind="cause",
        l1_top=l1_top, waits=waits, top_other=top_other)
    ls = {k: stall_share(x, "long_scoreboard") for k, x in m.items()}
    naive = claim(
        "lo_naive_waits_on_loads", "ls_naive > 0.5",
        "The naive kernel's largest wait is on its loads: {ls_naive:.0%} of its stall "
        "cycles are long-scoreboard stalls, a warp waiting for a load from memory",
        "The naive kernel's loads are not its main wait: long-scoreboard stalls are "
        "{ls_naive:.0%} of its stall cycles",
        missing=miss, glue=False, kind="cause", ls_naive=ls["naive"])
    instr_ratio = _ratio(_get(m["naive"], "instructions"), _get(m["reordered"], "instructions"))
    gain = _ratio(_get(m["naive"], "opencl_s"), _get(m["reordered"], "opencl_s"))
    reorder = claim(
        "lo_reorder_waits_less", "abs(instr_ratio - 1) < 0.1 and gain > 1.25 * instr_ratio",
        "Reordering gains by waiting less, not by doing less: the reordered kernel "
        "executed {inv:.2f} times the naive kernel's instructions and ran {gain:.2f} times "
        "faster, its issue slots {issue_ratio:.2f} times as busy and its long-scoreboard "
        "share down from {ls_naive:.0%} to {ls_reordered:.0%}",
        "Reordering changed the instructions executed as much as the time: the naive "
        "kernel executed {instr_ratio:.2f} times the reordered kernel's instructions and "
        "took {gain:.2f} times as long",
        missing=miss, glue=False, kind="cause",
        instr_ratio=instr_ratio, gain=gain, inv=_ratio(1, instr_ratio),
        issue_ratio=_ratio(_get(m["reordered"], "issue_pct"), _get(m["naive"], "issue_pct")),
        ls_naive=ls["naive"], ls_reordered=ls["reordered"])
    merged = claim(
        "lo_merge_off_loads", "ls_merged < 0.5 < ls_reordered and wait_merged > ls_merged",
        "After merging, loads are no longer the main wait: long-scoreboard stalls fell "
        "from {ls_reordered:.0%} of the reordered kernel's stall cycles to {ls_merged:.0%}, "
        "and the largest share is now the fixed latency of dependent arithmetic "
        "(`wait`, {wait_merged:.0%})",
        "Merging did not move the main wait off the loads: long-scoreboard stalls are "
        "{ls_merged:.0%} of the merged kernel's stall cycles ({ls_reordered:.0%} for the "
        "reordered kernel), fixed-latency waits {wait_merged:.0%}",
        missing=miss, glue=False, kind="cause",
        ls_merged=ls["merged"], ls_reordered=ls["reordered"],
        wait_merged=stall_share(m["merged"], "wait"))
    return latency, naive, reorder, merged


def loop_order_labels(rows, iters=10, J=2048, K=8):
    """(heading, label) of the three kernels' counters rows for gpubook.counters.table."""
    return [(k, counter_label(rows, f"logreg/{k}.cl", ITERS=iters, J=J, K=K, N=1))
            for k in ("naive", "reordered", "merged")]


def _l1_work(metrics):
    """The L1's work in a launch, up to a constant: its throughput as % of peak times
    the launch's duration under the profiler."""
    return metrics["l1_pct"] * metrics["duration_s"] if metrics else None


def work_items_counters(rows, whose, J=2048, K=8, warp=32, big=1024, sums=(32, 128)):
    """Chapter 2, kind "cause", from `whose` counters of work_items.cl (one iteration per
    launch at N = 1, `warp` and `big`; the build without examples, PER_ITEM=0, at the
    two group sizes `sums`, 50,000 iterations):
    (1) the lanes of a warp share the instructions: up to one warp the occupancy stays
    put while the instructions fall by more than half of the `warp` times full sharing
    gives; (2) but the L1 does the same work (within 25%): each load of the warp reads
    a line per work-item, rows J/N apart; (3) past the peak the warps wait at the
    barrier: over half the stall cycles at N = `big`, under 10% at one warp; (4) the
    added warps wait rather than issue: occupancy grows over 16 times from one warp to
    `big`, the issue slots in use less than twice; (5) without examples the
    instructions grow in proportion to N (within 25%), work-item 0's serial sum of
    N*K numbers, while over half the stall cycles are the other warps at the barrier."""
    at = {n: counter_metrics(rows, "logreg/work_items.cl", ITERS=1, J=J, K=K, N=n)
          for n in (1, warp, big)}
    lo, hi = sums
    bare = {n: counter_metrics(rows, "logreg/work_items.cl", ITERS=50000, J=J, K=K, N=n,
                               PER_ITEM=0) for n in sums}
    miss = ("Not settled from counters: {names} missing (" + str(whose)
            + " has no trusted counters row of work_items.cl at a group size it needs)")
    instr_ratio = _ratio(_get(at[1], "instructions"), _get(at[warp], "instructions"))
    who = "On " + str(whose) + "'s counters (one iteration per launch), "
    share = claim(
        "wi_lanes_share_instructions", "instr_ratio > warp / 2 and occ_warp < 2 * occ_1",
        who + "from $N$ = 1 to {warp:.0f} work-items, one warp (occupancy {occ_1:.2f}% "
        "and {occ_warp:.2f}%), the instructions executed fell {instr_ratio:.1f} times: "
        "the lanes of a warp run each instruction for {warp:.0f} work-items' examples",
        who + "from $N$ = 1 to {warp:.0f} work-items the instructions executed fell only "
        "{instr_ratio:.1f} times (occupancy {occ_1:.2f}% and {occ_warp:.2f}%): the lanes "
        "do not share them as one warp would",
        missing=miss, glue=False, kind="cause", warp=warp, instr_ratio=instr_ratio,
        occ_1=_get(at[1], "occupancy_pct"), occ_warp=_get(at[warp], "occupancy_pct"))
    l1_ratio = _ratio(_l1_work(at[warp]), _l1_work(at[1]))
    lines = claim(
        "wi_l1_same_work", "abs(l1_ratio - 1) < 0.25 and instr_ratio > warp / 2",
        "The L1 did not share the work: its throughput times the duration changed "
        "{l1_ratio:.2f} times over the same range, so each load instruction of the warp "
        "reads a cache line per work-item, rows $J/N$ apart",
        "The L1's work (throughput times duration) changed {l1_ratio:.2f} times while the "
        "instructions fell {instr_ratio:.1f} times: the warp's loads are not one line per "
        "work-item",
        missing=miss, glue=False, kind="cause", l1_ratio=l1_ratio,
        instr_ratio=instr_ratio, warp=warp)
    b_big, b_warp = stall_share(at[big], "barrier"), stall_share(at[warp], "barrier")
    barrier = claim(
        "wi_barrier_past_peak", "b_big > 0.5 and b_warp < 0.1",
        "At $N$ = {big:.0f} the barrier holds {b_big:.0%} of the stall cycles, against at "
        "most {b_warp:.0%} with one warp: past the peak the warps wait at the barrier "
        "for work-item 0's serial sum",
        "The barrier holds {b_big:.0%} of the stall cycles at $N$ = {big:.0f} and up to "
        "{b_warp:.0%} with one warp: the counters do not show the warps waiting there",
        missing=miss, glue=False, kind="cause", big=big, b_big=b_big, b_warp=b_warp)
    occ_ratio = _ratio(_get(at[big], "occupancy_pct"), _get(at[warp], "occupancy_pct"))
    issue_ratio = _ratio(_get(at[big], "issue_pct"), _get(at[warp], "issue_pct"))
    idle = claim(
        "wi_warps_wait_not_issue", "occ_ratio > 16 and issue_ratio < 2",
        "From {warp:.0f} to {big:.0f} work-items the occupancy grew {occ_ratio:.0f} times, "
        "the issue slots in use only {issue_ratio:.2f} times ({issue_warp:.1f}% to "
        "{issue_big:.1f}%): the added warps mostly wait",
        "From {warp:.0f} to {big:.0f} work-items the occupancy grew {occ_ratio:.0f} times "
        "and the issue slots in use {issue_ratio:.2f} times: the added warps issue",
        missing=miss, glue=False, kind="cause", warp=warp, big=big, occ_ratio=occ_ratio,
        issue_ratio=issue_ratio, issue_warp=_get(at[warp], "issue_pct"),
        issue_big=_get(at[big], "issue_pct"))
    growth = _ratio(_get(bare[hi], "instructions"), _get(bare[lo], "instructions"))
    serial = claim(
        "wi_serial_sum_grows", "abs(growth / (hi / lo) - 1) < 0.25 and b_hi > 0.5",
        "Without examples (`PER_ITEM=0`, 50,000 iterations) the instructions grew "
        "{growth:.2f} times from $N$ = {lo:.0f} to {hi:.0f}, as work-item 0's serial sum "
        "of $N \\cdot K$ numbers grows, and at $N$ = {hi:.0f} the barrier holds {b_hi:.0%} "
        "of the stall cycles: the other warps wait for that sum",
        "Without examples (`PER_ITEM=0`) the instructions grew {growth:.2f} times from "
        "$N$ = {lo:.0f} to {hi:.0f}, and the barrier holds {b_hi:.0%} of the stall cycles "
        "at {hi:.0f}: the counters do not show a serial sum that grows with $N$ and that "
        "the others wait for",
        missing=miss, glue=False, kind="cause", growth=growth, lo=lo, hi=hi,
        b_hi=stall_share(bare[hi], "barrier"))
    return share, lines, barrier, idle, serial


def work_items_labels(rows, J=2048, K=8, sizes=(1, 32, 1024), sums=(32, 128)):
    """(heading, label) of chapter 2's counters rows for gpubook.counters.table."""
    return ([(f"N = {n}", counter_label(rows, "logreg/work_items.cl", ITERS=1, J=J, K=K,
                                        N=n)) for n in sizes]
            + [(f"N = {n}, no examples", counter_label(
                rows, "logreg/work_items.cl", ITERS=50000, J=J, K=K, N=n, PER_ITEM=0))
               for n in sums])
