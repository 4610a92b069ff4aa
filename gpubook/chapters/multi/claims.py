"""Chapter 10's sentences about its measurements, each checked by the run that
measured it (gpubook.claims): the host's sum of the partials, Amdahl's law
from the measured serial part, strong and weak scaling, the split of the blocks
and the subset search. With one device a scaling claim is unsettled: its
sentence says so instead of judging a speed-up of 1."""
from ...claims import claim

ONE = "With one device there is no scaling to judge"
ONE_MID = "there is one device only, so no scaling to judge"


def _several(g, value):
    return value if g > 1 else None


def sum_claims(sum_s):
    """The ways of summing once every partial is in: the fastest thread count
    against one thread, and the lower triangle against the whole matrix."""
    full = {t: v * 1e3 for (t, tri), v in sum_s.items() if not tri and t != "device"}
    best = min(full, key=full.get)
    tri = next(v * 1e3 for (t, tr), v in sum_s.items() if tr)
    return [
        claim("claim_cores", "best < one", best=full[best], one=full[1], threads=best,
              held="On {threads:.0f} threads, the fastest count tried, the sum takes {best:.1f} ms against "
                   "{one:.1f} ms on one",
              failed="No count of threads beats one: the sum takes {one:.1f} ms on one thread"),
        claim("claim_triangle", "tri >= best", tri=tri, best=full[best],
              held="the lower triangle alone is not faster ({tri:.1f} against {best:.1f} ms): each band "
                   "of rows adds only its part below the diagonal, so the bands' shares differ (the last "
                   "band adds whole rows, the first almost nothing) and the slowest band sets the time, "
                   "and the result must then be mirrored",
              failed="the lower triangle alone is faster ({tri:.1f} against {best:.1f} ms): it adds "
                     "half of each partial, and mirroring the result once costs less than the half it "
                     "saves")]


def device_claim(sum_s):
    """The float64 sum on one device (sums.DeviceSum) against the host's fastest way."""
    host = min(v for (t, _), v in sum_s.items() if t != "device") * 1e3
    device = sum_s.get(("device", False))
    return claim("claim_device", "device < host", host=host, device=None if device is None else device * 1e3,
                 missing="No device here adds in double precision, so the host sums",
                 held="On one device the sum takes {device:.1f} ms against the host's {host:.1f} ms: the "
                      "partials cross to it at the copy engines' rate and are added at its memory's, and "
                      "only the float64 result crosses back",
                 failed="On one device the sum takes {device:.1f} ms, no less than the host's {host:.1f} ms: "
                        "every partial must cross to that device, and the float64 result back, which "
                        "costs more than the host's cores take to add them where they already are")


def overlap_claim(g, left_ms, before_ms):
    """What is left of the sum after the last device when each partial is added
    as its device finishes, against one pass over all of them after the last."""
    return claim("claim_sum", "left > 0.75 * before", left=_several(g, left_ms), before=before_ms, g=g,
                 missing="With one device the sum always waits for the one device, so there is nothing "
                         "to overlap",
                 held="Adding each partial as its device finishes leaves {left:.1f} ms of work after the "
                      "last device on {g:.0f} devices, against {before:.1f} ms for one pass over all of "
                      "them after it, not a quarter less: the shared queue has the devices finish within "
                      "about one block of each other, so the adds find little device work to hide behind",
                 failed="Adding each partial as its device finishes leaves {left:.1f} ms of work after the "
                        "last device on {g:.0f} devices, more than a quarter less than the {before:.1f} ms "
                        "of one pass over all of them after it: the adds hide behind the devices still "
                        "working")


def scaling_claims(g, speedup, allowed, amdahl_now, worst_ratio, weak_g, weak_ratio, weak_bound_ratio,
                   h2d1, h2dg):
    """Amdahl's law against the bounds; strong scaling against its bounds; weak
    scaling against flat."""
    return (strong_claims(g, speedup, allowed, amdahl_now, worst_ratio)
            + [weak_claim(weak_g, weak_ratio, weak_bound_ratio, h2d1, h2dg)])


def strong_claims(g, speedup, allowed, amdahl_now, worst_ratio):
    """Amdahl's law against the bounds, and strong scaling against its bounds (the
    chapter's main line)."""
    several = g > 1
    return [
        claim("claim_amdahl", "predicted >= 0.97 * allowed", missing=ONE, g=g, allowed=_several(g, allowed),
              predicted=_several(g, amdahl_now), measured=speedup,
              held="With the serial part that is left, Amdahl's law allows {predicted:.2f}× on {g:.0f} "
                   "devices, against the {allowed:.2f}× of the bounds: the serial step takes at most 3% "
                   "off what the bounds allow (measured: {measured:.2f}×)",
              failed="With the serial part that is left, Amdahl's law allows only {predicted:.2f}× on "
                     "{g:.0f} devices, more than 3% below the {allowed:.2f}× of the bounds: the serial "
                     "step still comes first (measured: {measured:.2f}×)"),
        claim("claim_strong", "worst <= 1.15", missing=ONE, g=g, worst=worst_ratio if several else None,
              held="On every count of two or more devices, up to {g:.0f}, the covariance takes at most "
                   "{worst:.2f} times the larger of its bounds",
              failed="On some count of two or more devices, up to {g:.0f}, the covariance takes {worst:.2f} "
                     "times the larger of its bounds, more than 1.15 times")]


def weak_claim(weak_g, weak_ratio, weak_bound_ratio, h2d1, h2dg):
    """Weak scaling against flat: the time's growth against its bound's (the chapter's
    Going-further page)."""
    return claim("claim_weak", "ratio <= 1.15 * bound_ratio", missing=ONE_MID, g=weak_g,
                 ratio=weak_ratio if weak_g > 1 else None, bound_ratio=weak_bound_ratio, h2d1=h2d1, h2dg=h2dg,
                 held="the time on {g:.0f} devices is {ratio:.2f} times that on one, and its bound {bound_ratio:.2f} "
                      "times (the larger of the compute and the transfers, which share the host's copies: "
                      "{h2dg:.0f} GB/s for all of them against {h2d1:.0f} GB/s for one): the time grows at "
                      "most 15% beyond its bound's growth",
                 failed="the time on {g:.0f} devices is {ratio:.2f} times that on one, more than 1.15 times "
                        "the growth of its bound ({bound_ratio:.2f} times; the devices share the host's "
                        "copies, {h2dg:.0f} GB/s for all of them against {h2d1:.0f} GB/s for one): something "
                        "besides the shared copies grows with the devices")


def split_claim(blocks, block_s):
    """The blocks each device took against its share of the measured rates (the
    inverse of its block time)."""
    total, rates = sum(blocks), [1.0 / s for s in block_s[:len(blocks)]]
    share = [total * r / sum(rates) for r in rates]
    worst = max(abs(b - s) for b, s in zip(blocks, share))
    spread = max(block_s[:len(blocks)]) / min(block_s[:len(blocks)]) - 1
    several = len(blocks) > 1
    return claim("claim_split", "worst <= 1.5", missing=ONE_MID, worst=worst if several else None,
                 spread=spread, total=total,
                 held="each device took within {worst:.1f} blocks of its share of the measured rates (the "
                      "devices' block times differ by {spread:.1%}): the queue needs no plan, a faster device "
                      "comes back sooner and takes more",
                 failed="a device took {worst:.1f} blocks more or fewer than its share of the measured rates "
                        "(the devices' block times differ by {spread:.1%}): something besides each device's "
                        "arithmetic, such as the shared copies, set the pace")


def subset_claim(g, speedup):
    return claim("claim_subsets", "speedup >= 0.95 * g", missing=ONE, g=g, speedup=_several(g, speedup),
                 held="The subset search runs at {speedup:.2f}× one device's speed on {g:.0f} devices, "
                      "within 5% of the ideal",
                 failed="The subset search runs at {speedup:.2f}× one device's speed on {g:.0f} devices, "
                        "more than 5% short of the ideal")


def dask_claim(held_ms, threads_ms, bound_ms):
    """Dask with the rows held in the workers' memory against the threads on the
    same devices and against its own bound (overhead.bound_seconds)."""
    return claim("claim_dask", "r_threads <= 1.25 or r_bound <= 1.25", dask=held_ms, threads=threads_ms,
                 bound=bound_ms, r_threads=held_ms / threads_ms, r_bound=held_ms / bound_ms,
                 held="With the rows held in the workers' memory, Dask takes {dask:,.0f} ms: {r_threads:.2f} "
                      "times the threads' {threads:,.0f} ms and {r_bound:.2f} times its own bound of "
                      "{bound:,.0f} ms, within 1.25 times of at least one of them",
                 failed="With the rows held in the workers' memory, Dask takes {dask:,.0f} ms: "
                        "{r_threads:.2f} times the threads' {threads:,.0f} ms and {r_bound:.2f} times its "
                        "own bound of {bound:,.0f} ms, more than 1.25 times both: the rest is Dask's own "
                        "(scheduling, waiting between the tasks)")


def hosts_line(this, g, cov, sub, recorded):
    """The hosts with several devices and their covariance and subset speed-ups, one
    source per host: for the group this page ran on (`this`, `g` devices) this run's
    own figures, the ones its tables show; for every other host its record
    (`recorded`: multi.recorded_scaling(), read before this run records anything, so
    its entry for this host may be an older run's)."""
    from ...records import display_name

    this = display_name(this)
    hosts = [h for h in recorded if display_name(h[0]) != this]
    if g > 1:
        hosts.append((f"{this} (this run)", g, cov, sub))
    hosts.sort(key=lambda h: h[1])
    return ("; ".join(f"{name}: {n} devices, covariance {c:.2f}×, subsets {s:.2f}×"
                      for name, n, c, s in hosts)
            or "no run on a host with more than one device is recorded yet, so the "
               "book shows no measured scaling across GPUs")
