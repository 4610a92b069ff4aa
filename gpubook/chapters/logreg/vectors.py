"""Chapter 4 (vector types): its exercises' claims (gpubook.claims), and its resource
tables with the work-group size each kernel was built for. Chapters 1-3 do not use this
module."""
from ...claims import claim
from ...resources import resource_table


def _said(name, relation, held, failed, missing, **values):
    """A claim whose sentences stand alone in an exercise's answer: each ends with a full stop."""
    return claim(name, relation, held + ".", failed + ".", missing + ".", **values)


def declared_table(rows, device):
    """gb.resource_table of (label, kernel, group_size) rows: its 'declared work-group'
    column gives, for a kernel built with reqd_work_group_size, the size it was built for."""
    return resource_table(rows, device)


def registers_exercise(rates, in_regs):
    """Exercise 1: fast.cl with every example read from global memory (IN_REGS=0) and with
    `in_regs` examples per work-item kept in registers ({label: iterations/s})."""
    slow, fast = rates.get("IN_REGS=0"), rates.get(f"IN_REGS={in_regs}")
    return _said("vt_ex1_registers_pay", "gain > 1.1",
                 "Keeping the {in_regs:.0f} examples per work-item in registers made this run {gain:.2f}× "
                 "faster: {slow_ns:,.0f} ns per iteration without, {fast_ns:,.0f} with, {saved_ns:,.0f} ns "
                 "saved on loads that every iteration must wait for before it can compute a score",
                 "Keeping the {in_regs:.0f} examples per work-item in registers changed this run by "
                 "{gain:.2f}× ({slow_ns:,.0f} ns per iteration without, {fast_ns:,.0f} with): the reloads "
                 "cost little here",
                 "One of the two builds does not run here", in_regs=in_regs,
                 gain=fast / slow if slow and fast else None, slow_ns=1e9 / slow if slow else None,
                 fast_ns=1e9 / fast if fast else None,
                 saved_ns=1e9 / slow - 1e9 / fast if slow and fast else None)


def local_rounds(n, radix):
    """The rounds of fast.cl's local-memory sum (each closed by a barrier) over N values:
    a round adds RADIX neighbours while more than RADIX values are left."""
    rounds = 0
    while n > radix:
        n //= radix
        rounds += 1
    return rounds


def radix_exercise(rates, n):
    """Exercise 2: fast.cl's local rounds of radix 2 and 16 at N work-items ({label: iterations/s})."""
    r2, r16 = rates.get("RADIX=2"), rates.get("RADIX=16")
    rounds = {r: local_rounds(n, r) if n else None for r in (2, 16)}
    return _said("vt_ex2_radix16", "ratio > 1",
                 "At N = {n:.0f}, radix 16 ran {ratio:.2f}× as fast as radix 2 ({ns16:,.0f} against {ns2:,.0f} "
                 "ns per iteration): {rounds16:.0f} rounds, each closed by a barrier, instead of {rounds2:.0f}",
                 "At N = {n:.0f}, radix 16 ran {ratio:.2f}× as fast as radix 2 ({ns16:,.0f} against {ns2:,.0f} "
                 "ns per iteration): fewer rounds ({rounds16:.0f} instead of {rounds2:.0f}) did not pay here",
                 "One of the two radices does not run here", n=n, ratio=r16 / r2 if r2 and r16 else None,
                 ns16=1e9 / r16 if r16 else None, ns2=1e9 / r2 if r2 else None,
                 rounds2=rounds[2], rounds16=rounds[16])


def _below_bound(by, fastest, largest, bound):
    """Where the fastest configuration falls below the whole-device bound,
    and where every one-work-group build of the sweep does (the best of them at each J;
    the host's NumPy rows are not a work-group): only there is one work-group no
    longer enough. A build with a larger group can stay above the line for longer."""
    js = sorted(by.get(fastest, {}))
    builds = [v for v in by if not v.lower().startswith("numpy")]
    best = {j: max((by[v][j], v) for v in builds if j in by[v]) for j in js}
    beaten = [j for j, b in zip(js, bound) if by[fastest][j] < b]
    all_beaten = [j for j, b in zip(js, bound) if best[j][0] < b]
    first = all_beaten[0] if all_beaten else None
    held_to = max((j for j in js if first is None or j < first), default=None)
    holder = best[held_to][1] if held_to is not None else None
    words = ("the same kernel with the largest group" if holder == largest
             else f"`{holder}`")
    lead = ("The fastest configuration goes below the line at $J$ = {j_fast:,.0f}, but "
            + words + " is still above it at $J$ = {j_held:,.0f}"
            if beaten and holder != fastest and (first is None or beaten[0] < first)
            else "")
    held = ((lead + ". Every one-work-group build measured is below it from $J$ = "
             "{j_cross:,.0f}") if lead else
            "The fastest configuration, and with it every one-work-group build measured, "
            "goes below the line at $J$ = {j_cross:,.0f}")
    failed = ((lead + ", and one work-group build stays above it at every size measured: "
               "one work-group is still enough up to $J$ = {j_big:,.0f}") if lead else
              "The fastest configuration stays above the line up to $J$ = {j_big:,.0f}: one "
              "work-group is still enough at every size measured")
    return claim("vt_one_group_below_bound", "crossed > 0",
                 held + ": from there one work-group is no longer enough, and the iteration "
                 "has to be spread over many work-groups, paying for a launch (or another "
                 "way to synchronise them) every iteration", failed,
                 crossed=len(all_beaten), j_cross=first or 0, j_big=js[-1] if js else None,
                 j_fast=beaten[0] if beaten else 0, j_held=held_to or 0)


def one_group_limits(j_records, fastest, largest, bound, others):
    """The last section's reading: where the fastest configuration and where every
    one-work-group build fall below the whole-device bound (`bound`: one rate per J of
    the sweep; `_below_bound`), whether the same kernel with the largest group falls
    more slowly (`largest` None where it did not fit), and whether a recorded CPU run
    ranks the float4 kernel above the fastest build."""
    by = {}
    for r in j_records:
        by.setdefault(r["variant"], {})[r["examples"]] = r["rate"]
    js = sorted(by.get(fastest, {}))
    below = _below_bound(by, fastest, largest, bound)
    top = js[-1] if js else None
    big = by.get(largest, {}).get(top) if largest else None
    slower = claim("vt_larger_group_falls_slower", "big > fast",
                   "At $J$ = {j:,.0f} the same kernel with the largest group, with more work-items to "
                   "keep loads in flight, ran {ratio:.2f} times as fast as the fastest configuration",
                   "At $J$ = {j:,.0f} the same kernel with the largest group ran {ratio:.2f} times as "
                   "fast as the fastest configuration: more work-items did not keep it ahead",
                   missing="The same kernel does not fit this device with the largest group",
                   big=big, fast=by.get(fastest, {}).get(top), j=top,
                   ratio=big / by[fastest][top] if big and top else None)
    cpu = next((e for k, e in others.items() if k.startswith("cpu")), None)
    swap = claim("vt_cpu_swaps", "fast_rate < float4_best",
                 "On the recorded CPU run the float4 kernel ({float4_best:,.0f} iterations/s) beat "
                 "the fastest build ({fast_rate:,.0f}): PoCL runs the whole work-group on one core, one "
                 "work-item after another between barriers, with no warps to exchange registers, and "
                 "registers are not a CPU's scarce resource",
                 "On the recorded CPU run the fastest build ({fast_rate:,.0f} iterations/s) kept ahead of "
                 "the float4 kernel ({float4_best:,.0f})",
                 missing="No CPU run of this chapter is recorded",
                 fast_rate=cpu["data"]["fast_rate"] if cpu else None,
                 float4_best=cpu["data"]["float4_best"] if cpu else None)
    return below, slower, swap


def arithmetic_floor(iteration_ns, cycle_ns, J, K, lanes=None, sfus=None, clock=None):
    """Kind "cause": the fastest build's iteration against the arithmetic one compute
    unit must do: J*K multiply-adds twice over `lanes` FP32 lanes (one multiply-add per
    lane per clock), and J exponentials and reciprocals over `sfus` special-function
    units (one each per unit per clock; data-sheet counts, None where not known). The
    two kinds of unit issue side by side, so the floor is the longer of their two
    counts, not their sum. `cycle_ns` is one cycle of the clock that `clock` names (a
    few words for the sentence: the SM clock measured under load, or the device's
    largest). If the arithmetic set the iteration's time, the floor would be most of
    its cycles: the claim fails there."""
    cycles = iteration_ns / cycle_ns if cycle_ns and cycle_ns == cycle_ns else None
    fma = 2 * J * K / lanes if lanes else None
    sfu = 2 * J / sfus if sfus else None
    floor = max(fma, sfu) if fma and sfu else None
    units = ("On this device a compute unit has {lanes:.0f} FP32 lanes and {sfus:.0f} "
             "special-function units (NVIDIA's data sheet), each doing one operation per "
             "clock: the multiply-adds take {fma:.0f} cycles on the lanes and the "
             "exponentials and reciprocals {sfu:.0f} on the special-function units, which "
             "run at the same time, so the arithmetic takes at least {floor:.0f} cycles, "
             "the longer of the two. That is {share:.0%} of the {cycles:.0f} cycles of an "
             "iteration" + (" at " + clock if clock else ""))
    return claim("vt_arithmetic_floor", "share < 0.5",
                 units + ": the arithmetic units do not set the pace, and most of the "
                 "iteration is spent on something other than this arithmetic",
                 units + ": most of it is arithmetic that one compute unit cannot do faster",
                 missing="The book's table does not give this device's lanes per compute "
                         "unit, or the device reports no clock, so the arithmetic is not "
                         "counted in cycles",
                 kind="cause",
                 lanes=lanes, sfus=sfus, fma=fma, sfu=sfu, floor=floor, cycles=cycles,
                 share=floor / cycles if floor and cycles else None)


def phase_budget(phases, floor):
    """Kind "cause": the arithmetic floor (arithmetic_floor's cycles) against the
    cycles an iteration spent on its examples, read inside the kernel with %clock64
    (gpubook.chapters.logreg.phases). The examples' phase does all of the arithmetic
    the floor counts, so it must take at least the floor; were the units faster than
    the data sheet's counts, it would take less and the floor would be none. The
    sentence gives the split, and the event's time of this build with the counter
    reads (one launch; the reads order the code around them), which is not the
    time of the build without them that arithmetic_floor counts in cycles."""
    got = phases if phases and "examples" in phases else {}
    ex, total = got.get("examples"), got.get("iteration")
    split = ("Read inside the kernel with `%clock64`, an iteration's {iteration:,.0f} "
             "cycles split into {examples:,.0f} on the examples (warps from "
             "{examples_min:,.0f} to {examples_max:,.0f}) and {sum:,.0f} on the sum over "
             "the work-group and the update ({sum_share:.0%}). This build with the "
             "counter reads took {timed:,.0f} cycles an iteration by its one launch's "
             "event; the cycle count above is the build without them, timed over its "
             "runs. ")
    return claim("vt_phase_budget", "floor <= examples",
                 split + "The arithmetic floor, {floor:,.0f} cycles, fits in the examples' "
                 "phase ({floor_share:.0%} of it): the rest of that phase and all of the "
                 "sum are time the arithmetic units do not set",
                 split + "The examples' phase took less than the arithmetic floor of "
                 "{floor:,.0f} cycles: the units ran faster than the data sheet's counts, "
                 "so that floor is not one",
                 missing="The phases of an iteration are not read on this device: "
                         + (phases or {}).get("why_not", "no counter") + " (or no "
                         "arithmetic floor is known)",
                 glue=False, kind="cause", floor=floor, examples=ex, iteration=total,
                 examples_min=got.get("examples_min"), examples_max=got.get("examples_max"),
                 sum=got.get("sum"), timed=got.get("timed_iteration"),
                 sum_share=got["sum"] / total if total else None,
                 floor_share=floor / ex if floor and ex else None)


def clock_used(limits, cycle_ns_max):
    """(ns per cycle, words naming the clock) for the page's cycle counts: chapter 0's
    SM clock under load (`limits["sm_clock_ghz"]`) where it was measured, else the
    device's largest clock (`cycle_ns_max`, NaN where none is reported: then None)."""
    ghz = (limits or {}).get("sm_clock_ghz")
    if ghz:
        return 1 / ghz, f"the {ghz:.2f} GHz SM clock chapter 0 measured under load"
    if cycle_ns_max and cycle_ns_max == cycle_ns_max:
        return cycle_ns_max, (f"the {1 / cycle_ns_max:.2f} GHz the device reports as its "
                              "largest clock (chapter 0 measured no clock under load here)")
    return float("nan"), None


def float4_counters(rows4, rows2, whose, J=2048, K=8, sizes=(1, 2, 4), big=1024):
    """Chapter 4, kind "cause", from `whose` counters: (1) float4.cl against step 2's
    work_items.cl (chapter 2's record, `rows2`), whose loop over the examples is step
    3's, at N in `sizes` (one iteration per launch, where the reductions barely differ):
    float4 cuts the instructions executed by less than 2 times, so the loads it shortens
    are not most of the loop, while the time falls by more than a quarter beyond that:
    it gains on waits, not on instructions; (2) at N = `big`, the full run, the
    float4 kernel's largest stall is its tree's barriers, and its issue slots are less
    than half busy."""
    from .claims import counter_metrics, stall_share

    f4 = {n: counter_metrics(rows4, "logreg/float4.cl", ITERS=1, J=J, K=K, N=n)
          for n in sizes}
    sc = {n: counter_metrics(rows2, "logreg/work_items.cl", ITERS=1, J=J, K=K, N=n)
          for n in sizes}
    have = all(f4.values()) and all(sc.values())
    instr = [sc[n]["instructions"] / f4[n]["instructions"] for n in sizes] if have else None
    gain = [sc[n]["opencl_s"] / f4[n]["opencl_s"] for n in sizes] if have else None
    miss = ("Not settled from counters: {names} missing (" + str(whose) + " has no "
            "trusted counters row of a kernel this claim reads)")
    n_text = ", ".join(str(n) for n in sizes)
    fewer = claim(
        "vt_float4_waits_not_instructions", "instr_max < 2 and gain_min > 1.25 * instr_max",
        "On " + str(whose) + "'s counters, against step 2's kernel, whose loop over the "
        "examples is step 3's (one iteration per launch, $N$ = " + n_text + "), `float4` "
        "executed at most {instr_max:.2f} times fewer instructions, far from 4: the loads "
        "it shortens are a part of the loop. Yet it ran at least {gain_min:.2f} times "
        "faster: fewer loads mean fewer waits, and that is most of the gain",
        "On " + str(whose) + "'s counters, against step 2's kernel (one iteration per "
        "launch, $N$ = " + n_text + "), `float4` executed up to {instr_max:.2f} times "
        "fewer instructions and ran at least {gain_min:.2f} times faster: its gain is not "
        "plainly in the waits",
        missing=miss, glue=False, kind="cause",
        instr_max=max(instr) if instr else None, gain_min=min(gain) if gain else None)
    top = counter_metrics(rows4, "logreg/float4.cl", ITERS=50000, J=J, K=K, N=big)
    stalls = (top or {}).get("stalls") or {}
    barrier = stall_share(top, "barrier")
    rounds = claim(
        "vt_float4_barrier_bound", "barrier >= other_max and issue < 50",
        "At $N$ = {big:.0f} (the full run) the `float4` kernel's largest stall is its "
        "tree's barriers, {barrier:.0%} of the stall cycles, and its issue slots are "
        "{issue:.0f}% busy: the rounds of the reduction, a barrier each, are its largest "
        "wait, and it is not short of issue slots (its L1, which also serves local "
        "memory, ran at {l1:.0f}% of its peak)",
        "At $N$ = {big:.0f} the `float4` kernel's barriers hold {barrier:.0%} of the "
        "stall cycles (the largest other reason {other_max:.0%}) and its issue slots are "
        "{issue:.0f}% busy: the barriers are not plainly what holds it back",
        missing=miss, glue=False, kind="cause", big=big, barrier=barrier,
        other_max=max((v for k, v in stalls.items() if k != "barrier"), default=None),
        issue=(top or {}).get("issue_pct"), l1=(top or {}).get("l1_pct"))
    return fewer, rounds


def float4_labels(rows4, rows2, J=2048, K=8, sizes=(1, 4), big=1024):
    """(heading, label) of chapter 4's counters rows (both records' labels differ, so
    one table can show {**rows2, **rows4})."""
    from .claims import counter_label

    out = []
    for n in sizes:
        out += [(f"step 2, N = {n}", counter_label(rows2, "logreg/work_items.cl", ITERS=1,
                                                   J=J, K=K, N=n)),
                (f"float4, N = {n}", counter_label(rows4, "logreg/float4.cl", ITERS=1,
                                                   J=J, K=K, N=n))]
    return out + [(f"float4, N = {big}, full run",
                   counter_label(rows4, "logreg/float4.cl", ITERS=50000, J=J, K=K, N=big))]


STEP4, STEP3 = "float4 + tree (step 4)", "tree reduction (step 3)"


def float4_sweep(trainer, device, counts):
    """Step 4's sweep over the work-group sizes `counts`, with step 3's tree measured again
    from 16 work-items up in the same run (median of three runs a point, every run's
    weights checked). Both pages of chapter 4 call it. Returns sweep_work_items' records."""
    from .measure import sweep_work_items

    records = sweep_work_items(trainer, device, {STEP4: ("float4", {})}, counts)
    return records + sweep_work_items(trainer, device, {STEP3: ("tree", {})},
                                      [n for n in counts if n >= 16])


def tuning_variants(device, J):
    """fast.cl's reductions this device can run: {label: (step, defines of N)}."""
    from .training import fast_defines, has_warp_shuffle

    variants = {"local memory, radix 16":
                ("fast", lambda n: fast_defines(device, J, n, shuffle=False))}
    if has_warp_shuffle(device):
        variants["warp shuffle"] = ("fast", lambda n: fast_defines(device, J, n, shuffle=True))
    return variants


def tune(trainer, device, counts):
    """The tuning sweep of fast.cl: every power of two from 32 up (or all a small device
    runs) that fits, with each reduction the device can run, median of five runs a point.
    Both pages of chapter 4 call it. Returns (records, fastest record, its build options)."""
    from .measure import sweep_work_items
    from .training import fits

    prob = trainer.prob
    variants = tuning_variants(device, prob.J)
    tuning, least = [], min(32, max(counts))
    for label, (step, defines) in variants.items():
        sizes = [n for n in counts
                 if n >= least and fits(device, step, prob.J, prob.K, n, **defines(n))]
        tuning += sweep_work_items(trainer, device, {label: (step, defines)}, sizes, repeats=5)
    fast = max(tuning, key=lambda r: r["rate"])
    return tuning, fast, variants[fast["variant"]][1](fast["work_items"])
