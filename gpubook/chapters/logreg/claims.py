"""The sentences chapters 1 and 2 say about their measurements, as claims
(gpubook.claims), and the resource table of a launch that is one work-group."""
from ...claims import claim


def loop_order(ns_naive, ns_reordered, ns_merged, hit_ns, hit_set):
    """Chapter 1: time per access of the three kernels, against the latency of one
    dependent load that hits the nearest cache (the machine page's pointer chase at
    its smallest working set, `hit_set` in words)."""
    close = claim("reordered_merged_close", "abs(ns_merged / ns_reordered - 1) < 0.15",
                  "The reordered and merged kernels spend about the same time per access "
                  "({ns_reordered:.1f} and {ns_merged:.1f} ns, {diff:.0%} apart), so merging "
                  "gains by halving the accesses",
                  "The reordered and merged kernels spend different times per access "
                  "({ns_reordered:.1f} and {ns_merged:.1f} ns, {diff:.0%} apart), so halving "
                  "the accesses is not all that merging changed",
                  ns_reordered=ns_reordered, ns_merged=ns_merged,
                  diff=abs(ns_merged / ns_reordered - 1) if ns_reordered else None)
    overlap = claim("loads_overlap", "max(ns_reordered, ns_merged) < hit_ns",
                    "less than the {hit_ns:.0f} ns one dependent load took in the machine page's pointer "
                    "chase even from a " + hit_set + " working set, a hit in the nearest cache: so a "
                    "work-item's loads overlap, several in flight at once, as its independent sums allow",
                    "no less than the {hit_ns:.0f} ns one dependent load took in the machine page's pointer "
                    "chase from a " + hit_set + " working set: the loads wait for each other",
                    missing="not set against a cache hit here: the machine page has no pointer chase recorded for this device",
                    ns_reordered=ns_reordered, ns_merged=ns_merged, hit_ns=hit_ns)
    naive = claim("naive_pays_more", "ns_naive > max(ns_reordered, ns_merged)",
                  "The naive kernel pays more per access ({ns_naive:.1f} ns)",
                  "The naive kernel pays no more per access here ({ns_naive:.1f} ns)",
                  ns_naive=ns_naive, ns_reordered=ns_reordered, ns_merged=ns_merged)
    return close, overlap, naive


def more_examples(naive_growth, merged_growth, K):
    """Chapter 1, exercise 2: growth of the time per access from J = 2048 to 16,384."""
    x_share = {"naive": 2 * K / (3 * K + 2), "merged": K / (K + 1)}  # accesses that read X
    return claim("ex_merged_grew_more", "merged_growth > naive_growth",
                 "The merged kernel's time per access grew more ({merged_growth:.2f}× against the naive "
                 "kernel's {naive_growth:.2f}×)",
                 "The naive kernel's time per access grew more ({naive_growth:.2f}× against the merged "
                 "kernel's {merged_growth:.2f}×)",
                 naive_growth=naive_growth, merged_growth=merged_growth), x_share


def work_items(best, last, best_n, last_n, model_best):
    """Chapter 2: the curve past its peak, and the model's optimum against the peak."""
    falls = claim("curve_falls_past_peak", "last < best and last_n > best_n",
                  "Beyond that the curve falls",
                  "Beyond that the curve does not fall here",
                  best=best, last=last, best_n=best_n, last_n=last_n)
    near = claim("model_optimum_near_peak", "best_n / 2 < model_best < 2 * best_n",
                 "between the measured neighbours of the peak",
                 "not between the measured neighbours of the peak (N = {best_n:.0f})",
                 missing="the fit gives no optimum on this device (a or b is not positive)",
                 best_n=best_n, model_best=model_best)
    return falls, near


def wider_rows(best_n8, best_n16):
    """Chapter 2, exercise 1: the best group size at K = 8 and at K = 16."""
    return claim("ex_wider_rows_peak", "max(best_n8, best_n16) <= 2 * min(best_n8, best_n16)",
                 "Here they did: the best N was {best_n8:.0f} at K = 8 and {best_n16:.0f} at K = 16, "
                 "the same or a neighbour, as the model says",
                 "Here they did not: the best N was {best_n8:.0f} at K = 8 and {best_n16:.0f} at K = 16",
                 best_n8=best_n8, best_n16=best_n16)


def serial_sum_growth(rest, K, warp):
    """Chapter 2, exercise 2: what is left of an iteration without its examples
    (`rest`, {N: s}, over the whole training's launch) from a warp's N up. Between
    neighbouring N, each added number of work-item 0's serial sum costs
    (t(N2) - t(N1)) / ((N2 - N1) K); the sum is the iteration if that cost stays the
    same and the additions make up nearly all of the largest N's time."""
    ns = sorted(n for n in rest if n >= warp)
    cost = [(rest[b] - rest[a]) / ((b - a) * K) for a, b in zip(ns, ns[1:])]
    lo, hi = ns[0] if ns else None, ns[-1] if ns else None
    seen = ("{m_min:.2f} to {m_max:.2f} ns, and at $N$ = {hi:.0f} its $N \\cdot K$ additions "
            "come to {share:.0%} of the {t_hi_us:.2f} µs left of an iteration")
    return claim("ex_serial_growth_linear", "m_max < 1.25 * m_min and share > 0.9",
                 "it did: from $N$ = {lo:.0f} to {hi:.0f}, each added number cost " + seen,
                 "it did not: from $N$ = {lo:.0f} to {hi:.0f}, an added number cost " + seen,
                 "this device runs fewer than two group sizes of a warp or more, so the cost of "
                 "an added number is not measured here",
                 lo=lo, hi=hi, m_min=min(cost) * 1e9 if cost else None,
                 m_max=max(cost) * 1e9 if cost else None,
                 share=cost[-1] * hi * K / rest[hi] if cost else None,
                 t_hi_us=rest[hi] * 1e6 if ns else None)


def one_group_table(rows, device, resource_table):
    """The resource table of kernels launched as a single work-group, with the
    occupancy column replaced by why it means nothing there: one work-group runs on
    one compute unit, and the others stay idle whatever the share of its warp slots."""
    table = resource_table(rows, device)
    units = device.max_compute_units
    why = f"one work-group: 1 of {units} compute units busy"
    lines = table.split("\n")
    out = lines[:2] + [line.rsplit("|", 2)[0] + f"| {why} |" for line in lines[2:]]
    return "\n".join(out)


def wider_rows_gain(k8, k32):
    """Chapter 1, exercise 1: the reordered kernel's gain over the naive one at K = 8 and 32."""
    return claim("ex_reorder_gain_k32", "k32 < k8",
                 "reordering gained less at $K$ = 32 ({k32:.2f}×) than at $K$ = 8 ({k8:.2f}×)",
                 "reordering gained at least as much at $K$ = 32 ({k32:.2f}×) as at $K$ = 8 ({k8:.2f}×)",
                 k8=k8, k32=k32)


def cpu_against_gpu(cpu_rates, gpu_rates):
    """Chapter 1: a CPU's three kernels (iterations/s, from a CPU run: this one or a record)
    against a GPU's, one work-item each. Either may be None where no such run exists."""
    cpu_best = max(cpu_rates) if cpu_rates else None
    faster = claim("cpu_core_beats_lane", "cpu_best >= 2 * gpu_best",
                   "A CPU core runs a single work-item {ratio:.1f} times faster than one GPU lane",
                   "A CPU core runs a single work-item no more than twice as fast as one GPU lane here "
                   "({ratio:.1f} times)",
                   missing="No CPU and GPU run of this chapter are both recorded, so a CPU core and a GPU "
                           "lane are not compared",
                   cpu_best=cpu_best, gpu_best=max(gpu_rates) if gpu_rates else None,
                   ratio=cpu_best / max(gpu_rates) if cpu_rates and gpu_rates else None)
    close = claim("cpu_kernels_close", "spread < 2",
                  "There the three kernels lie within a factor of two of each other ({spread:.2f}×): "
                  "all of $X$ stays in the core's caches, so walking it by columns costs the CPU "
                  "little more than walking it by rows",
                  "There the three kernels lie {spread:.2f}× apart: even with $X$ in the core's "
                  "caches, the order of the walk matters to the CPU",
                  missing="No CPU run of this chapter is recorded",
                  spread=max(cpu_rates) / min(cpu_rates) if cpu_rates else None)
    return faster, close


def fixed_cost(c_share, rest_share):
    """Chapter 2: the fit's fixed cost c against the measured cost without examples, both
    as shares of an iteration at the best N."""
    return claim("fixed_cost_in_examples", "rest_share < c_share / 2",
                 "So most of the cost that does not shrink with $N$ is in the examples",
                 "So the fit's fixed cost is mostly the reduction's, as the model assumed",
                 c_share=c_share, rest_share=rest_share)


def against_baselines(merged, numpy_rate, seed_merged, units):
    """Chapter 1: the merged kernel against NumPy on the host and against the seed's merged
    kernel on its laptop GPU (iterations/s each); `units` the device's compute units."""
    numpy = claim("merged_slower_than_numpy", "merged < numpy_rate",
                  "Even the merged kernel is {x:.0f} times *slower* than NumPy on the host CPU: one "
                  "work-item uses one lane of one of the device's {units:.0f} compute units",
                  "The merged kernel runs at {y:.2f} times NumPy's speed on the host CPU, even as one "
                  "work-item on one lane of one of the device's {units:.0f} compute units",
                  merged=merged, numpy_rate=numpy_rate, units=units,
                  x=numpy_rate / merged, y=merged / numpy_rate)
    seed = claim("merged_beats_seed", "merged > seed_merged",
                 "It is {x:.0f} times faster than the seed's merged kernel on its laptop GPU",
                 "It runs at {x:.2f} times the speed of the seed's merged kernel on its laptop GPU",
                 merged=merged, seed_merged=seed_merged, x=merged / seed_merged)
    return numpy, seed


def warp_rows(ex_1_ns, ex_warp_ns, warp_n):
    """Chapter 2: the time per example and work-item with a warp of `warp_n` work-items
    reading rows far apart, against one work-item alone (ns each)."""
    return claim("warp_rows_partly_serial", "1 < ratio < warp_n",
                 "The work-items of a warp run one instruction stream together, so one load "
                 "instruction of the warp reads rows far apart, as many cache lines as work-items. "
                 "With $N$ = {warp_n:.0f} each work-item spent {ex_warp_ns:.0f} ns per example, "
                 "{ratio:.1f} times the {ex_1_ns:.0f} ns of one work-item alone: the warp's lines "
                 "cost more than one line, but are not served one after another, which would be "
                 "{warp_n:.0f} times",
                 "With $N$ = {warp_n:.0f} each work-item spent {ex_warp_ns:.0f} ns per example, "
                 "{ratio:.2f} times the {ex_1_ns:.0f} ns of one work-item alone: outside the range "
                 "between one cache line's cost and {warp_n:.0f} lines served one after another",
                 ex_1_ns=ex_1_ns, ex_warp_ns=ex_warp_ns, warp_n=warp_n,
                 ratio=ex_warp_ns / ex_1_ns if ex_1_ns else None)


def sharing_cause(sweep, iterations, J, launch_us):
    """Chapter 2, kind "cause": more work-items train faster because they share the
    examples, not because a fixed launch cost is spread over more work. Every point of
    the sweep (`sweep`, the chapter's records) is one launch of the same work, J
    examples for `iterations` iterations, so a launch cost cannot be amortised over
    more work as N grows; the fastest launch is set against chapter 0's back-to-back
    empty-kernel launch (`launch_us`, None where chapter 0 is not recorded). Sharing
    predicts that the first doubling, one work-item to two, halves the time: each
    work-item then has half the examples, and the serial sum of 2·K numbers is small."""
    t = {r["work_items"]: r["median_s"] for r in sweep}
    t_best = min(t.values())
    doubling = t[1] / t[2] if 1 in t and 2 in t else None
    return claim("gain_from_sharing", "launch_share < 0.01 and 1.8 < first_doubling < 2.2",
                 "The gain comes from sharing the examples, not from a launch cost spread "
                 "thin: every point is one launch of the same work ({iterations:,.0f} "
                 "iterations over {J:.0f} examples), and even the fastest took "
                 "{t_best:.2f} s, so chapter 0's {launch_us:.1f} µs launch is "
                 "{launch_share:.1e} of it; from one work-item to two the time fell "
                 "{first_doubling:.2f} times, as halving each work-item's examples predicts",
                 "The sweep does not show that the gain comes from sharing the examples: "
                 "chapter 0's {launch_us:.1f} µs launch is {launch_share:.1e} of the fastest "
                 "launch ({t_best:.2f} s for {iterations:,.0f} iterations over {J:.0f} "
                 "examples), and from one work-item to two the time fell "
                 "{first_doubling:.2f} times, where halving each work-item's examples "
                 "predicts about 2",
                 missing="Whether the gain comes from sharing the examples or from a launch "
                         "cost is not settled here ({names} missing: chapter 0's launch time "
                         "or the sweep's first two points)",
                 glue=False, kind="cause",
                 iterations=iterations, J=J, t_best=t_best, launch_us=launch_us,
                 launch_share=launch_us * 1e-6 / t_best if launch_us is not None else None,
                 first_doubling=doubling)


def reorder_cause(t_naive, t_reordered, accesses, visits, launch_us):
    """Chapter 1, kind "cause": reordering loop 2 gains because the lone work-item's
    time follows its memory accesses, each a wait on a load (the page's memory
    table), not because it fetches fewer cache lines of X, nor because of a launch
    cost. `accesses` and `visits` are the page's counts per iteration (accesses, and
    lines of X visited) for "naive" and "reordered"; `t_naive` and `t_reordered`
    the median seconds of one launch each; `launch_us` chapter 0's back-to-back
    empty-kernel launch (None where chapter 0 is not recorded). The gain must be at
    least the ratio of accesses (the naive kernel pays no less per access) and nearer
    it than the ratio of line visits: below their geometric midpoint. A gain that
    followed the lines fetched would be near that ratio (K + 1 against 2), and one
    launch a kernel makes a launch cost the same for both and tiny beside seconds."""
    access_ratio = accesses["naive"] / accesses["reordered"]
    line_ratio = visits["naive"] / visits["reordered"]
    gain = t_naive / t_reordered if t_naive and t_reordered else None
    return claim("reorder_gain_from_accesses",
                 "launch_share < 0.01 and access_ratio <= gain < midpoint",
                 "The gain of reordering follows the accesses saved, each a wait on a load, "
                 "not the cache lines fetched and not a launch cost: the reordered kernel ran "
                 "{gain:.2f} times faster, above the {access_ratio:.2f} times fewer accesses "
                 "it makes per iteration and below {midpoint:.2f}, the midpoint (geometric) "
                 "towards the {line_ratio:.1f} times fewer lines of $X$ it visits; the rest "
                 "of the gain is what the naive kernel pays more per access. The naive and "
                 "the reordered kernel each run as one launch of {t_reordered:.1f} s or "
                 "more, so chapter 0's {launch_us:.1f} µs launch is {launch_share:.1e} of "
                 "the shorter one",
                 "The gain of reordering does not follow the accesses saved alone: the "
                 "reordered kernel ran {gain:.2f} times faster, against {access_ratio:.2f} "
                 "times fewer accesses per iteration and {line_ratio:.1f} times fewer lines "
                 "of $X$ visited (following the accesses would put it from the first up to "
                 "{midpoint:.2f}, the geometric midpoint), and chapter 0's {launch_us:.1f} µs "
                 "launch is {launch_share:.1e} of the reordered kernel's {t_reordered:.2f} s "
                 "launch",
                 missing="Whether the gain of reordering follows the accesses or a launch "
                         "cost is not settled here ({names} missing: chapter 0's launch "
                         "time or a kernel's time)",
                 glue=False, kind="cause",
                 gain=gain, access_ratio=access_ratio, line_ratio=line_ratio,
                 midpoint=(access_ratio * line_ratio) ** 0.5, t_reordered=t_reordered,
                 launch_us=launch_us,
                 launch_share=(launch_us * 1e-6 / t_reordered
                               if launch_us is not None and t_reordered else None))


# the causes read from counters live in counter_claims.py
from .counter_claims import (  # noqa: E402,F401
    counter_label, counter_metrics, stall_share, loop_order_counters, loop_order_labels,
    work_items_counters, work_items_labels)
