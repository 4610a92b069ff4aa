"""The sentences chapter 3 says about its measurements, as claims (gpubook.claims)."""
from ...claims import claim
from ...counters import trusted_metrics
from ...curves import human_bytes


def tree(best, serial, tree_max, serial_max, gain_max, gain_other):
    """The training half: the tree against the serial sum; `gain_other` is the largest
    tree / serial ratio at any group size below the largest."""
    pays = claim("tree_pays_off", "best > serial and tree_max > serial_max",
                 "The tree pays off at large groups", "The tree does not pay off here",
                 best=best, serial=serial, tree_max=tree_max, serial_max=serial_max)
    largest = claim("tree_gain_largest_at_max", "gain_max >= gain_other",
                    "the difference is largest there", "the difference is not largest there",
                    gain_max=gain_max, gain_other=gain_other)
    return pays, largest


def work_group_note(wg, device_max, kernel_max, train_max):
    """What the device-wide sum launched: `wg` work-items per group in every step, where the
    device allows `device_max` and the kernels, built for `wg` (reqd_work_group_size),
    report `kernel_max`; the training kernels of the first half launched up to `train_max`."""
    built = ("each kernel declares that size (`reqd_work_group_size`), as the 'declared work-group' "
             "column of its resource table shows" if kernel_max == wg else
             f"the built kernels allow up to {kernel_max}")
    return (f"Every step of the device-wide sum ran with work-groups of {wg} work-items, DeviceSum's default: "
            f"the largest power of two up to 256 that the device allows (here up to {device_max}); {built}. "
            f"The training kernels of the first half launched groups of up to {train_max}.")


def device_sum(gbs2, gbs5, copy_gbs, step3, unroll_gain, need_cu, resident, vs_vendor):
    """The device-wide sum's reading: steps 1-2 against the copy figure, step 3's halving,
    step 5 against the copy, unrolling, Little's law for float and float4 loads, and the
    vendor's sum."""
    out = [
        claim("red_steps12_far_below", "gbs2 < 0.5 * copy_gbs",
              "{share:.0%} of chapter 0's copy figure", "{share:.0%} of chapter 0's copy figure, not far below it",
              gbs2=gbs2, copy_gbs=copy_gbs, share=gbs2 / copy_gbs),
        claim("red_step3_halves", "1.6 < step3 < 2.2",
              "the time almost halves with it ({step3:.2f}×): the cost is per work-group, not per byte",
              "the time does not halve with it ({step3:.2f}×)", step3=step3),
        claim("red_read_at_copy", "abs(gbs5 / copy_gbs - 1) < 0.05",
              "within 5% of it: reading alone, the sum moves its bytes as fast as the copy moves "
              "its reads and writes together",
              "{share:.0%} of it, more than 5% away", gbs5=gbs5, copy_gbs=copy_gbs, share=gbs5 / copy_gbs),
        claim("red_unroll_little", "abs(unroll_gain) < 0.05",
              "Unrolling the loop adds almost nothing on top", "Unrolling the loop changes the rate",
              unroll_gain=unroll_gain),
    ]
    inflight = {"float": None if resident is None else 4 * resident,
                "float4": None if resident is None else 16 * resident}
    out.append(claim("red_float_thin", "float_bytes < 1.25 * need_cu",
                     "with one float load each that is " + str(human_bytes(inflight["float"] or 0))
                     + " in flight, {times:.2f} times what memory needs: no room for a compute unit "
                     "that is not full",
                     "with one float load each that is " + str(human_bytes(inflight["float"] or 0))
                     + " in flight, {times:.2f} times what memory needs: room to spare",
                     missing="Little's law is not recorded for this device (the machine chapter)",
                     float_bytes=inflight["float"], need_cu=need_cu,
                     times=inflight["float"] / need_cu if inflight["float"] and need_cu else None))
    out.append(claim("red_float4_covers", "float4_bytes >= need_cu",
                     "with one float4 load each " + str(human_bytes(inflight["float4"] or 0))
                     + ", {times:.1f} times what memory needs",
                     "with one float4 load each " + str(human_bytes(inflight["float4"] or 0))
                     + ", still short ({times:.2f} times what memory needs)",
                     missing="Little's law is not recorded for this device (the machine chapter)",
                     float4_bytes=inflight["float4"], need_cu=need_cu,
                     times=inflight["float4"] / need_cu if inflight["float4"] and need_cu else None))
    out.append(claim("red_vendor_close", "abs(vs_vendor - 1) < 0.05",
                     "within 5% of each other", "more than 5% apart",
                     missing="no vendor library was measured in this run", vs_vendor=vs_vendor))
    return out


def smaller_groups(gbs_small, gbs_big, small, big, first_share):
    """Exercise 1: step 2 with smaller work-groups."""
    return claim("ex_smaller_groups_slower", "gbs_small < gbs_big",
                 "Here groups of {small:.0f} were slower ({ratio:.2f}× the rate with {big:.0f})",
                 "Here groups of {small:.0f} were not slower ({ratio:.2f}× the rate with {big:.0f})",
                 gbs_small=gbs_small, gbs_big=gbs_big, small=small, big=big, ratio=gbs_small / gbs_big,
                 first_share=first_share)


def grid(gbs1, gbs8, nbytes, l2_bytes, full_gbs4, launch_us):
    """Exercise 2: step 4 with 1 and 8 work-groups per compute unit on an array of
    `nbytes`, against the data sheet's L2, step 4's rate at the full length, and
    chapter 0's launch cost."""
    t8_us = nbytes / gbs8 / 1e3
    return [
        claim("ex_grid_close", "abs(ratio - 1) < 0.15",
              "One work-group per compute unit ran at {ratio:.2f}× the rate with 8, within 15%",
              "One work-group per compute unit ran at {ratio:.2f}× the rate with 8, more than 15% apart",
              gbs1=gbs1, gbs8=gbs8, ratio=gbs1 / gbs8),
        claim("ex_grid_in_l2", "nbytes < l2_bytes",
              "the array (" + human_bytes(nbytes) + ") fits the data sheet's L2 (" + human_bytes(l2_bytes or 0)
              + "), so after the warm-up it is read from the L2, not from device memory",
              "the array (" + human_bytes(nbytes) + ") is larger than the data sheet's L2 ("
              + human_bytes(l2_bytes or 0) + ")",
              missing="the book's data-sheet table does not list this device's L2",
              nbytes=nbytes, l2_bytes=l2_bytes),
        claim("ex_grid_short", "gbs8 < 0.5 * full_gbs4",
              "and the sum is short: {t8_us:.0f} µs with 8 groups, against chapter 0's {launch_us:.1f} µs "
              "per launch, at {share:.0%} of step 4's rate at the full length. Fixed costs weigh here, "
              "and Little's law, which is about streaming from device memory, is not what this run tests",
              "and the sum ran at {share:.0%} of step 4's rate at the full length",
              missing="chapter 0 recorded no launch cost for this device, so the sum's time is not set "
                      "against it",
              gbs8=gbs8, full_gbs4=full_gbs4, t8_us=t8_us, launch_us=launch_us, share=gbs8 / full_gbs4),
    ]


def short_arrays(rates, times_us, launch_us, floats):
    """The shortest array of the sweep: the five steps' read rates (GB/s) and times (µs),
    against chapter 0's cost of a launch queued back to back."""
    spread = max(rates) / min(rates) if rates and min(rates) > 0 else None
    return claim("red_short_same", "spread < 1.5",
                 "At {floats:,.0f} floats a sum took {t_lo:.0f} to {t_hi:.0f} µs, against "
                 "chapter 0's {launch_us:.1f} µs per launch, and the five steps ran within "
                 "{spread:.2f}× of each other: at that length a sum costs its few launches, "
                 "whatever its kernel does",
                 "At {floats:,.0f} floats a sum took {t_lo:.0f} to {t_hi:.0f} µs, against "
                 "chapter 0's {launch_us:.1f} µs per launch, and the five steps ran "
                 "{spread:.2f}× apart: the kernels still differ at that length",
                 missing="Chapter 0 recorded no launch cost for this device, so the shortest "
                         "sums are not set against it",
                 spread=spread, floats=floats, t_lo=min(times_us), t_hi=max(times_us),
                 launch_us=launch_us)


def short_falls(short_rates, full_rates):
    """Every step's read rate at the shortest array against its rate at the full length."""
    worst = max(s / f for s, f in zip(short_rates, full_rates)) if full_rates else None
    return claim("red_short_falls", "worst < 0.5",
                 "Every curve falls as the array gets shorter: at the shortest length each "
                 "step read at most {worst:.0%} of its rate at the full length",
                 "Not every curve falls far at the shortest length: one step kept "
                 "{worst:.0%} of its rate at the full length",
                 worst=worst)


def flattening(rate_max, rate_quarter, n_max):
    """The training half: the tree's rate at the largest group against a quarter of it."""
    return claim("tree_flattens", "rate_max / rate_quarter < 1.5",
                 "at large groups the curve rises only slowly: from N = {n_quarter:,.0f} to {n_max:,.0f}, "
                 "four times the work-items, the rate rose {ratio:.2f}×",
                 "at large groups the curve still rises: from N = {n_quarter:,.0f} to {n_max:,.0f} the "
                 "rate rose {ratio:.2f}×",
                 rate_max=rate_max, rate_quarter=rate_quarter, n_max=n_max, n_quarter=n_max / 4,
                 ratio=rate_max / rate_quarter if rate_quarter else None)


def baselines(short_ratio, full_ratio, step5_s, numpy_s, bus_s, cpu, bus_gbs=None, bus_bytes=None):
    """The baselines' reading: pyopencl.array.sum's time over step 5's at the shortest
    and at the full length; step 5 against np.sum, and the array's trip over the bus
    (`bus_s`: the array's bytes at chapter 0's pageable host-to-device rate `bus_gbs`,
    recorded at `bus_bytes`, the rate a NumPy array crosses at; None where chapter 0
    recorded none) against step 5's time; and a recorded CPU run's step 5 against its
    np.sum (`cpu`: that record's data, or None)."""
    behind = claim("red_lib_behind_short", "short_ratio > full_ratio",
                   "At the shortest length `pyopencl.array.sum` took {short_ratio:.1f}× step 5's time, "
                   "against {full_ratio:.2f}× at the full length: the host runs more Python "
                   "between its two kernels (and allocates their intermediate array) while the device waits",
                   "At the shortest length `pyopencl.array.sum` took {short_ratio:.2f}× step 5's time, "
                   "against {full_ratio:.2f}× at the full length: its share does not grow as the array "
                   "shrinks",
                   short_ratio=short_ratio, full_ratio=full_ratio)
    rate = ("chapter 0's pageable host-to-device rate, {bus_gbs:.1f} GB/s at "
            + human_bytes(bus_bytes) if bus_bytes else "chapter 0's pageable host-to-device rate")
    bus = claim("red_bus_dominates", "bus_s > 10 * step5_s",
                "Step 5 is {vs_numpy:,.0f}× faster than np.sum when the data already live on the device. "
                "A NumPy array in ordinary (pageable) host memory must first cross the bus, at " + rate
                + ": {bus_ms:,.0f} ms, {bus_x:,.0f}× step 5's time and {bus_numpy:.2f}× np.sum's "
                "{numpy_ms:,.0f} ms, so once the data must cross, the copy and not the sum sets the time",
                "Step 5 is {vs_numpy:,.0f}× faster than np.sum when the data already live on the device, "
                "and the trip of a pageable NumPy array over the bus, at " + rate + ", adds "
                "{bus_ms:,.1f} ms, only {bus_x:.1f}× step 5's time",
                missing="Step 5 is {vs_numpy:,.0f}× faster than np.sum when the data already live on the "
                        "device; chapter 0 recorded no pageable bus rate for this device, so the trip over "
                        "the bus is not counted".replace("{vs_numpy:,.0f}", f"{numpy_s / step5_s:,.0f}"),
                **({"bus_gbs": bus_gbs} if bus_bytes else {}),
                bus_s=bus_s, step5_s=step5_s, numpy_s=numpy_s, vs_numpy=numpy_s / step5_s,
                bus_ms=None if bus_s is None else bus_s * 1e3,
                bus_x=None if bus_s is None else bus_s / step5_s,
                bus_numpy=None if bus_s is None else bus_s / numpy_s, numpy_ms=numpy_s * 1e3)
    n = cpu["n"] if cpu else None
    at = {r["variant"]: r["median_s"] for r in cpu["sweep"] if r["floats"] == n} if cpu else {}
    cpu_c = claim("red_cpu_step5_vs_numpy", "step5_gbs > numpy_gbs",
                  "On the recorded CPU run (PoCL) step 5 read {step5_gbs:.1f} GB/s and np.sum "
                  "{numpy_gbs:.1f} GB/s: the kernel's work-groups spread over every core, where np.sum "
                  "adds on one",
                  "On the recorded CPU run (PoCL) np.sum read {numpy_gbs:.1f} GB/s and step 5 "
                  "{step5_gbs:.1f} GB/s: with no separate memory to stream from, NumPy's loop on one "
                  "core wins",
                  missing="No other CPU run of this chapter is recorded",
                  step5_gbs=4 * n / at["5_unrolled"] / 1e9 if at.get("5_unrolled") else None,
                  numpy_gbs=4 * n / cpu["numpy_s"] / 1e9 if cpu else None)
    return behind, bus, cpu_c


def groups_short(gbs_big, nbytes, launch_us):
    """Exercise 1: the sum with the default groups on an array of `nbytes` (read at
    `gbs_big` GB/s), against chapter 0's cost of a launch."""
    t_us = nbytes / gbs_big / 1e3
    return claim("ex_groups_short", "t_us < 10 * launch_us",
                 "Both sums are short: {t_us:.0f} µs with the larger groups, {x:.1f} times chapter 0's "
                 "{launch_us:.1f} µs per launch, so what changes is how many trees, barriers and passes "
                 "the sum pays for, not how fast memory streams",
                 "The sum takes {t_us:.0f} µs with the larger groups, {x:.1f} times chapter 0's "
                 "{launch_us:.1f} µs per launch: long enough that streaming from memory counts too",
                 missing="Chapter 0 recorded no launch cost for this device, so the sums' times are not "
                         "set against it",
                 t_us=t_us, launch_us=launch_us, x=t_us / launch_us if launch_us else None)


def bandwidth_cause(gbs4, gbs5, read_gbs, unroll_s):
    """Why step 5 is as fast as it is (kind "cause"): memory bandwidth. Step 5's read rate
    `gbs5` against the machine chapter's read rate `read_gbs` (the bytes read only, the
    rate Little's law uses); `unroll_s`, step 5's times built with UNROLL = 1, 2, 4 and 8:
    more independent loads in flight and fewer loop instructions per byte, the same bytes.
    If bandwidth sets the time, step 5 sits at the read rate and unrolling leaves its time
    where it is; if issue or latency did, unrolling would move it. Step 4 (`gbs4`), with the
    same grid and loop but one `float` per load, is the control: it must stay below the
    read rate, or the `float4` loads are not what brought step 5 there. (Step 5's time over
    step 4's is not within 10% of 1 on the reference records: step 4 is not bandwidth-bound.)"""
    spread = max(unroll_s) / min(unroll_s) if unroll_s and min(unroll_s) > 0 else None
    share = {k: None if g is None or not read_gbs else g / read_gbs for k, g in (("4", gbs4), ("5", gbs5))}
    return claim("red_step5_bandwidth_bound",
                 "gbs5 >= 0.85 * read_gbs and unroll_spread < 1.1 and gbs4 < 0.85 * read_gbs",
                 "Memory bandwidth, not instructions, is what holds step 5: it read {share5:.0%} of "
                 "the machine chapter's read rate ({read_gbs:,.0f} GB/s), and building it with 1 to 8 "
                 "loads per loop iteration moved its time by at most {spread_pct:.1%}, so neither more "
                 "loads in flight nor fewer instructions per byte buy anything once memory streams at "
                 "its rate. Step 4 is not held there: with one `float` per load it read {share4:.0%} "
                 "of the read rate",
                 "This run does not show bandwidth as what holds step 5 alone: step 5 read "
                 "{share5:.0%} of the machine chapter's read rate ({read_gbs:,.0f} GB/s), building it "
                 "with 1 to 8 loads per loop iteration moved its time by up to {spread_pct:.1%}, and "
                 "step 4 read {share4:.0%} of it (the test: step 5 at 85% or more, unrolling within "
                 "10%, step 4 below 85%)",
                 missing="The machine chapter recorded no read rate for this device, so steps 4 and 5 "
                         "are not set against it",
                 glue=False, kind="cause",
                 gbs4=gbs4, gbs5=gbs5, read_gbs=read_gbs, unroll_spread=spread,
                 share4=share["4"], share5=share["5"],
                 spread_pct=None if spread is None else spread - 1)


# ------------------------------------------------------------- causes from counters
def _trusted(row):
    return row if trusted_metrics(row) is not None else None


def warp_rounds(wg, warp, sequential):
    """Warp-rounds of a work-group's tree that run the round's local loads: a warp runs
    them when any of its work-items is active. Interleaved (step 1): in the round of
    stride s the work-items whose index is a multiple of 2s; sequential (step 2): the
    first s."""
    rounds, s = 0, (wg // 2 if sequential else 1)
    while 0 < s < wg:
        active = ({i // warp for i in range(s)} if sequential
                  else {i // warp for i in range(0, wg, 2 * s)})
        rounds += len(active)
        s = s // 2 if sequential else s * 2
    return rounds


def steps12_banks(row1, row2, whose):
    """Steps 1 and 2 (kind "cause"): neither tree has bank conflicts. From the
    counters (`row1`, `row2`: the two kernels' rows), conflicts are under 5% of each
    kernel's local-memory wavefronts; a tree with a 2-way conflict in every round's
    loads would show about half."""
    r1, r2 = _trusted(row1), _trusted(row2)
    share1 = r1["metrics"].get("shared_conflict_share") if r1 else None
    share2 = r2["metrics"].get("shared_conflict_share") if r2 else None
    return claim("red_steps12_no_conflicts", "share1 < 0.05 and share2 < 0.05",
                 f"{whose}'s counters: bank conflicts are {{share1:.1%}} of step 1's "
                 "local-memory wavefronts and {share2:.1%} of step 2's: neither tree has "
                 "bank conflicts, so they are not what changes from step 1 to step 2",
                 f"{whose}'s counters: bank conflicts are {{share1:.1%}} of step 1's "
                 "local-memory wavefronts and {share2:.1%} of step 2's: a tree here does "
                 "have bank conflicts",
                 missing="No trusted counters of steps 1 and 2 are recorded, so their bank "
                         "conflicts are not counted",
                 glue=False, kind="cause", share1=share1, share2=share2)


def steps12_divergence(row1, row2, whose, wg, gain, warp=32):
    """Steps 1 and 2 (kind "cause"): what sequential addressing removes is divergent
    warps. A warp with one active work-item runs a round's loads for all 32, so step
    1's local-load wavefronts over step 2's must be the ratio of warp-rounds with an
    active work-item (`warp_rounds`), within 15%; with no divergence cost the two
    trees would issue the same loads. `gain`: step 2's speed over step 1's in this run
    (recorded with the claim, not in its sentence: the counters may be another device's)."""
    r1, r2 = _trusted(row1), _trusted(row2)
    w1 = r1["metrics"].get("shared_ld_wavefronts") if r1 else None
    w2 = r2["metrics"].get("shared_ld_wavefronts") if r2 else None
    model = warp_rounds(wg, warp, False) / warp_rounds(wg, warp, True)
    ratio = w1 / w2 if w1 and w2 else None
    return claim("red_steps12_divergence", "abs(ratio / model - 1) < 0.15",
                 f"{whose}'s counters: step 1 ran {{ratio:.1f}}× the local-load wavefronts "
                 "of step 2, where counting the warps with an active work-item in each "
                 "round gives {model:.1f}×: step 1's divergent warps run each round's loads "
                 "for all their work-items",
                 f"{whose}'s counters: step 1 ran {{ratio:.1f}}× the local-load wavefronts "
                 "of step 2, against {model:.1f}× from the warps with an active work-item: "
                 "divergence does not account for the difference here",
                 missing="No trusted counters of steps 1 and 2 are recorded, so what "
                         "divergence costs is not counted",
                 glue=False, kind="cause", ratio=ratio, model=model, gain=gain, wg=wg)


def tree_conflicts(rows, whose):
    """The training half's tree (kind "cause"): its partial gradients sit K = 8 floats
    apart, so in a round the active work-items l read words l*K: in 32 banks,
    conflict-free for at most 32/K = 4 of them, and 8-way once a warp is full. The
    counters of `tree.cl` with no examples (PER_ITEM=0, the tree alone), `rows`
    {N: trusted row}: at N <= 4 conflicts must be under 5% of the local wavefronts;
    at the largest N over half (an 8-way load makes 7 of its 8 wavefronts replays)."""
    share = {n: r["metrics"].get("shared_conflict_share") for n, r in rows.items()}
    small = [s for n, s in share.items() if n <= 4 and s is not None]
    big = max(share) if share else None
    return claim("tree_bank_conflicts", "small_max < 0.05 and big_share > 0.5",
                 f"{whose}'s counters for the tree alone: bank conflicts are at most "
                 "{small_max:.1%} of the local wavefronts with up to 4 work-items, and "
                 "{big_share:.0%} with {big:.0f}: the partial gradients, 8 floats apart, "
                 "collide in the banks once a warp holds more than 4 active work-items",
                 f"{whose}'s counters for the tree alone: bank conflicts are "
                 "{small_max:.1%} of the local wavefronts with up to 4 work-items and "
                 "{big_share:.0%} with {big:.0f}: not the pattern the 8-float spacing "
                 "predicts",
                 missing="No trusted counters of the tree alone are recorded, so its bank "
                         "conflicts are not counted",
                 glue=False, kind="cause", small_max=max(small) if small else None,
                 big=big, big_share=share.get(big))


def tree_latency(rows, whose):
    """The training half (kind "cause"): one iteration of `tree.cl` with its examples
    (`rows` {N: trusted row}) is bound by the latency of dependent loads from global
    memory if its warps wait on them (long scoreboard) for most of their stalls at
    every N."""
    # a stall reason not among a row's recorded top reasons took a small share: 0 here
    waits = [r["metrics"].get("stalls", {}).get("long_scoreboard", 0.0) for r in rows.values()]
    return claim("tree_examples_latency", "least > 0.5",
                 f"{whose}'s counters for one iteration with its examples (N = {{lo:.0f}} to "
                 "{hi:.0f}): its warps waited on global loads (long scoreboard) for "
                 "{least:.0%} to {most:.0%} of their stalls: the examples' part waits on "
                 "the latency of its loads",
                 f"{whose}'s counters for one iteration with its examples (N = {{lo:.0f}} to "
                 "{hi:.0f}): waits on global loads were as low as {least:.0%} of the stalls: "
                 "load latency is not shown to hold it",
                 missing="No trusted counters of one iteration of the tree are recorded, so "
                         "what holds its examples' part is not shown",
                 glue=False, kind="cause", least=min(waits) if waits else None,
                 most=max(waits) if waits else None,
                 lo=min(rows) if rows else None, hi=max(rows) if rows else None)


def tree_labels(counters, per_item):
    """{N: label} of `tree.cl`'s trusted counter rows: with PER_ITEM=0 (the tree
    alone) or, with `per_item` None, one iteration with its examples (ITERS=1)."""
    import re
    out = {}
    for label, row in counters.items():
        if not label.startswith("logreg/tree.cl:") or not _trusted(row):
            continue
        alone, one = "PER_ITEM=0" in label, "ITERS=1 " in label
        if (per_item == 0 and alone) or (per_item is None and one and not alone):
            out[int(re.search(r" N=(\d+)", label).group(1))] = label
    return out


def tree_rows(counters, per_item):
    """{N: trusted row} of `tree.cl`'s counters (`tree_labels`)."""
    return {n: counters[label] for n, label in tree_labels(counters, per_item).items()}
