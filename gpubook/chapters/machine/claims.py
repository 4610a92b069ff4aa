"""The sentences chapter 0 and the machine page say about their measurements, as
claims (gpubook.claims): each relation is evaluated on the run's numbers, and the
page shows the sentence that is true for it. Both pages read Little's law through
the same function (`little_sentence`), with the same read rate and latency."""
from ...claims import claim
from ...curves import human_bytes, middle_level
# the causes live in causes.py; the pages reach them here
from .causes import (  # noqa: F401
    _kib, fma_clock_cause, l1_size_cause, chase_latency_cause, read_l1_cause, stride1_cause,
    queues_past_the_knee)


def little_sentence(little, arch_name=None, glue_name=None, glue=True):
    """The bytes each resident work-item must keep in flight (Little's law, the read
    rate) set against one float and one float4 load. Returns the sentence; the two
    claims go into the record. `little`: gpubook.limits.bytes_in_flight's dict."""
    item = little.get("per_item_bytes")
    if not item:
        text = ("How many work-items a compute unit of this device holds at once is not known here, "
                "so the bytes each work-item must keep in flight are not worked out.")
        if glue and glue_name:
            from ...show import glue as _glue
            _glue(**{glue_name: text})
        return text
    resident = little["resident_items"]
    head = (f"A compute unit{' of ' + arch_name if arch_name else ''} holds at most {resident:,} "
            f"work-items, so each must keep {item:.1f} bytes in flight: ")
    f = claim("little_float_thin",
              "per_item > 4 / 1.25",
              "one `float` load (4 bytes) per work-item is {ratio:.2f} times that, which leaves no room for "
              "a compute unit that is not full",
              "one `float` load (4 bytes) per work-item is {ratio:.2f} times that, room to spare",
              glue=False, per_item=item, ratio=4 / item)
    f4 = claim("little_float4_covers", "per_item <= 16",
               "one `float4` load (16 bytes) covers it {ratio:.1f} times over.",
               "even one `float4` load (16 bytes) falls short ({ratio:.2f} times what is needed).",
               glue=False, per_item=item, ratio=16 / item)
    text = head + f.sentence + "; " + f4.sentence
    if glue and glue_name:
        from ...show import glue as _glue
        _glue(**{glue_name: text})
    return text


def copy_widths(float_gbs, float4_gbs):
    """Chapter 0: the float4 copy against the float copy, at the largest size."""
    return claim("copy_float4_beats_float", "float4_gbs > float_gbs",
                 "`float4` beat `float` ({ratio:.2f} times its rate)",
                 "`float4` did not beat `float` here ({ratio:.2f} times its rate)",
                 float_gbs=float_gbs, float4_gbs=float4_gbs,
                 ratio=float4_gbs / float_gbs if float_gbs else None)


def pageable(rows):
    """Chapter 0: pageable host-to-device copies at their best and at the largest size.
    rows: the transfer sweep's records of the variant 'host→device, pageable'."""
    best = max(rows, key=lambda r: r["rate"])
    last = max(rows, key=lambda r: r["bytes"])
    return claim("pageable_falls", "last_gbs < 0.5 * peak_gbs",
                 "pageable host→device copies peaked at {peak_gbs:.1f} GB/s at " + human_bytes(best["bytes"])
                 + " but fell to {last_gbs:.1f} GB/s at " + human_bytes(last["bytes"])
                 + ", {share:.0%} of their peak: that is the rate a large NumPy array crosses at",
                 "pageable host→device copies peaked at {peak_gbs:.1f} GB/s at " + human_bytes(best["bytes"])
                 + " and still ran at {last_gbs:.1f} GB/s at " + human_bytes(last["bytes"])
                 + " ({share:.0%} of their peak)",
                 peak_gbs=best["rate"], last_gbs=last["rate"], share=last["rate"] / best["rate"])


def float2_exercise(f2_over_f, f4_over_f2, per_item):
    """Chapter 0, exercise 1: where float2 lands, read against Little's law.

    `per_item`, the bytes each work-item must keep in flight, falls in one of three
    cases: one `float` (4 bytes) covers it, `float2` (8 bytes) is the first to cover
    it, or even `float2` falls short. The claim is that 8 bytes cover it (both
    reference devices hold it, one in each of the first two cases); where it holds,
    the sentence names which of the two cases this run is in, read off `per_item`
    (recorded with the claim), and says "a doubling helps until the bytes are covered,
    and less after" only where `float2` is the first to cover them and the first
    doubling gained more than the second. Returns (the first doubling's claim, the
    coverage claim)."""
    first = claim("ex_float2_first_doubling", "f2_over_f > f4_over_f2",
                  "the first doubling, from 4 to 8 bytes per work-item, gained more "
                  "({f2_over_f:.2f}×) than the second, from 8 to 16 "
                  "({f4_over_f2:.2f}×)",
                  "the first doubling, from 4 to 8 bytes per work-item, gained no more "
                  "({f2_over_f:.2f}×) than the second, from 8 to 16 "
                  "({f4_over_f2:.2f}×)",
                  f2_over_f=f2_over_f, f4_over_f2=f4_over_f2)
    asks = "the {per_item:.2f} bytes Little's law asks"
    float_short = ("4 bytes per work-item fall short of " + asks
                   + " and 8 cover them, so ")
    if per_item is not None and per_item <= 4:
        held = ("one `float` (4 bytes) per work-item already covers " + asks
                + " ({ratio:.2f} times over, with every compute unit full): by that "
                "count no doubling was needed, so Little's law does not explain what "
                "the doublings gained here")
    elif first.held and f2_over_f > 1:
        held = (float_short + "`float2` is the first to cover them: a doubling helps "
                "until the bytes in flight cover what memory needs, and less after")
    else:
        held = (float_short + "`float2` is the first to cover them; yet the doublings "
                "gained {f2_over_f:.2f}× and then {f4_over_f2:.2f}×, not a gain up to "
                "that point and less after it, as Little's law would have it")
    covers = claim("ex_float2_covers", "per_item <= 8", held,
                   "even 8 bytes per work-item fall short of " + asks + ", so by that "
                   "count the second doubling, to 16 bytes, still adds bytes memory "
                   "needs",
                   missing="how many bytes each work-item must keep in flight is not "
                           "known on this device",
                   per_item=per_item, ratio=4 / per_item if per_item else None,
                   f2_over_f=f2_over_f, f4_over_f2=f4_over_f2)
    return first, covers


def group_exercise(ratio, small, big, resident_small, need_cu, n_items):
    """Chapter 0, exercise 2: the float4 copy in work-groups of `small` against `big`.
    resident_small: work-items a compute unit holds in groups of `small` (None where
    the architecture is not known); need_cu: Little's bytes in flight per compute unit."""
    slower = claim("ex_group_slower", "ratio < 0.9",
                   "slowed the copy down: it ran at {ratio:.2f}× the rate with groups of {big:.0f}",
                   "changed the rate little: {ratio:.2f}× the rate with groups of {big:.0f}",
                   ratio=ratio, big=big)
    inflight = None if resident_small is None else 16 * resident_small
    little = claim("ex_group_not_little", "inflight >= need_cu",
                   "Little's law does not explain it: in groups of {small:.0f} a compute unit still holds "
                   "{resident:,.0f} work-items, and one `float4` load each puts " + str(_kib(inflight))
                   + " in flight, against the " + str(_kib(need_cu)) + " memory needs",
                   "Little's law explains it: in groups of {small:.0f} a compute unit holds only "
                   "{resident:,.0f} work-items, and one `float4` load each puts " + str(_kib(inflight))
                   + " in flight, short of the " + str(_kib(need_cu)) + " memory needs",
                   missing="how many work-groups a compute unit holds is not known on this device, so "
                           "the bytes in flight are not counted",
                   inflight=inflight, need_cu=need_cu, small=small, resident=resident_small)
    groups = (f"What grows instead is the number of work-groups the hardware must start and retire, "
              f"{n_items // small:,} instead of {n_items // big:,}, for one `float4` per work-item")
    return slower, little, groups


def cache_knee(bandwidth, facts):
    """The machine page: which cache the bandwidth curve's knee belongs to, against what
    OpenCL reports as the global-memory cache and the data sheet's L2."""
    from ...curves import knee

    last_high, first_low, plateau = knee(bandwidth, "rate")
    rate = {r["bytes"]: r["rate"] for r in bandwidth}
    reported, l2 = facts.get("cache_bytes") or None, facts.get("l2_bytes")
    past = claim("knee_past_reported", "first_low > 4 * reported",
                 "the curve falls far past the figure OpenCL reports as its global-memory cache ("
                 + str(_kib(reported)) + "), so that figure is not the last cache before memory",
                 "the curve falls near the figure OpenCL reports as its global-memory cache ("
                 + str(_kib(reported)) + ")",
                 missing="this device reports no global-memory cache size", first_low=first_low, reported=reported)
    at_l2 = claim("knee_at_l2", "last_high < l2 <= first_low",
                  "the read still ran at {high_share:.0%} of the cache plateau at " + str(_kib(last_high))
                  + " and at {low_share:.0%} by " + str(_kib(first_low)) + "; the data sheet's L2 of "
                  + str(_kib(l2)) + " lies between, so the knee is where the L2 runs out",
                  "the data sheet's L2 of " + str(_kib(l2)) + " does not lie where the curve falls (it still "
                  "ran at {high_share:.0%} of the plateau at " + str(_kib(last_high)) + ", {low_share:.0%} by "
                  + str(_kib(first_low)) + ")",
                  missing="the book's data-sheet table does not list this device's L2",
                  last_high=last_high, first_low=first_low, l2=l2,
                  high_share=rate.get(last_high, float("nan")) / plateau if last_high else None,
                  low_share=rate.get(first_low, float("nan")) / plateau if first_low else None)
    return past, at_l2


def latency_levels(latency, facts):
    """The machine page: the level the pointer chase shows between the smallest set's
    latency and device memory's (at least two neighbouring sets within 10% of each other),
    and whether it ends inside the data sheet's L2 (its last set fits the L2, the next
    does not). Returns the two claims."""
    small, big = latency[0]["ns"], latency[-1]["ns"]
    mid = middle_level(latency, "ns")
    level = mid and mid["sets"] >= 2
    lo, hi = (str(_kib(mid["lo"])), str(_kib(mid["hi"]))) if level else ("", "")
    found = claim("latency_mid_level", "sets >= 2 and 2 * small < mid < 0.6 * big",
                  "Between the two the curve has a level of its own: from " + lo + " to " + hi
                  + " a load took {mid:,.0f} ns, {mid_small:.1f} times the smallest set's latency "
                  "and {mid_big:.0%} of device memory's, so a working set there is served by a "
                  "cache slower than the smallest sets' and faster than device memory",
                  "Between the two the curve shows no level of its own that holds over two "
                  "neighbouring working sets",
                  missing="Between the two the curve shows no level of its own that holds over "
                          "two neighbouring working sets",
                  sets=mid["sets"] if mid else 0, small=small, big=big,
                  mid=mid["level"] if level else None,
                  mid_small=mid["level"] / small if level else None,
                  mid_big=mid["level"] / big if level else None)
    l2 = facts.get("l2_bytes")
    after = mid["after"] if level else None
    in_l2 = claim("latency_mid_in_l2", "hi <= l2 < after",
                  "that level ends inside the data sheet's L2 of " + str(_kib(l2)) + " (" + hi
                  + " fits it, " + str(_kib(after)) + " does not): it is the L2's latency",
                  "the data sheet's L2 of " + str(_kib(l2)) + " does not lie where that level ends ("
                  + hi + " to " + str(_kib(after)) + "), so the level is not named here",
                  missing="which cache serves that level is not named here (no level, or the "
                          "book's data-sheet table does not list this device's L2)",
                  hi=mid["hi"] if level else None, l2=l2, after=after)
    return found, in_l2


def banks(slow2, slow32, slow_odd):
    """The machine page: local memory's strides against the 32-bank model."""
    order = claim("banks_follow_model", "slow_odd < 1.1 and 1.1 < slow2 < slow32",
                  "the measured curve keeps the model's order: odd strides cost nothing "
                  "(at most {slow_odd:.2f}×), stride 2 costs more and stride 32 most",
                  "the measured curve does not keep the model's order (odd strides up to {slow_odd:.2f}×, "
                  "stride 2 {slow2:.2f}×, stride 32 {slow32:.1f}×)",
                  slow2=slow2, slow32=slow32, slow_odd=slow_odd)
    below = claim("banks_below_model", "slow2 < 2 and slow32 < 32",
                  "each step costs less than the model's count of turns ({slow2:.2f}× for 2, "
                  "{slow32:.1f}× for 32): the model counts only the turns of the conflicting load, while "
                  "the time also holds the loop's other instructions, which conflicts do not repeat",
                  "the steps cost at least the model's count of turns ({slow2:.2f}× for 2, "
                  "{slow32:.1f}× for 32)",
                  slow2=slow2, slow32=slow32)
    return order, below


def stride_exercise(s16, s17, s32):
    """The machine page's exercise: strides 16, 17 and 32 against gcd(stride, 32)."""
    return claim("ex_strides_order", "s17 < 1.1 and 1.1 < s16 < s32",
                 "The order is the model's: stride 17 costs nothing, 16 costs less than 32",
                 "The order is not the model's here (16: {s16:.2f}×, 17: {s17:.2f}×, 32: {s32:.2f}×)",
                 s16=s16, s17=s17, s32=s32)


def fma_ramp(records, best, empty_us):
    """Chapter 0: why the FMA loop's rate grows with the work-items per compute unit,
    read from the sweep itself. Each work-item runs the same chains, so a launch's work
    grows with the work-items. The first points of the sweep that take the same time per
    launch as the first (within 10%) end at `hi`; from `hi` on, a model of a launch as
    chapter 0's empty-kernel time (`empty_us`) plus its work at the best rate must give
    every point within 10%. Where both hold, a fixed cost per launch spread over more
    work explains the ramp: from `hi` work-items on the work already runs at the best
    rate, and below it a launch takes no less time. Returns the claim (kind "cause")."""
    rows = sorted(records, key=lambda r: r["items_per_cu"])
    enough = min((r["items_per_cu"] for r in rows if r["rate"] >= 0.9 * best), default=None)
    flat = 1
    while flat < len(rows) and rows[flat]["median_s"] <= 1.1 * rows[0]["median_s"]:
        flat += 1
    worst, at = None, None
    for r in rows[flat - 1:]:
        gflop = r["rate"] * r["median_s"]
        model = gflop / (empty_us * 1e-6 + gflop / best) if empty_us is not None else None
        off = None if model is None else abs(model / r["rate"] - 1)
        if off is not None and (worst is None or off > worst):
            worst, at = off, (r["items_per_cu"], model, r["rate"])
    hi = rows[flat - 1]["items_per_cu"]
    farthest = ("" if at is None else
                f"{at[1] / 1e3:,.1f} TFLOP/s against a measured {at[2] / 1e3:,.1f} at {at[0]:,}")
    return claim("fma_ramp_fixed_cost", "flat >= 2 and worst < 0.1",
                 "It reached 90% of its best first at {enough:,.0f} work-items per compute unit, but "
                 "not because it needed that many to hide latency. From " + f"{hi:,}" + " work-items per "
                 "compute unit on, a launch took what an empty kernel takes ({empty_us:.1f} µs) plus its "
                 "work at the best rate (that model is within {worst:.0%} of every point from there; "
                 "farthest: " + farthest + "), and with fewer a launch took no less time ({t_us:.1f} µs "
                 "at " + f"{rows[0]['items_per_cu']:,}" + "). The rate grows because a fixed cost per "
                 "launch is spread over more work",
                 "It reached 90% of its best first at {enough:,.0f} work-items per compute unit; a fixed "
                 "cost per launch spread over more work does not account for the curve here (an empty "
                 "kernel's {empty_us:.1f} µs plus work at the best rate is off by up to {worst:.0%} from "
                 + f"{hi:,}" + " work-items per compute unit on; farthest: " + farthest + "), so why the "
                 "rate grows is not shown by this sweep",
                 missing="chapter 0 did not time an empty kernel here, so the sweep's rise is not "
                         "explained",
                 kind="cause", enough=enough, flat=flat, worst=worst, empty_us=empty_us,
                 t_us=rows[0]["median_s"] * 1e6)


def small_copies(records, best, empty_us, floats=2**20):
    """Chapter 0: the float4 copy at `floats` against its best, and its time against
    the event time of an empty kernel."""
    row = next((r for r in records if r["variant"] == "float4" and r["floats"] == floats), None)
    rate = None if row is None else row["rate"]
    t_us = None if row is None else 8 * floats / rate / 1e3
    return claim("copy_small_fixed_cost", "rate < 0.5 * best and t_us < 2 * empty_us",
                 "At {floats:,.0f} elements the `float4` copy ran at {share:.0%} of its best and took "
                 "{t_us:.1f} µs, within twice the {empty_us:.1f} µs an empty kernel takes: the copy is "
                 "over before the memory system is busy, and the fixed cost of a launch dominates",
                 "At {floats:,.0f} elements the `float4` copy already ran at {share:.0%} of its best "
                 "({t_us:.1f} µs, against {empty_us:.1f} µs for an empty kernel)",
                 missing="this run did not measure the copy at a million elements",
                 rate=rate, best=best, t_us=t_us, empty_us=empty_us, floats=floats,
                 share=None if rate is None else rate / best)


def levels(cache_gbs, read_gbs, h2d_gbs, local_gbs):
    """The machine page: the measured levels below the compute unit, fastest first, and
    local memory's stride-1 rate against the caches' best."""
    return claim("levels_slower_down", "cache_gbs > read_gbs > h2d_gbs",
                 "Below the compute unit each level is larger and slower per byte: {cache_gbs:,.0f} GB/s from "
                 "the caches at best, {read_gbs:,.0f} from device memory, {h2d_gbs:,.1f} over the link to the "
                 "host. Local memory, read at stride 1 by this page's kernel, gave {local_gbs:,.0f} GB/s, "
                 "{local_ratio:.2f} times the caches' best",
                 "The measured levels are not in the order of their sizes: {cache_gbs:,.0f} GB/s from the "
                 "caches at best, {read_gbs:,.0f} from device memory, {h2d_gbs:,.1f} over the link",
                 cache_gbs=cache_gbs, read_gbs=read_gbs, h2d_gbs=h2d_gbs, local_gbs=local_gbs,
                 local_ratio=local_gbs / cache_gbs if cache_gbs else None)


def plateau_cause(wrapped, rotated, facts):
    """The machine page: the read curve's plateau with the wrapped index (each compute unit
    re-reads its own part of the set) against the same sweep with the work-groups rotated
    each pass (ROTATE=1), over the sets from 1 MiB to a quarter of the L2 (the data sheet's,
    else what OpenCL reports): far beyond an L1, well inside the L2."""
    wrap = {r["bytes"]: r["rate"] for r in wrapped}
    rot = {r["bytes"]: r["rate"] for r in rotated or []}
    l2 = facts.get("l2_bytes") or facts.get("cache_bytes") or 0
    mid = sorted(n for n in rot if n in wrap and 2**20 <= n <= l2 // 4)
    ratios = sorted(rot[n] / wrap[n] for n in mid)
    ratio = ratios[len(ratios) // 2] if ratios else None
    lo, hi = (str(_kib(mid[0])), str(_kib(mid[-1]))) if mid else ("", "")
    wrap_gbs = sorted(wrap[n] for n in mid)[len(mid) // 2] if mid else None
    rot_gbs = sorted(rot[n] for n in mid)[len(mid) // 2] if mid else None
    return claim("plateau_l1_reuse", "ratio < 0.8",
                 "with the work-groups rotated each pass, so that no compute unit keeps re-reading "
                 "its own part of the set, working sets of " + lo + " to " + hi + " were read at "
                 "{ratio:.0%} of the wrapped kernel's rate ({rot_gbs:,.0f} against {wrap_gbs:,.0f} "
                 "GB/s): the plateau up to the knee is each compute unit's L1 serving its own part "
                 "again, and what the L2 delivers to all compute units at once is the lower figure",
                 "with the work-groups rotated each pass, so that no compute unit keeps re-reading "
                 "its own part of the set, working sets of " + lo + " to " + hi + " were still read "
                 "at {ratio:.0%} of the wrapped kernel's rate ({rot_gbs:,.0f} against {wrap_gbs:,.0f} "
                 "GB/s): the plateau is the L2's, not the L1s' reuse of the wrapped indices",
                 missing="the rotated sweep runs in the GPU order only (or no working set lies between "
                         "1 MiB and a quarter of the L2 here), so the plateau's cache is not told apart",
                 ratio=ratio, wrap_gbs=wrap_gbs, rot_gbs=rot_gbs)


def banks_line(by_stride):
    """The machine page: the stride curve at 2, 4, ..., 32 ways against a straight line in
    the number of turns (least squares), and what the line says of stride 1.
    by_stride: {stride: time relative to stride 1}."""
    ways = [w for w in (2, 4, 8, 16, 32) if w in by_stride]
    if len(ways) < 3:
        return claim("banks_linear", "worst < 0.1", "", "", missing="the sweep did not reach 2 to 32 ways",
                     worst=None)
    mean_w, mean_t = sum(ways) / len(ways), sum(by_stride[w] for w in ways) / len(ways)
    slope = (sum((w - mean_w) * (by_stride[w] - mean_t) for w in ways)
             / sum((w - mean_w) ** 2 for w in ways))
    base = mean_t - slope * mean_w
    worst = max(abs(base + slope * w - by_stride[w]) / by_stride[w] for w in ways)
    return claim("banks_linear", "worst < 0.1 and 0.2 < slope < 0.9",
                 "From 2 to 32 ways the time is a straight line in the number of turns the banks take "
                 "(within {worst:.0%} at every power of two): each turn costs {slope:.2f} of stride 1's "
                 "time. For one turn the line gives {line1:.2f} of it, yet stride 1 took all of it: there "
                 "something other than the banks sets the time (the loop's other instructions), and the "
                 "model's ratios, which divide by that time, come out at {slow2:.2f} and {slow32:.1f} "
                 "instead of 2 and 32",
                 "From 2 to 32 ways the time is not a straight line of slope between 0.2 and 0.9 in the "
                 "number of turns (off by {worst:.0%} at worst, {slope:.2f} of stride 1's time per turn): the "
                 "model's count of turns does not explain the measured ratios here",
                 worst=worst, slope=slope, line1=base + slope,
                 slow2=by_stride.get(2), slow32=by_stride.get(32))

