"""Chapter 3's exercises: the array lengths they sum and the claims their answers read.

Exercise 1 sums the whole array, so that the few launches of a sum are a small share
of its time; exercise 2 sums an array several times the device's last-level cache,
so that its question (bytes in flight against memory's latency) is about device
memory, not the cache, and long enough that its launches weigh little.
"""
from ...claims import claim
from ...curves import human_bytes
from ...peaks import MIB, datasheet_value

TIMES_CACHE = 4          # exercise 2's array: at least this many times the cache ...
FLOOR_BYTES = 1024 * MIB  # ... and at the full scale at least this, so that its two
                          # launches are a small share of the sum (claim ex_grid_long)


def cache_bytes(device):
    """(bytes, source) of the cache a streamed array must outgrow: the data sheet's L2
    where the book's table lists the device, else OpenCL's global memory cache size
    (None, source where the device reports none)."""
    l2 = datasheet_value(device.name, "l2_bytes")
    if l2:
        return int(l2), "the data sheet's L2"
    reported = int(getattr(device, "global_mem_cache_size", 0) or 0)
    return (reported or None), "the global memory cache OpenCL reports"


def beyond_cache_floats(device, scale, available):
    """Floats of exercise 2's array: a power of two of at least TIMES_CACHE times the
    cache and, at the full scale, of at least FLOOR_BYTES; never more than the
    `available` floats of the array on the device (the small scale's whole array)."""
    cache, _ = cache_bytes(device)
    want = TIMES_CACHE * (cache or 0)
    if scale == "full":
        want = max(want, FLOOR_BYTES)
    if not want:   # no cache size known at the small scale: the whole array
        return int(available)
    floats = 1 << max(0, -(-want // 4) - 1).bit_length()
    return min(int(available), floats)


def launch_share(t_s, passes, launch_us, floats):
    """Exercise 1: the sum of `floats` took `t_s` seconds in `passes` launches; chapter
    0's cost of one launch queued back to back (`launch_us`, None where not recorded)
    bounds what the launches weigh."""
    share = passes * launch_us * 1e-6 / t_s if launch_us and t_s else None
    return claim("ex_groups_launch_share", "share < 0.1",
                 "The sum of {floats:,.0f} floats took {t_ms:.3f} ms with the default groups; "
                 "its {passes:.0f} launches, at chapter 0's {launch_us:.1f} µs per launch queued "
                 "back to back, are at most {share:.1%} of that: the difference between the "
                 "groups is the kernels' own work (trees, barriers, reads), not launch cost",
                 "The sum of {floats:,.0f} floats took {t_ms:.3f} ms with the default groups; "
                 "its {passes:.0f} launches, at chapter 0's {launch_us:.1f} µs per launch queued "
                 "back to back, may be up to {share:.0%} of that: launch cost still weighs at "
                 "this length, and part of the difference is the extra pass",
                 missing="Chapter 0 recorded no launch cost for this device, so the sums' "
                         "times are not set against it",
                 share=share, floats=floats, t_ms=t_s * 1e3, passes=passes,
                 launch_us=launch_us)


def grid(gbs1, gbs8, nbytes, cache, launch_us, passes, need_cu, wg, resident_cap=None):
    """Exercise 2: step 4 with 1 and 8 work-groups of `wg` per compute unit on an array
    of `nbytes`, against the cache it must outgrow (`cache`: (bytes, source)), chapter
    0's launch cost, and the bytes Little's law asks each compute unit to keep in flight
    (`need_cu`, the machine chapter's; None where not recorded). `resident_cap` bounds
    the work-items a compute unit holds (None: not known)."""
    cache_b, source = cache
    items = {g: min(g * wg, resident_cap) if resident_cap else g * wg for g in (1, 8)}
    t8_us = nbytes / gbs8 / 1e3
    return [
        claim("ex_grid_beyond_cache", "nbytes >= 4 * cache_b",
              "The array (" + human_bytes(nbytes) + ") is {times:.1f} times " + source + " ("
              + human_bytes(cache_b or 0) + "), so every pass streams it from device memory",
              "The array (" + human_bytes(nbytes) + ") is only {times:.1f} times " + source + " ("
              + human_bytes(cache_b or 0) + "): part of it may be read from the cache, not "
              "from device memory",
              missing="This device reports no cache size, so the array is not set against it",
              nbytes=nbytes, cache_b=cache_b, times=nbytes / cache_b if cache_b else None),
        claim("ex_grid_long", "launch_share < 0.1",
              "The sum is long: {t8_ms:.2f} ms with 8 groups, where its {passes:.0f} "
              "launches at chapter 0's {launch_us:.1f} µs are at most {launch_share:.1%}",
              "The sum is short: {t8_ms:.2f} ms with 8 groups, where its {passes:.0f} "
              "launches at chapter 0's {launch_us:.1f} µs may be {launch_share:.0%}",
              missing="Chapter 0 recorded no launch cost for this device, so the sum's time "
                      "is not set against it",
              t8_ms=t8_us / 1e3, passes=passes, launch_us=launch_us,
              launch_share=passes * launch_us / t8_us if launch_us else None),
        claim("ex_grid_slower", "ratio < 0.9",
              "One work-group per compute unit read {gbs1:,.1f} GB/s against {gbs8:,.1f} GB/s "
              "with 8: {ratio:.2f}× the rate, {slower:.0%} slower",
              "One work-group per compute unit read {gbs1:,.1f} GB/s against {gbs8:,.1f} GB/s "
              "with 8: {ratio:.2f}× the rate, not 10% slower",
              gbs1=gbs1, gbs8=gbs8, ratio=gbs1 / gbs8, slower=1 - gbs1 / gbs8),
        claim("ex_grid_loads_needed", "loads1 > 1",
              "Little's law (the machine chapter) asks each compute unit for "
              + human_bytes(need_cu or 0) + " in flight: with one group of {wg:.0f} "
              "work-items each must keep {loads1:.1f} of its 4-byte loads in flight to "
              "cover it, with 8 groups {loads8:.1f}. Unless the compiler overlaps that many "
              "iterations of the loop, one group leaves memory waiting",
              "Little's law (the machine chapter) asks each compute unit for "
              + human_bytes(need_cu or 0) + " in flight: with one group of {wg:.0f} "
              "work-items {loads1:.1f} 4-byte loads in flight per work-item cover it, so "
              "one group is enough here",
              missing="Little's law is not recorded for this device (the machine chapter), "
                      "so the loads in flight are not counted",
              need_cu=need_cu, wg=wg,
              loads1=need_cu / items[1] / 4 if need_cu else None,
              loads8=need_cu / items[8] / 4 if need_cu else None),
    ]
