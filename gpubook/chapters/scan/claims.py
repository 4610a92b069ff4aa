"""The sentences chapter 7 says about its measurements, as claims (gpubook.claims).
Each function takes what the run measured; the records' lists work as they are."""
import re

from ...claims import claim
from ...counters import trusted_metrics


def _said(name, relation, held, failed, missing, **values):
    """A claim whose sentences stand alone in an exercise's answer: each ends with a full stop."""
    return claim(name, relation, held + ".", failed + ".", missing + ".", **values)


def seed_rises(list_records, variant):
    """The seed's one-work-group scan at each work-group size: does its rate rise at every step?"""
    rows = sorted((r["work_items"], r["rate"]) for r in list_records if r["variant"] == variant)
    drops = sum(1 for (_, a), (_, b) in zip(rows, rows[1:]) if b <= a)
    return claim("scan_seed_rises", "drops == 0 and sizes > 1",
                 "keeps rising with the work-group, from {first:.2f} at WG = {wg0:.0f} to {last:.2f} at "
                 "WG = {wg1:.0f}",
                 "does not rise at every step of the work-group ({drops:.0f} of {steps:.0f} steps fall)",
                 drops=drops, sizes=len(rows), steps=max(len(rows) - 1, 0),
                 first=rows[0][1] if rows else None, last=rows[-1][1] if rows else None,
                 wg0=rows[0][0] if rows else None, wg1=rows[-1][0] if rows else None)


def population(pop_scan_s, pop_rank_s):
    """The rank-sum shortcut against the scan, per population."""
    return claim("scan_rank_few_pct", "1 < gain < 1.1",
                 "the shortcut is {gain:.2f}× faster, a few percent",
                 "the shortcut is {gain:.2f}× as fast: not a gain of a few percent",
                 gain=pop_scan_s / pop_rank_s)


def items_exercise(times, groups):
    """Exercise 1: step 2 at ITEMS = 2, 8 (and 32 where it fits): {ITEMS: seconds}, and
    `groups` the work-group size (its blocks hold ITEMS × groups labels)."""
    lo = min(times) if times else None
    hi = max(times) if len(times) > 1 else None
    ratio = times[hi] / times[lo] if hi else None
    fewer = hi / lo if hi else None
    faster = _said("scan_ex1_faster", "ratio < 1",
                   "ITEMS = {hi:.0f} took {ratio:.2f}× the time of ITEMS = {lo:.0f}, with {fewer:.0f}× fewer "
                   "blocks of {groups:.0f} work-items, so {fewer:.0f}× fewer work-group scans and barriers per "
                   "label",
                   "ITEMS = {hi:.0f} took {ratio:.2f}× the time of ITEMS = {lo:.0f}, though it has {fewer:.0f}× "
                   "fewer blocks: fewer barriers per label did not pay here",
                   "Only one ITEMS runs here", hi=hi, lo=lo, ratio=ratio, fewer=fewer, groups=groups)
    less = _said("scan_ex1_less_than_barriers", "ratio > 1 / fewer",
                 "The time fell less than the barriers per label ({ratio:.2f}× for {share:.2f}×): the rest "
                 "is each work-item's own chain of additions and the loads, which do not shrink with the "
                 "blocks",
                 "The time fell as much as the barriers per label or more ({ratio:.2f}× for {share:.2f}×)",
                 "Only one ITEMS runs here", ratio=ratio, fewer=fewer, share=1 / fewer if fewer else None)
    return faster, less


def look_exercise(times):
    """Exercise 2: the single pass with look-back windows of 1, 4 and the widest ({LOOK:
    seconds}). Its one claim: a window of 4 gets most of what the widest gets. (Whether
    the widest still pays beyond 4 depends on the tile shape: on an H200 it took 20% less
    time than 4 at 512 x 16 and 2% less at 256 x 32, so it is printed, not claimed.)"""
    wide = max(times)
    saved = times[1] - times[wide]
    most = _said("scan_ex2_four_most", "saved > 0 and share > 0.5",
                 "LOOK = 4 took {r4:.2f}× and LOOK = 1 {r1:.2f}× the time of LOOK = {wide:.0f}: a window of "
                 "4 saved {share:.0%} of what a window of {wide:.0f} saved over 1",
                 "LOOK = 4 took {r4:.2f}× and LOOK = 1 {r1:.2f}× the time of LOOK = {wide:.0f}: a window of "
                 "4 saved only {share:.0%} of what a window of {wide:.0f} saved over 1 (a share of "
                 "nothing where the widest window saved nothing)",
                 "The windows did not all run here", wide=wide, r4=times[4] / times[wide],
                 r1=times[1] / times[wide], saved=saved,
                 share=(times[1] - times[4]) / saved if saved > 0 else 0.0)
    return (most,)


def device_reading(sp_s, rts_s, lib_s):
    """Step 3's reading: the single pass against reduce-then-scan and against
    pyopencl.scan over the full array (seconds each)."""
    rts = claim("scan_single_beats_rts", "rts_s > sp_s",
                "Reduce-then-scan took {ratio:.2f}× the time of the single pass: reading the "
                "data once instead of twice is what the single pass is for",
                "Reduce-then-scan took {ratio:.2f}× the time of the single pass: reading the "
                "data twice did not cost it more here",
                sp_s=sp_s, rts_s=rts_s, ratio=rts_s / sp_s)
    lib = claim("scan_single_beats_lib", "lib_s > sp_s",
                "The single pass is {ratio:.1f}× faster than `pyopencl.scan`",
                "`pyopencl.scan` took {ratio:.2f}× the time of the single pass: it is not slower here",
                sp_s=sp_s, lib_s=lib_s, ratio=lib_s / sp_s)
    return rts, lib


def population_lead(pop_records, host="NumPy on the host"):
    """Step 4's sweep over n: the faster kernel's rate over NumPy's at every size."""
    by = {}
    for r in pop_records:
        by.setdefault(r["examples"], {})[r["variant"]] = r["rate"]
    leads = {n: max(v for k, v in rates.items() if k != host) / rates[host]
             for n, rates in by.items() if host in rates and len(rates) > 1}
    low = min(leads, key=leads.get) if leads else None
    return claim("scan_pop_lead_holds", "lowest > 1",
                 "The sweep over $n$ shows the lead over NumPy holding at every size, from "
                 "{n0:,.0f} to {n1:,.0f} examples per model (at least {lowest:,.0f}×)",
                 "The lead over NumPy does not hold at every size of the sweep: {lowest:.2f}× "
                 "at $n$ = {n_low:,.0f}",
                 lowest=leads[low] if leads else None, n_low=low,
                 n0=min(leads) if leads else None, n1=max(leads) if leads else None)


def bytes_set_pace(sp_s, rts_s, floats, copy_gbs):
    """Why the single pass is fastest (a cause): each device-wide scan's time follows the
    bytes it moves, 8 per float for the single pass (one read, one write) and 12 for
    reduce-then-scan (two reads, one write), near chapter 0's copy rate (`copy_gbs`,
    read + write). It fails if either kernel falls well short of the copy rate by its own
    bytes (arithmetic or the wait between work-groups would set its pace), or if the
    ratio of their times strays from the ratio of their bytes, 12 / 8."""
    sp_copy_s = 8 * floats / (copy_gbs * 1e9) if floats and copy_gbs else None
    rts_copy_s = 12 * floats / (copy_gbs * 1e9) if floats and copy_gbs else None
    return claim("scan_bytes_set_pace",
                 "sp_frac >= 0.75 and rts_frac >= 0.75 and abs(ratio / traffic - 1) < 0.1",
                 "By the bytes each one moves, the single pass runs at {sp_frac:.0%} of the copy "
                 "rate (8 bytes per float) and reduce-then-scan at {rts_frac:.0%} (12 bytes: it "
                 "reads the data twice), and reduce-then-scan takes {ratio:.2f}× the single pass's "
                 "time for {traffic:.1f}× its bytes: both go at the pace of their memory traffic, "
                 "so the second read, not arithmetic or synchronisation, is what it costs",
                 "By the bytes each one moves, the single pass runs at {sp_frac:.0%} of the copy "
                 "rate (8 bytes per float) and reduce-then-scan at {rts_frac:.0%} (12 bytes), and "
                 "reduce-then-scan takes {ratio:.2f}× the single pass's time for {traffic:.1f}× its "
                 "bytes: the times do not both follow the bytes near the copy rate here, so "
                 "something besides the traffic (arithmetic, or the wait between work-groups) "
                 "sets the pace",
                 kind="cause", sp_s=sp_s, rts_s=rts_s, floats=floats, copy_gbs=copy_gbs,
                 sp_copy_s=sp_copy_s, rts_copy_s=rts_copy_s, traffic=12 / 8,
                 sp_frac=sp_copy_s / sp_s if sp_copy_s and sp_s else None,
                 rts_frac=rts_copy_s / rts_s if rts_copy_s and rts_s else None,
                 ratio=rts_s / sp_s if sp_s and rts_s else None)


def loads_first_cause(compared, why=None):
    """Why the single pass asks for all of a work-item's floats before it stores any
    (a cause, from gpubook.chapters.scan.phases.compare): stored as it comes, each
    float4 waits for its load before the next load is issued, so a tile's loads take
    longer, and the whole pass with them. The claim: the marked tile's loads take more
    than 1.5 times as long, and the whole pass, timed unmarked, longer. Were the loads
    overlapped either way (the compiler free to hoist them), the two load phases would
    match. `why`:
    the reason nothing was compared, where nothing was (no single pass here)."""
    first, each = (list(compared.values()) + [{}, {}])[:2]
    fast, slow = (first.get("phases") or {}).get("load"), (each.get("phases") or {}).get("load")
    return claim("scan_loads_first_overlap", "load_ratio > 1.5 and time_ratio > 1",
                 "Stored as it comes, each float4 waits for its load before the next "
                 "is asked for: a tile's loads take {slow:,.0f} ns instead of "
                 "{fast:,.0f} ns ({load_ratio:.1f}×), and the whole single pass, timed "
                 "unmarked, takes {time_ratio:.2f}× the time",
                 "Stored as it comes or not, a tile's loads take about as long "
                 "({slow:,.0f} ns against {fast:,.0f} ns, {load_ratio:.1f}×; the whole "
                 "single pass, timed unmarked, {time_ratio:.2f}× the time): the compiler "
                 "overlaps the loads either way here",
                 "A tile's phases were not timed here: "
                 + (why or (first.get("phases") or {}).get("why_not") or "no marked build ran"),
                 kind="cause", fast=fast, slow=slow,
                 load_ratio=slow / fast if fast and slow else None,
                 time_ratio=each["s"] / first["s"] if first.get("s") and each.get("s")
                 else None)


# --- causes read from hardware counters (gpubook.counters) ---------------------------

HS = "scan/wg_scan.cl+scan/1_hillis_steele.cl:fitness_hs[T=uint WG={wg}]"
WE = "scan/wg_scan.cl+scan/2_work_efficient.cl:fitness_we[ITEMS=8 T=uint WG={wg}]"


def counted(step1, step2):
    """(heading, kernel label) pairs for gb.counters.table: step 1 at the work-group
    sizes `step1` and step 2 at `step2`, as the counters record name them."""
    return ([(f"step 1, WG = {wg}", HS.format(wg=wg)) for wg in step1]
            + [(f"step 2, WG = {wg}", WE.format(wg=wg)) for wg in step2])


def _trusted(rows, template):
    """{WG: metrics} of the rows of one kernel whose replay is trusted."""
    out = {}
    for label, row in (rows or {}).items():
        m = re.fullmatch(r"(\d+)".join(map(re.escape, template.split("{wg}"))), label)
        if m and trusted_metrics(row) is not None:
            out[int(m.group(1))] = row["metrics"]
    return out


def _barrier(metrics):
    """The share of stall cycles at a barrier (0 where it is not among the recorded
    largest reasons, which the counters keep four of)."""
    return (metrics.get("stalls") or {}).get("barrier", 0.0)


def seed_lanes_cause(rows, whose):
    """Step 1's rise with the work-group (scan_seed_rises), its cause read from the
    counters of `whose`: more work-items give the one compute unit more warps to
    issue from. If so, its issue slots fill as the work-group grows: busy more than
    twice as often at the largest trusted size as at the smallest, which holds 1/32 of
    the warps or fewer. A rise with idle issue slots would come from somewhere else
    (fewer blocks, each a fixed cost)."""
    hs = _trusted(rows, HS)
    lo, hi = (min(hs), max(hs)) if len(hs) > 1 else (None, None)
    return claim("scan_seed_issue_fills", "issue_hi > 2 * issue_lo",
                 "The {whose}'s counters show why: from WG = {lo:.0f} to {hi:.0f} the "
                 "compute unit's issue slots went from {issue_lo:.0f}% to {issue_hi:.0f}% "
                 "busy, as more warps give it more to issue",
                 "The {whose}'s counters do not show more warps filling the compute unit: "
                 "from WG = {lo:.0f} to {hi:.0f} its issue slots went from "
                 "{issue_lo:.0f}% to {issue_hi:.0f}% busy (the test: more than twice)",
                 "Step 1 has trusted counters at fewer than two work-group sizes here "
                 "({names} missing)",
                 glue=False, kind="cause", whose=whose, lo=lo, hi=hi,
                 issue_lo=hs[lo].get("issue_pct") if lo else None,
                 issue_hi=hs[hi].get("issue_pct") if hi else None)


def seed_barrier_cause(rows, whose):
    """Why step 1 gains less than its work-items, read from the counters of `whose`:
    each of its 2·log2(WG) + 2 barriers per block waits for every warp of the group,
    so the larger the group, the larger the share of stall cycles at barriers. The
    claim: at the largest trusted work-group the barrier is the largest stall reason
    and its share is more than twice that at the smallest. With one warp a barrier is
    almost free; were the additions or the loads what the warps wait for, another
    reason would lead."""
    hs = _trusted(rows, HS)
    lo, hi = (min(hs), max(hs)) if len(hs) > 1 else (None, None)
    top = next(iter(hs[hi].get("stalls") or {}), None) if hi else None
    return claim("scan_seed_barriers_grow", "b_hi > 2 * b_lo and top == 'barrier'",
                 "Its barriers take a growing share of the stall cycles the {whose} "
                 "counted: {b_lo:.0%} at WG = {lo:.0f}, {b_hi:.0%} at {hi:.0f}, where they "
                 "lead every other reason",
                 "On the {whose} its barriers do not take over: {b_lo:.0%} of the stall "
                 "cycles at WG = {lo:.0f}, {b_hi:.0%} at {hi:.0f}, where the largest reason "
                 "is {top} (the test: more than twice, and the largest)",
                 "Step 1 has trusted counters at fewer than two work-group sizes here "
                 "({names} missing)",
                 glue=False, kind="cause", whose=whose, lo=lo, hi=hi, top=top,
                 b_lo=_barrier(hs[lo]) if lo else None, b_hi=_barrier(hs[hi]) if hi else None)


def _barrier_time(metrics):
    """The cycles the warps spent at barriers, up to a factor that is the same for
    every launch of one work-group of the same size: the barrier's share of the stall
    cycles times the kernel's time (its warps stall for nearly all of that time:
    each issues a few percent of the cycles), or None without a time."""
    duration = metrics.get("duration_s")
    return _barrier(metrics) * duration if duration else None


def work_efficient_barrier_cause(rows, whose):
    """Step 2's cause, read from the counters of `whose`: its work-group scan has half
    the barriers per round, and eight labels per work-item share it, so at the same
    work-group size (the same warps, on the same list) its warps must spend under half
    of step 1's cycles at barriers, at every size where both have trusted counters.
    Cycles, not shares: a step that removes other stalls too keeps its barrier share
    (on an H200 at WG = 128, 11% against step 1's 13%, in under a fifth of the time)."""
    hs, we = _trusted(rows, HS), _trusted(rows, WE)
    both = sorted(w for w in set(hs) & set(we)
                  if _barrier_time(hs[w]) and _barrier_time(we[w]) is not None)
    worst = max((_barrier_time(we[w]) / _barrier_time(hs[w]) for w in both), default=None)
    sizes = ", ".join(str(w) for w in both)
    return claim("scan_we_fewer_barrier_stalls", "worst < 0.5",
                 "The {whose}'s counters show the barriers it saves: at WG = " + sizes
                 + " its warps spend at most {worst:.0%} of step 1's cycles at barriers "
                 "(each kernel's share of stall cycles at barriers times its time)",
                 "The {whose}'s counters do not show the barriers it saves: at WG = "
                 + sizes + " its warps spend up to {worst:.0%} of step 1's cycles at "
                 "barriers (the test: under half)",
                 "Steps 1 and 2 have no trusted counters at a common work-group size here "
                 "({names} missing)",
                 glue=False, kind="cause", whose=whose, worst=worst)
