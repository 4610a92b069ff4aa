"""The sentences chapter 8 says about its measurements, as claims (gpubook.claims), and
the comparisons with cuSOLVER in words where no NVIDIA library ran (never NaN)."""
import re

from ...claims import claim
from ...counters import trusted_metrics
from ...records import device_slug, load_results

NO_VENDOR = "no NVIDIA library could be measured on this device"


def _said(name, relation, held, failed, missing, **values):
    """A claim whose sentences stand alone in an exercise's answer: each ends with a full stop."""
    return claim(name, relation, held + ".", failed + ".", missing + ".", **values)


def times_vendor(seconds, vendor_s, what="cuSOLVER's time"):
    """'1.23× cuSOLVER's time', or why there is no such figure."""
    if not vendor_s:
        return f"not compared with cuSOLVER: {NO_VENDOR}"
    return f"{seconds / vendor_s:.2f}× {what}"


def step3_against_cusolver(step3_s, cusolver_s):
    return claim("lsq_step3_vs_cusolver", "ratio > 1",
                 "cuSOLVER's QR took {cusolver_s:.3f} s on this GPU in the same run, and step 3 takes "
                 "{ratio:.1f}× its time",
                 "cuSOLVER's QR took {cusolver_s:.3f} s on this GPU in the same run, and step 3 takes "
                 "less ({ratio:.2f}× its time)",
                 missing="cuSOLVER's QR has no time here: " + NO_VENDOR,
                 cusolver_s=cusolver_s or None, ratio=step3_s / cusolver_s if cusolver_s else None)


def recorded_f64_mma(device, root=None):
    """(GFLOP/s, shape) of chapter 0's FP64 mma loop as recorded for this device, else (None, None)."""
    entry = load_results("00_device", root).get(device_slug(device))
    return (None, None) if entry is None else f64_mma_in(entry["data"])


def f64_mma_in(data):
    """(GFLOP/s, shape) of the FP64 mma loop in chapter 0's record data. Older records name
    the shape only in their check line."""
    rate = data.get("limits", {}).get("fp64_mma_gflops")
    tensor = data.get("tensor", {})
    shape = tensor.get("shapes", {}).get("fp64_mma_gflops")
    if shape is None:
        found = re.match(r"(m\d+n\d+k\d+) FP64", tensor.get("checks", {}).get("f64", ""))
        shape = found and found.group(1)
    return rate, shape


def fp64_tensor_cores(mma_gflops, shape, fma_gflops, own_shape):
    """cuSOLVER's products may run on the FP64 tensor cores: what chapter 0 measured them
    at, against the FP64 FMA chains. The shape decides it: a device's own shape runs above
    the FMA rate (Hopper's m16n8k4 about twice it), Ampere's m8n8k4 on Hopper at it."""
    own = 1 if shape is not None and shape == own_shape else 0
    ratio = mma_gflops / fma_gflops if mma_gflops and fma_gflops else None
    if own:
        tail = "this device's own shape, so the tensor cores add FP64 rate that the FMA units lack"
        other = "this device's own shape, yet no faster than the FMA chains"
    else:
        tail = (f"not this device's own shape ({own_shape}), and chapter 0 recorded no rate for "
                "the device's own shape here")
        other = f"not this device's own shape ({own_shape}), yet above the FMA rate"
    return claim("lsq_fp64_tensor", "(ratio > 1.5) == (own == 1)",
                 "chapter 0 measured the FP64 tensor cores (`mma.sync` {shape}) at {mma:,.0f} GFLOP/s against "
                 "{fma:,.0f} for the FP64 FMA chains, {ratio:.2f}× their rate: " + tail,
                 "chapter 0 measured the FP64 tensor cores (`mma.sync` {shape}) at {mma:,.0f} GFLOP/s against "
                 "{fma:,.0f} for the FP64 FMA chains, {ratio:.2f}× their rate: " + other,
                 missing="chapter 0 recorded no FP64 tensor-core rate for this device",
                 mma=mma_gflops, fma=fma_gflops, ratio=ratio, shape=shape, own=own)


def row_group_exercise(rates):
    """Exercise 1: rows of n = 24 added by work-groups of each size ({size: rows/s})."""
    best = max(rates, key=rates.get) if rates else None
    worst = min(rates, key=rates.get) if rates else None
    return _said("lsq_ex1_spread", "share > 0.8",
                 "WG = {best_wg:.0f} added rows fastest ({best:,.0f} rows/s), and the slowest size, "
                 "WG = {worst_wg:.0f}, ran at {share:.2f}× that rate: at this width the group size moves "
                 "the rate by less than a fifth",
                 "WG = {best_wg:.0f} added rows fastest ({best:,.0f} rows/s), and the slowest size, "
                 "WG = {worst_wg:.0f}, ran at {share:.2f}× that rate: at this width the group size matters",
                 "Fewer than two work-group sizes run here",
                 best_wg=best, worst_wg=worst if len(rates) > 1 else None,
                 best=rates.get(best), share=rates[worst] / rates[best] if len(rates) > 1 else None)


def panel_share_exercise(shares):
    """Exercise 2: house_step's share of step 3's kernel time at each panel width ({width: %})."""
    narrow, wide = (min(shares), max(shares)) if len(shares) > 1 else (None, None)
    return _said("lsq_ex2_share", "wide_pct >= narrow_pct",
                 "In step 3's run above, `house_step` took {narrow_pct:.0f}% of the kernel time with panels "
                 "of {narrow:.0f} columns and {wide_pct:.0f}% with {wide:.0f}: its share did not fall as the "
                 "panels widened",
                 "In step 3's run above, `house_step` took {narrow_pct:.0f}% of the kernel time with panels "
                 "of {narrow:.0f} columns and {wide_pct:.0f}% with {wide:.0f}: its share fell as the panels "
                 "widened, since the trailing updates grew",
                 "Step 3 ran fewer than two panel widths here",
                 narrow=narrow, wide=wide, narrow_pct=shares.get(narrow), wide_pct=shares.get(wide))


def subset_size_exercise(t3, t4, work):
    """Exercise 3: C(14, 3) against C(14, 4) subsets, `work` the ratio of their arithmetic."""
    return _said("lsq_ex3_fixed_cost", "ratio < 0.5 * work",
                 "k = 4 took {ratio:.1f}× the time of k = 3 for {work:.1f}× the work: the time grew far "
                 "less than the work. A line through the two points puts {fixed_us:.1f} of k = 3's "
                 "{t3_us:.1f} µs in a part that does not grow with the work: a launch this small is "
                 "mostly fixed cost",
                 "k = 4 took {ratio:.1f}× the time of k = 3 for {work:.1f}× the work: the time followed "
                 "the work",
                 "The two searches did not both run here",
                 ratio=t4 / t3 if t3 and t4 else None, work=work, t3_us=t3 * 1e6 if t3 else None,
                 fixed_us=(t3 - (t4 - t3) / (work - 1)) * 1e6 if t3 and t4 else None)


def near_the_limit(runs, limit):
    """Part 8.3's exercise: matrices with columns scaled 1 to `top`, each
    {top: (method, cond_estimate, gram_error)}: how accurate CholeskyQR2's R was
    wherever the step kept it, up to the largest estimate below the limit."""
    kept = [(est, err) for method, est, err in runs.values() if method == "CholeskyQR2"]
    worst = max((err for _, err in kept), default=None)
    largest = max((est for est, _ in kept), default=None)
    return _said("lsq_ex_near_limit", "worst <= 1e-12",
                 "Where the step kept CholeskyQR2, up to an estimated κ(A) of {largest:.1e} (the limit is "
                 "{limit:.0e}), R'R matched A'A within {worst:.1e}: below the limit the second pass repairs "
                 "what the first lost",
                 "Where the step kept CholeskyQR2, up to an estimated κ(A) of {largest:.1e} (the limit is "
                 "{limit:.0e}), R'R missed A'A by {worst:.1e}: the limit sits too close to where the method "
                 "breaks on these data",
                 "The step kept CholeskyQR2 for none of these matrices",
                 worst=worst, largest=largest, limit=limit)


def host_enqueue(set_s, bound_s, launches, idle_set_s, idle_bound_s):
    """Part 8.3: the host's time to enqueue CholeskyQR2's launches with every
    argument set at each launch against set once (launch.Bound), and how long
    the device idles between the launches either way."""
    values = dict(set_ms=set_s * 1e3, bound_ms=bound_s * 1e3, launches=launches,
                  set_us=set_s / launches * 1e6, bound_us=bound_s / launches * 1e6,
                  idle_set_ms=idle_set_s * 1e3, idle_bound_ms=idle_bound_s * 1e3)
    claim("lsq_host_arguments", "set_ms > 1.5 * bound_ms",
          "The host enqueues the timed variant's {launches:,.0f} launches in {set_ms:.1f} ms when each launch sets "
          "its arguments ({set_us:.0f} µs a launch), and in {bound_ms:.1f} ms when each is enqueued as "
          "the first run left it, its arguments set ({bound_us:.0f} µs)",
          "The host enqueues the timed variant's {launches:,.0f} launches in {set_ms:.1f} ms when each launch sets "
          "its arguments and in {bound_ms:.1f} ms when they were set once: here setting them costs little",
          **values)
    return claim("lsq_host_idle", "idle_set_ms > 2 * idle_bound_ms + 1",
                 "Setting every argument, the host falls behind the device, which idles "
                 "{idle_set_ms:.1f} ms between launches, waiting; with them set once it idles "
                 "{idle_bound_ms:.1f} ms",
                 "The device idles {idle_set_ms:.1f} ms between launches when each sets its arguments, "
                 "and {idle_bound_ms:.1f} ms when they were set once: here the host keeps ahead of the "
                 "device either way",
                 **values)


def orthogonal_q(name, values, where, floor=1e-13, beside=None):
    """Part 8.3: ||QᵀQ − I||_F (gpubook.orthogonality) of every method held to it at most
    `floor` on the matrices `where` names ("the 25,000 × 5,001 matrix"); values {method:
    value, None where it did not run}. The methods named in `beside` (by default those
    named "cuSOLVER …") are shown for comparison and not held to the floor: on an H200
    (2026-11-28) cuSOLVER's Householder Q of a 25,000 × 5,000 matrix reached 3.0e-13, and
    A R⁻¹ from step 5's Householder R 1.1e-13, where CholeskyQR2's Q stayed at 7.0e-14."""
    shown = {k for k in values if k.startswith("cuSOLVER")} if beside is None else set(beside)
    ran = {k: v for k, v in values.items() if v is not None and k not in shown}
    others = {k: v for k, v in values.items() if v is not None and k in shown}
    worst = max(ran, key=ran.get) if ran else None
    compared = ("; for comparison, not held to it: "
                + ", ".join(f"{k} {v:.1e}" for k, v in others.items())) if others else ""
    return _said(name, "worst <= floor",
                 "Each of the {methods:.0f} methods held to it keeps ‖QᵀQ − I‖_F at or below "
                 "{floor:.0e} on {where}, the worst, {worst_name}, at {worst:.1e}: its Q is "
                 "orthonormal to rounding{compared}",
                 "Not every method held to it keeps ‖QᵀQ − I‖_F at or below {floor:.0e} on "
                 "{where}: {worst_name} reaches {worst:.1e}{compared}",
                 "No method's Q was measured here",
                 worst=ran.get(worst), worst_name=worst, floor=floor, methods=len(ran), where=where,
                 compared=compared)


def second_pass(runs):
    """Part 8.3: {κ: (method, ||Q1ᵀQ1 − I||_F, ||QᵀQ − I||_F)} for matrices U diag Vᵀ of
    condition number κ (measure.conditioned): where the step kept CholeskyQR2, did the
    first pass lose orthogonality, and did the second bring Q back to rounding?"""
    kept = {cond: (q1, q) for cond, (method, q1, q) in runs.items() if method == "CholeskyQR2"}
    return _said("lsq_second_pass", "q <= 1e-13 and q1 > 100 * q",
                 "Up to κ(A) = {top:.0e}, the largest the step kept for CholeskyQR2, the first pass left "
                 "‖Q₁ᵀQ₁ − I‖_F at up to {q1:.1e} and the second brought Q to {q:.1e} or less: the second "
                 "pass repairs what the first lost",
                 "Up to κ(A) = {top:.0e}, the largest the step kept for CholeskyQR2, the first pass left "
                 "‖Q₁ᵀQ₁ − I‖_F at up to {q1:.1e} and the second left Q at up to {q:.1e}: either the second "
                 "pass did not bring Q to rounding, or the first lost little for it to repair",
                 "The step kept CholeskyQR2 for none of these matrices",
                 top=max(kept, default=None), q1=max((v for v, _ in kept.values()), default=None),
                 q=max((v for _, v in kept.values()), default=None))


# --- causes (kind "cause"), from the run's panel widths and from hardware counters -------

ROW_GROUP_COUNTED = "lsq/2_row_group.cl:includ_row_group[NMAX=40 WG=32]"
_BLOCKED = "[FC=16 KC=512 NB=16 QL=4 RL=8 RPI=1 RT=64 TN=32 WGS=128]"
COUNTED = [("step 1", "lsq/1_sequential.cl:includ_sequential"),
           ("step 2, WG = 32, n = 40", ROW_GROUP_COUNTED)] + [
    (name, f"lsq/3_blocked.cl:{name}{_BLOCKED}")
    for name in ("house_dots", "house_step", "trail_w", "trail_finish", "trail_update",
                 "column_ss")]


def _metrics(rows, label):
    """A kernel's counters where its replay is trusted (gpubook.counters), else {}."""
    return trusted_metrics((rows or {}).get(label)) or {}


def house_step_work(by_width):
    """Step 3's panel launches (kind "cause"): `house_step` runs once per column at
    every panel width, and each launch applies its reflection to the panel's columns.
    If the launches' fixed cost set its time, its total would stay flat as the panel
    widens; if the work over the panel did, it would grow with the width. The claim:
    from the narrowest to the widest width it grows by more than the square root of
    the width ratio (the geometric middle between flat and proportional).
    by_width: {panel width: house_step's seconds}."""
    lo, hi = (min(by_width), max(by_width)) if len(by_width) > 1 else (None, None)
    return claim("lsq_house_step_work", "ratio > (hi / lo) ** 0.5",
                 "Their cost is the work over the panel, not the launches: with panels of "
                 "{hi:.0f} columns instead of {lo:.0f}, the same number of `house_step` "
                 "launches took {ratio:.2f}× the time",
                 "Their cost is the launches, not the work over the panel: with panels of "
                 "{hi:.0f} columns instead of {lo:.0f}, the same number of `house_step` "
                 "launches took {ratio:.2f}× the time (the test: more than "
                 "√({hi:.0f}/{lo:.0f}))",
                 "Fewer than two panel widths ran here, so what sets the panel launches' "
                 "time is not tested",
                 glue=False, kind="cause", lo=lo, hi=hi,
                 ratio=by_width[hi] / by_width[lo] if lo else None)


def row_group_chain(rows, whose, label=ROW_GROUP_COUNTED):
    """Step 2's cause, read from the counters of `whose`: a row crosses the columns as
    a chain of dependent steps, so its warps should wait mostly on the result of the
    instruction before (fixed-latency 'wait' and local-memory 'short scoreboard'
    stalls, half the stall cycles or more), little on global memory (long scoreboard,
    under a quarter) and device memory should idle (DRAM under 10%)."""
    m = _metrics(rows, label)
    stalls = m.get("stalls") or {}
    return claim("lsq_row_group_chain", "chain >= 0.5 and memory < 0.25 and dram < 10",
                 "The {whose}'s counters of step 2 (one work-group of 32, rows of 40 columns)"
                 " show the chain: {chain:.0%} of its stall cycles wait on the "
                 "instruction before (fixed latency or local memory), {memory:.0%} on "
                 "global memory, with DRAM at {dram:.0f}% of its peak",
                 "The {whose}'s counters of step 2 (one work-group of 32, rows of 40 columns)"
                 " do not show a chain of dependent steps: {chain:.0%} of its stall "
                 "cycles wait on the instruction before, {memory:.0%} on global memory, DRAM "
                 "at {dram:.0f}% (the test: half or more, under a quarter, under 10%)",
                 "Step 2 has no trusted counters here ({names} missing)",
                 glue=False, kind="cause", whose=whose, dram=m.get("dram_pct"),
                 chain=stalls.get("wait", 0) + stalls.get("short_scoreboard", 0) if m else None,
                 memory=stalls.get("long_scoreboard", 0) if m else None)


def trailing_latency(rows, whose):
    """Step 3's trailing updates (kind "cause"), read from the counters of `whose`:
    kernels that keep nothing in registers across the panel's dimension wait on their
    loads. Then `trail_w` and `trail_update` spend half their stall cycles or more on
    global loads (long scoreboard) while neither device memory nor the SM reaches half
    its peak: held by the latency of their loads, not by a throughput."""
    w = _metrics(rows, f"lsq/3_blocked.cl:trail_w{_BLOCKED}")
    u = _metrics(rows, f"lsq/3_blocked.cl:trail_update{_BLOCKED}")
    have = bool(w and u)
    return claim("lsq_trailing_wait_loads", "waiting >= 0.5 and busiest < 50",
                 "The {whose}'s counters of the trailing updates (panels of 16) show them "
                 "waiting on their loads: `trail_w` and `trail_update` spend at least "
                 "{waiting:.0%} of their stall cycles on global loads, while DRAM and the SM "
                 "stay at or below {busiest:.0f}% of their peaks",
                 "The {whose}'s counters of the trailing updates (panels of 16) do not show "
                 "them held by the latency of their loads: at least {waiting:.0%} of their "
                 "stall cycles on global loads, DRAM or the SM up to {busiest:.0f}% of its "
                 "peak (the test: half or more, under 50%)",
                 "The trailing updates have no trusted counters here ({names} missing)",
                 glue=False, kind="cause", whose=whose,
                 waiting=min((x.get("stalls") or {}).get("long_scoreboard", 0)
                             for x in (w, u)) if have else None,
                 busiest=max(x.get(k, 0) for x in (w, u) for k in ("dram_pct", "sm_pct"))
                 if have else None)


def tall_roofs(copy_pct, prod_gflops, dmma, mma_gflops, fma_gflops):
    """The tall case's best CholeskyQR2: its passes' share of the copy rate against its
    products' flops (over the step's whole time) as a share of the roof of the units
    that ran them, chapter 0's FP64 mma loop for the DMMA variant, its FMA chains
    otherwise."""
    roof = mma_gflops if dmma else fma_gflops
    name = "the FP64 tensor cores' rate" if dmma else "the FP64 FMA rate"
    unit = "FP64 tensor-core" if dmma else "FP64 FMA"
    return claim("lsq_tall_roofs", "max(copy_pct, prod_pct) < 50",
                 "and its products come to {prod_pct:.0f}% of " + name
                 + ": neither share is past half its roof",
                 "and its products come to {prod_pct:.0f}% of " + name
                 + ": one of the two is past half its roof",
                 missing="and chapter 0 recorded no " + unit + " rate for this device",
                 copy_pct=copy_pct, dmma=int(bool(dmma)),
                 prod_pct=100 * prod_gflops / roof if roof and prod_gflops else None)
