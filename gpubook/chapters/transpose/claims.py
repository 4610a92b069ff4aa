"""The sentences chapter 5 says about its measurements, as claims (gpubook.claims)."""
from ...claims import claim
from ...counters import trusted_metrics
from ...peaks import datasheet_value


def _said(name, relation, held, failed, missing, **values):
    """A claim whose sentences stand alone in an exercise's answer: each ends with a full stop."""
    return claim(name, relation, held + ".", failed + ".", missing + ".", **values)


def fused_lead(k_records, k_page, k_last):
    """The fused iteration against the two kernels at the page's K and at the largest K
    of the sweep (GB/s of X each)."""
    at = {(r["variant"], r["K"]): r["rate"] for r in k_records}
    return claim("tr_fused_loses_lead", "fused_page > two_page and fused_last < two_last",
                 "the fused kernel, ahead at $K$ = {k_page:.0f} ({fused_page:,.0f} against {two_page:,.0f} GB/s), "
                 "loses its lead over the two separate kernels ({fused_last:,.0f} against {two_last:,.0f} GB/s at "
                 "$K$ = {k_last:.0f})",
                 "the fused kernel does not trade places with the two separate kernels: {fused_page:,.0f} against "
                 "{two_page:,.0f} GB/s at $K$ = {k_page:.0f}, {fused_last:,.0f} against {two_last:,.0f} at "
                 "$K$ = {k_last:.0f}",
                 k_page=k_page, k_last=k_last, fused_page=at.get(("fused", k_page)),
                 two_page=at.get(("two kernels", k_page)), fused_last=at.get(("fused", k_last)),
                 two_last=at.get(("two kernels", k_last)))


def group_size_exercise(rates, copy_gbs):
    """Exercise 1: the transposed scores kernel with work-groups of each size ({size: GB/s})."""
    best, worst = max(rates, key=rates.get), min(rates, key=rates.get)
    spread = rates[best] / rates[worst] - 1
    flat = _said("tr_ex1_flat", "spread < 0.05",
                 "Over work-groups of {sizes} work-items the rate moved by {spread:.1%} (fastest at {best:.0f}): "
                 "less than 5%",
                 "Over work-groups of {sizes} work-items the rate moved by {spread:.1%} (fastest at {best:.0f}): "
                 "more than 5%",
                 "Only one work-group size runs here", spread=spread if len(rates) > 1 else None,
                 best=best, sizes=", ".join(map(str, rates)))
    at_copy = _said("tr_ex1_share", "share > 0.5",
                    "Every size ran at {share:.0%} of chapter 0's copy figure or more: the stream is coalesced "
                    "in each warp whatever the grouping, and each compute unit holds several groups",
                    "The slowest size ran at only {share:.0%} of chapter 0's copy figure",
                    "Chapter 0's copy figure is not known here", share=rates[worst] / copy_gbs if copy_gbs else None)
    return flat, at_copy


def tile_exercise(tiles):
    """Exercise 2: the fused iteration with tiles of 4 to 32 examples ({tile: (GB/s, local bytes)})."""
    small, big = min(tiles), max(tiles)
    return _said("tr_ex2_big_tile", "ratio > 1",
                 "The tile of {big:.0f} examples ran {ratio:.2f}× the rate of the tile of {small:.0f}: every tile "
                 "costs the same four barriers, and the large tile spreads them over {more:.0f}× the "
                 "bytes of X, which outweighs its local memory ({big_bytes:,.0f} bytes per work-group against "
                 "{small_bytes:,.0f})",
                 "The tile of {big:.0f} examples ran {ratio:.2f}× the rate of the tile of {small:.0f}: its local "
                 "memory ({big_bytes:,.0f} bytes per work-group against {small_bytes:,.0f}) outweighs spreading the "
                 "barriers over {more:.0f}× the bytes of X",
                 "Fewer than two tiles run here",
                 small=small, big=big, ratio=tiles[big][0] / tiles[small][0] if big != small else None,
                 more=big / small, big_bytes=tiles[big][1], small_bytes=tiles[small][1])


def blocks_exercise(m_runs, compute_units):
    """Exercise 3: grad_blocks with m = 4, 8, 16 float4s per work-item ({m: (work-groups, GB/s)})."""
    lo, hi = min(m_runs), max(m_runs)
    return _said("tr_ex3_same_rate", "abs(ratio - 1) < 0.05",
                 "The work-groups fall from {groups_lo:,.0f} to {groups_hi:,.0f} ({per_cu:.1f} per compute unit), "
                 "and the rate at m = {hi:.0f} is {ratio:.2f}× that at m = {lo:.0f}, within 5%: every compute "
                 "unit still holds enough work-groups to keep its bytes in flight",
                 "The work-groups fall from {groups_lo:,.0f} to {groups_hi:,.0f} ({per_cu:.1f} per compute unit), "
                 "and the rate at m = {hi:.0f} is {ratio:.2f}× that at m = {lo:.0f}, more than 5% away",
                 "Only one m runs here", lo=lo, hi=hi, groups_lo=m_runs[lo][0], groups_hi=m_runs[hi][0],
                 per_cu=m_runs[hi][0] / compute_units, ratio=m_runs[hi][1] / m_runs[lo][1] if hi != lo else None)


def scores_reading(rows_share, cols_share, waste_rows, tiled_ms, cols_ms):
    """Step 3's reading: the transposed scores against the copy figure, the scalar row
    walk against what its sectors allow without a cache (shares of the copy figure),
    and the one-off transpose in passes of the scores kernel."""
    above = claim("tr_cols_above_copy", "cols_share > 1",
                  "Its rate is above the copy's: possible because this kernel only reads, while "
                  "the copy keeps switching the memory between reading and writing",
                  "Its rate stays below the copy's, which counts reads and writes together",
                  cols_share=cols_share)
    cache = claim("tr_rows_cache_saves", "rows_share > 1 / waste_rows",
                  "The scalar row walk reached {rows_share:.0%} of the copy figure, more than the "
                  "{limit:.0%} that moving {waste_rows:.0f} bytes per byte used would allow if every "
                  "sector came from memory: the cache keeps much of a row's lines until the "
                  "work-item comes back for its next features",
                  "The scalar row walk reached {rows_share:.0%} of the copy figure, no more than the "
                  "{limit:.0%} that moving {waste_rows:.0f} bytes per byte used allows: the cache "
                  "does not save the rest of its lines",
                  rows_share=rows_share, waste_rows=waste_rows, limit=1 / waste_rows)
    return (f"{above.sentence}. {cache.sentence}. The transpose is paid once, before "
            f"training: {tiled_ms:.1f} ms for the tiled kernel at the largest size, the "
            f"time of {tiled_ms / cols_ms:.1f} passes of the scores kernel.")


def gradient_reading(groups_share, blocks_share, cols_share):
    """Step 4's reading: the 2-D blocks against the group per feature and against the
    transposed scores kernel (shares of the copy figure at the largest size)."""
    return claim("tr_blocks_stream", "blocks_share > groups_share and abs(blocks_share / cols_share - 1) < 0.1",
                 "The 2-D blocks read $X$ at {blocks_share:.0%} of the copy figure, above the group "
                 "per feature's {groups_share:.0%} and within 10% of the scores kernel's "
                 "{cols_share:.0%}: with enough work-groups the gradient is a plain stream too",
                 "The 2-D blocks read $X$ at {blocks_share:.0%} of the copy figure, against the group "
                 "per feature's {groups_share:.0%} and the scores kernel's {cols_share:.0%}: more "
                 "work-groups did not make the gradient a stream like the scores",
                 groups_share=groups_share, blocks_share=blocks_share, cols_share=cols_share)


def sectors_cause(rows, cols, waste_rows):
    """Step 1's cause, tested: does memory move the sectors the scalar row walk
    wastes? Its rate counted in the bytes it *moves* (its rate on the bytes it uses,
    `rows["rate"]`, times `waste_rows`, the bytes moved per byte used that the trace
    counts) is set against the rate at which this device reads memory, the
    transposed kernel's (`cols["rate"]`). More than twice that, memory cannot have
    delivered them: the cache serves most of the wasted sectors (the claim). Within
    0.5x-2x, the wasted sectors do cross the memory bus and account for the time;
    well below, something else holds the row walk back (latency, too few loads in
    flight). `rows` and `cols` are the scores records at the largest size (rate in
    GB/s, median_s)."""
    have = None not in (rows, cols, waste_rows)
    rows_gbs, cols_gbs = (rows["rate"], cols["rate"]) if have else (None, None)
    moved_gbs = rows_gbs * waste_rows if have else None
    ratio = moved_gbs / cols_gbs if have else None
    slowdown = rows["median_s"] / cols["median_s"] if have else None
    counted = ("Counted in the sectors it moves ({waste_rows:.0f} bytes per byte used), the scalar row walk "
               "ran at {moved_gbs:,.0f} GB/s, {moved_over_read:.2f}× the {cols_gbs:,.0f} GB/s at which the "
               "transposed kernel reads memory")
    if ratio is not None and ratio < 0.5:
        failed = (counted + ": less than half, so memory moving wasted sectors is not what holds it back; "
                  "something else does, such as latency with too few loads in flight")
    else:
        failed = (counted + ", within 2×: the wasted sectors cross the memory bus, and moving "
                  "{waste_rows:.0f} bytes per byte used accounts for its {slowdown:.1f}× longer time")
    return claim("tr_rows_cache_serves", "moved_over_read > 2",
                 counted + ": more than twice, which memory cannot deliver, so the cache serves most of "
                 "the wasted sectors and they never reach memory. The wasted sectors alone do not set its "
                 "time: it took {slowdown:.1f}× as long as the transposed kernel, not {waste_rows:.0f}×",
                 failed,
                 "The scalar row walk's rate on the sectors it moves is not known here ({names} missing)",
                 kind="cause", rows_gbs=rows_gbs, cols_gbs=cols_gbs, waste_rows=waste_rows,
                 moved_gbs=moved_gbs, moved_over_read=ratio, slowdown=slowdown)


# --- causes read from hardware counters (gpubook.counters) ---------------------------

COUNTED = {"naive": "transpose/transpose_naive.cl:transpose_naive[KP={kp}]",
           "tiled": "transpose/transpose_tiled.cl:transpose_tiled[KP={kp} ROWS=8 TILE=64]",
           "rows": "transpose/scores_rows.cl:scores_rows[KP={kp}]",
           "rows4": "transpose/scores_rows4.cl:scores_rows4[KP={kp}]",
           "cols": "transpose/scores_cols.cl:scores_cols[KP={kp}]",
           "feature": "transpose/grad_feature.cl:grad_feature[KP={kp}]",
           "groups": "transpose/grad_groups.cl:grad_groups[KP={kp} LOCAL=256]"}


def counted(kp, *variants):
    """(heading, kernel label) pairs for gb.counters.table: the chapter's kernels as
    the counters record names them, for `kp` padded features."""
    return [(v, COUNTED[v].format(kp=kp)) for v in variants]


def _metrics(rows, label):
    """A kernel's counters where its replay is trusted (gpubook.counters), else None."""
    return trusted_metrics((rows or {}).get(label))


def naive_l2_cause(rows, whose, kp):
    """Step 2's cause, read from the counters of `whose`: the naive transpose's
    scattered 4-byte writes each cost a whole 32-byte sector, and sectors are what the
    L2 moves. If that sets its pace, the L2 is its busiest unit, at half its peak or
    more; were it held by latency all units would idle, were it held by device memory
    DRAM would be the busiest."""
    m = _metrics(rows, COUNTED["naive"].format(kp=kp)) or {}
    size = ((rows or {}).get(COUNTED["naive"].format(kp=kp)) or {}).get("global")
    launch = (f"the counted launch transposed J = {size[0] // kp:,} examples, "
              f"{8 * size[0] / 2**20:,.0f} MiB of X in two layouts" if size
              else "the record does not give the counted launch's size")
    return claim("tr_naive_l2_busiest", "l2 >= max(l1, sm, dram) and l2 >= 50",
                 "The {whose}'s counters put the naive transpose's cost in the L2: it is "
                 "the busiest unit, at {l2:.0f}% of its peak (L1 {l1:.0f}%, SM {sm:.0f}%, "
                 "DRAM {dram:.0f}%), as 32-byte sectors for 4-byte writes predict (" + launch
                 + ", {hit:.0f}% L2 hits, so DRAM says nothing about the largest sizes)",
                 "The {whose}'s counters do not put the naive transpose's cost in the L2: "
                 "L2 {l2:.0f}% of its peak, L1 {l1:.0f}%, SM {sm:.0f}%, DRAM {dram:.0f}% "
                 "(the test: the L2 the busiest unit, at half its peak or more)",
                 "The naive transpose has no trusted counters here ({names} missing)",
                 glue=False, kind="cause", whose=whose, l2=m.get("l2_pct"),
                 l1=m.get("l1_pct"), sm=m.get("sm_pct"), dram=m.get("dram_pct"),
                 hit=m.get("l2_hit_pct"))


def cols_stream_cause(rows, whose, kp):
    """Step 3's cause, read from the counters of `whose`: over transposed X each warp's
    load is whole sectors used once, so the scores kernel should be a pure stream from
    device memory: DRAM at 80% of its peak or more (the rest is what refresh and
    read-write turnarounds leave to any kernel) and under 10% of the L2's sectors hits
    (nothing is read twice). A kernel held by latency or by the cache would fail it.
    A counted launch whose X fits twice in the device's L2 (by its data sheet) cannot
    test a stream from memory: the claim is then not settled, and says so."""
    label = COUNTED["cols"].format(kp=kp)
    m = _metrics(rows, label) or {}
    size = ((rows or {}).get(label) or {}).get("global")   # one work-item per float4 of examples
    launch = f"the counted launch scored J = {4 * size[0]:,} examples" if size else \
        "the record does not give the counted launch's size"
    read = 4 * size[0] * kp * 4 if size else None          # bytes of X^T it reads
    l2 = datasheet_value(whose, "l2_bytes") if whose else None
    small = bool(m and read and l2 and read < 2 * l2)
    missing = (f"The {whose}'s counted launch of the scores kernel over $X^\\top$ reads "
               f"{read / 2**20:,.0f} MiB, under twice its {l2 / 2**20:,.0f} MiB L2: such a "
               "launch cannot show a stream from memory, and no larger one was counted") if small else \
        "The scores kernel over transposed X has no trusted counters here ({names} missing)"
    return claim("tr_cols_streams", "dram >= 80 and hit < 10",
                 "The {whose}'s counters show the scores kernel over $X^\\top$ as a stream ("
                 + launch + "): DRAM at {dram:.0f}% of its peak with {hit:.0f}% L2 hits, "
                 "every sector fetched once and used whole",
                 "The {whose}'s counters do not show the scores kernel over $X^\\top$ as a "
                 "stream from memory (" + launch + "): DRAM at {dram:.0f}% of its peak, "
                 "{hit:.0f}% L2 hits (the test: 80% or more, under 10%)",
                 missing,
                 glue=False, kind="cause", whose=whose,
                 dram=None if small else m.get("dram_pct"),
                 hit=None if small else m.get("l2_hit_pct"))


def feature_latency_cause(rows, whose, kp):
    """Step 4a's cause, read from the counters of `whose`: one work-item per feature
    launches too few warps to keep loads in flight. Then the compute units hold few
    warps (occupancy under 10%), device memory idles (DRAM under 10% of its peak) and
    most stall cycles (half or more) wait for a global load (long scoreboard). Were the
    kernel held by bandwidth, DRAM would be busy; by arithmetic, the loads would not
    be what its warps wait for."""
    m = _metrics(rows, COUNTED["feature"].format(kp=kp)) or {}
    waiting = (m.get("stalls") or {}).get("long_scoreboard", 0.0) if m else None
    return claim("tr_feature_waits", "occupancy < 10 and dram < 10 and waiting >= 0.5",
                 "The {whose}'s counters show it: occupancy {occupancy:.0f}%, DRAM at "
                 "{dram:.0f}% of its peak, and {waiting:.0%} of its stall cycles waiting "
                 "for a global load, so memory idles while each warp waits for its own",
                 "The {whose}'s counters do not show it starved of loads in flight: "
                 "occupancy {occupancy:.0f}%, DRAM {dram:.0f}% of its peak, {waiting:.0%} "
                 "of its stall cycles on a global load (the test: under 10%, under 10%, "
                 "half or more)",
                 "The work-item-per-feature gradient has no trusted counters here "
                 "({names} missing)",
                 glue=False, kind="cause", whose=whose, occupancy=m.get("occupancy_pct"),
                 dram=m.get("dram_pct"), waiting=waiting)
