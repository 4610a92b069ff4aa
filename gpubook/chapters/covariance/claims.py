"""The sentences chapter 6 says about its measurements, as claims (gpubook.claims):
the full GEMM against step 4, and the exercises. Every function takes the
numbers the run printed; a None (a step that cannot run on a small device, a
library that is absent) leaves its claim unsettled, in words."""
from ...claims import claim


def _said(name, relation, held, failed, missing, **values):
    """A claim whose sentences stand alone in an exercise's answer: each ends with a full stop."""
    return claim(name, relation, held + ".", failed + ".", missing + ".", **values)


def _ratio(a, b):
    return None if a is None or b is None or not b else a / b


def gemm_against_step4(gemm_s, t4, gemm_flops, useful_flops):
    """cuBLAS's full GEMM XᵀX against step 4, each at the rate it executes: GEMM its
    2·m·n² flops, step 4 the m·n(n+1) of one triangle. Step 4's GEMM-equivalent rate
    counts the half of C that it skips, so it is no executed rate."""
    gemm_rate = None if gemm_s is None else gemm_flops / gemm_s / 1e9
    step4_rate = useful_flops / t4 / 1e9
    return claim(
        "cov_gemm_executed", "gemm_rate > step4_rate",
        "The full GEMM (torch.matmul) took {gemm_ms:.1f} ms, {time_ratio:.2f}× step 4's time, for all "
        "n² entries of C: it executes its 2·m·n² flops at {gemm_rate:,.0f} GFLOP/s, and step 4 executes "
        "the m·n(n+1) of one triangle at {step4_rate:,.0f}, so GEMM's executed rate is {rate_ratio:.2f}× "
        "step 4's. Step 4's {step4_equiv:,.0f} GFLOP/s GEMM-equivalent counts the half of C that it skips",
        "The full GEMM (torch.matmul) took {gemm_ms:.1f} ms, {time_ratio:.2f}× step 4's time, for all "
        "n² entries of C: it executes its 2·m·n² flops at {gemm_rate:,.0f} GFLOP/s, and step 4 executes "
        "the m·n(n+1) of one triangle at {step4_rate:,.0f}, so step 4 executes its multiply-adds faster "
        "than GEMM does ({rate_ratio:.2f}×)",
        missing="No cuBLAS GEMM was measured in this run",
        gemm_rate=gemm_rate, step4_rate=step4_rate, gemm_ms=None if gemm_s is None else gemm_s * 1e3,
        time_ratio=_ratio(gemm_s, t4), rate_ratio=_ratio(gemm_rate, step4_rate),
        step4_equiv=gemm_flops / t4 / 1e9)


def step3_local_rate(t3, mp, np_, t, local_gbs, source):
    """Step 3's local loads against local memory's measured read rate (chapter 0's
    stride-1 read kernel). Each work-item issues two 4-byte local loads per multiply-add
    (its PTX: two ld.shared per fma.rn.f32). A load that several lanes of a warp share
    (a[k][ty] is one address for each row of the tile) is a broadcast: it saves banks,
    not the load, so the traffic is counted per work-item, as the read kernel counts it.
    The launched tiles (those on and below the diagonal of the padded np_ x np_) execute
    mp·np_(np_+T)/2 multiply-adds. The read kernel's rate is what local memory delivered
    to a kernel that does nothing else: a floor on what it can deliver, not a ceiling.
    The claim tests whether step 3 keeps local memory at least that busy (90% or more):
    if something other than its local loads set step 3's pace, its loads would run
    well below the rate of a kernel that only reads."""
    fmas = mp * np_ * (np_ + t) / 2
    gbytes = 8 * fmas / 1e9
    rate = None if not t3 else gbytes / t3
    return claim(
        "cov_step3_local_rate", "rate >= 0.9 * local_gbs",
        "Step 3 issues two 4-byte local loads per multiply-add, as its source writes them (a load that the "
        "work-items of a tile row share is a broadcast, which saves banks, not the load): "
        "{gbytes:,.0f} GB of local loads for its {gfma:,.0f} billion multiply-adds, in {ms:.0f} ms, "
        "{rate:,.0f} GB/s. That is {pct:.0f}% of the {local_gbs:,.0f} GB/s that chapter 0's read kernel "
        "got from local memory ({source}), at least 90% of it: step 3 keeps local memory at least as busy "
        "as a kernel that does nothing but read it, so at T = {t:.0f} its local loads are enough to explain "
        "its pace. "
        "The read kernel's rate is a floor on what local memory delivers, not a ceiling on step 3",
        "Step 3 issues two 4-byte local loads per multiply-add, as its source writes them (a load that the "
        "work-items of a tile row share is a broadcast, which saves banks, not the load): "
        "{gbytes:,.0f} GB of local loads for its {gfma:,.0f} billion multiply-adds, in {ms:.0f} ms, "
        "{rate:,.0f} GB/s. That is only {pct:.0f}% of the {local_gbs:,.0f} GB/s that chapter 0's read "
        "kernel got from local memory ({source}), less than 90% of it: local memory is idle part of "
        "the time, so at T = {t:.0f} something besides its local loads (the global loads, the barriers) "
        "sets step 3's pace here",
        "Chapter 0's local-memory read rate is not known here, so step 3's local loads are not set "
        "against it",
        kind="cause", rate=rate, local_gbs=local_gbs, gbytes=gbytes, gfma=fmas / 1e9,
        ms=None if not t3 else t3 * 1e3, t=t, source=source,
        pct=None if rate is None or not local_gbs else 100 * rate / local_gbs)


def tile_side(times, warp):
    """Exercise 1: step 3 at T = 4, 8 and 16 ({T: seconds}, a T missing where the device
    cannot run it). The global floats per multiply-add are 2/T; the local loads per
    multiply-add are two at every T."""
    t16 = times.get(16)
    r8, r4 = _ratio(times.get(8), t16), _ratio(times.get(4), t16)
    eight = _said("cov_ex1_t8", "r8 < 2",
                  "T = 8 took {r8:.2f}× the time of T = 16 for 2× the global floats per multiply-add: "
                  "the time grew less than the global traffic",
                  "T = 8 took {r8:.2f}× the time of T = 16 for 2× the global floats per multiply-add: "
                  "the time grew as much as the global traffic or more",
                  "T = 8 and T = 16 did not both run here", r8=r8)
    four = _said("cov_ex1_t4", "r4 >= 4",
                 "T = 4 took {r4:.2f}× the time of T = 16 for 4× the global traffic, as much or more: its "
                 "work-group of {items:.0f} work-items fills {fill:.0%} of a warp of {warp:.0f}, and a barrier "
                 "comes every 4 rows",
                 "T = 4 took {r4:.2f}× the time of T = 16 for 4× the global traffic: less than the traffic grew",
                 "T = 4 and T = 16 did not both run here",
                 r4=r4, items=16, warp=warp, fill=None if not warp else min(1.0, 16 / warp))
    local = _said("cov_ex1_not_local", "r8 > 1.1",
                  "The local loads are two per multiply-add at every T, so if they alone set step 3's pace "
                  "all three would take the same time; the time changed {r8:.2f}× from T = 16 to T = 8, so "
                  "below T = 16 what else grows as T shrinks (the global floats per multiply-add, the "
                  "barriers per row) adds to the time of the local loads",
                  "The local loads are two per multiply-add at every T, and the time barely moved from "
                  "T = 16 to T = 8 ({r8:.2f}×): the local loads, not global memory, set step 3's pace",
                  "Whether the local loads alone set step 3's pace cannot be tested without T = 8 and "
                  "T = 16", r8=r8)
    return eight, four, local


def block_per_item(t44, t88, regs44, regs88, occ44, occ88):
    """Exercise 2: the 64 × 64 tile with 4 × 4 and 8 × 8 blocks per work-item: twice the
    multiply-adds per local load, and the registers and occupancy of each build."""
    ratio = _ratio(t88, t44)
    time = _said("cov_ex2_not_halved", "ratio > 0.55",
                 "8 × 8 took {ratio:.2f}× the time of 4 × 4: not half, though it does twice the "
                 "multiply-adds per local load",
                 "8 × 8 took {ratio:.2f}× the time of 4 × 4: about half, as the local loads per "
                 "multiply-add predict",
                 "One of the two blocks does not run here", ratio=ratio)
    occ = _said("cov_ex2_occupancy", "occ88 < occ44",
                "The 8 × 8 build takes {regs88:.0f} registers per work-item against {regs44:.0f}, and a "
                "compute unit holds {occ88:.0%} of its warps against {occ44:.0%}: fewer warps to hide each "
                "other's loads and barriers",
                "The 8 × 8 build takes {regs88:.0f} registers per work-item against {regs44:.0f}, and a "
                "compute unit still holds {occ88:.0%} of its warps against {occ44:.0%}",
                "This device reports no registers, so the occupancy of the two builds is not known here",
                regs44=regs44, regs88=regs88, occ44=occ44, occ88=occ88)
    return time, occ


def stages(t1, t2, chunks):
    """Exercise 3: one local buffer (two barrier calls per chunk) against two (one)."""
    return _said("cov_ex3_second_barrier", "abs(ratio - 1) < 0.1",
                 "Two buffers took {ratio:.2f}× the time of one: the second barrier call in each of the "
                 "{chunks:,.0f} chunks is worth less than a tenth of the time here",
                 "Two buffers took {ratio:.2f}× the time of one: the builds differ by more than a tenth",
                 "One of the two builds does not run here", ratio=_ratio(t2, t1), chunks=chunks)


def stream_block_size(t_full, t_half, blocks_full, blocks_half):
    """Part 6.2's exercise: the stream with blocks of half the rows (twice the blocks)
    against the page's blocks, first copy to last kernel."""
    return _said("cov_ex_stream_blocks", "abs(ratio - 1) < 0.15",
                 "With {blocks_half:.0f} blocks instead of {blocks_full:.0f} the stream took {ratio:.2f}× the "
                 "time: within 15%, so the copies still run beside the kernels and the block size hardly "
                 "matters at this size",
                 "With {blocks_half:.0f} blocks instead of {blocks_full:.0f} the stream took {ratio:.2f}× the "
                 "time: more than 15% apart, so what each block costs besides its copy and its products "
                 "(launches, the first block's copy with nothing to overlap) shows at this size",
                 "One of the two streams did not run here",
                 ratio=_ratio(t_half, t_full), blocks_full=blocks_full, blocks_half=blocks_half)


def flush_interval(err_flushed, err_never, flush_rows, m):
    """Part 6.3's exercise: 3xTF32 with the warps' sums flushed into S every
    `flush_rows` rows against one sum over all m rows (the accumulator truncates)."""
    return _said("cov_ex_flush", "err_never > 2 * err_flushed",
                 "Summed over all {m:,.0f} rows in the accumulator, 3xTF32 is off by {err_never:.1e}, "
                 "{ratio:.0f}× the {err_flushed:.1e} of flushing every {flush_rows:,.0f} rows: the "
                 "accumulator's errors add up over a long sum, and the flushes stop that",
                 "Summed over all {m:,.0f} rows in the accumulator, 3xTF32 is off by {err_never:.1e} against "
                 "{err_flushed:.1e} when flushed every {flush_rows:,.0f} rows ({ratio:.1f}×): here the "
                 "flushes made little difference",
                 "This needs the tensor cores, which do not run here",
                 err_flushed=err_flushed, err_never=err_never, flush_rows=flush_rows, m=m,
                 ratio=_ratio(err_never, err_flushed))


def wgmma_flush(three, e_tf32, page_rows, tf32_rows):
    """Part 6.3's exercise 2: step 8's 3xTF32 flushed every half, one and two times
    page_rows rows ({rows: {"product_s", "error"}}), beside rounded TF32's error flushed
    every tf32_rows (its page's). More rows between flushes: more drift in the sums;
    fewer, less time (only half against the page's is judged: on an H200 twice the
    page's rows saved 0.3-0.9 ms of 24-25, too close to the runs' spread to be judged)."""
    half, double = page_rows // 2, 2 * page_rows
    got = {r: three.get(r) or {} for r in (half, page_rows, double)}
    ms = {r: None if got[r].get("product_s") is None else got[r]["product_s"] * 1e3 for r in got}
    said = ("Flushed every {half:,.0f} rows, 3xTF32's products took {t_half:.1f} ms and were off by "
            "{e_half:.1e}; every {page:,.0f} rows (the page's), {t_page:.1f} ms and {e_page:.1e}; every "
            "{double:,.0f}, {t_double:.1f} ms and {e_double:.1e}")
    return _said("cov_ex_wgmma_flush", "e_double > e_page > e_half and t_half > t_page",
                 said + ". Each flush costs time (a work-group waits there for its running products to "
                 "end), and each row between flushes costs digits (the tensor core's float32 sums drift): "
                 "rounded TF32, one product for three, flushed every {tf32_rows:,.0f} rows as on the "
                 "page, is off by {e_tf32:.1e}",
                 said + ": here the error did not grow with the rows between flushes, or flushing "
                 "twice as often did not cost time",
                 "This needs Hopper's wgmma, which does not run here",
                 half=half, page=page_rows, double=double, e_tf32=e_tf32, tf32_rows=tf32_rows,
                 t_half=ms[half], t_page=ms[page_rows], t_double=ms[double],
                 e_half=got[half].get("error"), e_page=got[page_rows].get("error"),
                 e_double=got[double].get("error"))


def wgmma_digits(e_3x, e_tf32, e_fp32, rows_3x, rows_tf32):
    """Part 6.3's step 8: 3xTF32 on wgmma (flushed every rows_3x rows) against float32's
    step 4 and rounded TF32 on wgmma (every rows_tf32), None where the tensor cores did
    not run them. On an H200 (2026-11-28), flushed every 2,048 rows as the one-pass modes
    3xTF32 was off by 4.0e-5, no better than rounded TF32's 3.7e-5; every 1,024, 2.0e-5,
    against 2.4e-5 for step 4."""
    return claim("cov_wgmma_digits", "e_3x <= 1.5 * e_fp32 and e_3x < e_tf32",
                 "Flushed every {rows_3x:,.0f} rows, wgmma's 3xTF32 is off by {e_3x:.1e}: float32's digits "
                 "(step 4: {e_fp32:.1e}), where rounded TF32, flushed every {rows_tf32:,.0f}, is off by "
                 "{e_tf32:.1e}; exercise 2 on the Going further page measures what other flushes cost and "
                 "buy",
                 "Flushed every {rows_3x:,.0f} rows, wgmma's 3xTF32 is off by {e_3x:.1e}, against "
                 "{e_fp32:.1e} for float32's step 4 and {e_tf32:.1e} for rounded TF32 flushed every "
                 "{rows_tf32:,.0f}: here it does not give float32's digits",
                 "Step 8 did not run on the tensor cores here, so its errors were not compared with "
                 "float32's",
                 e_3x=e_3x, e_tf32=e_tf32, e_fp32=e_fp32, rows_3x=rows_3x, rows_tf32=rows_tf32)


def wgmma_clock(times, max_ghz):
    """Part 6.3's step 8: the SM clock over 3xTF32's timed products against the device's
    maximum, and the time nvidia-smi counts at the power cap over those runs
    (tensor_cores.wgmma_times). On an H200 (2026-11-28), 1.52-1.60 GHz against 1.98, the
    cap held for 3.55 s of a 5 s run of products; chapter 0's FMA loop held 1.98."""
    three, one = (times or {}).get("3xtf32", {}), (times or {}).get("tf32-raw", {})
    ms = {f"{k}_ms": None if three.get(f"{k}_s") is None else three[f"{k}_s"] * 1e3
          for k in ("capped", "window")}
    ghz = three.get("clock_ghz")
    return claim(
        "cov_wgmma_clock", "ghz <= 0.95 * max_ghz and capped_ms >= 0.5 * window_ms",
        "Over 3xTF32's timed products the SMs ran at {ghz:.2f} GHz (the median over work-groups "
        "and runs; one-pass TF32: {ghz1:.2f}), {pct:.0f}% of the {max_ghz:.2f} GHz this device gives as "
        "its clock, and for {capped_ms:.0f} of the {window_ms:.0f} ms that its warm-up and timed runs "
        "took the driver held the clock down at the card's power limit (nvidia-smi's counter): at "
        "this rate of tensor work the power limit sets the clock",
        "Over 3xTF32's timed products the SMs ran at {ghz:.2f} GHz, {pct:.0f}% of the {max_ghz:.2f} "
        "GHz this device gives as its clock, and the driver held the clock at the power limit for "
        "{capped_ms:.0f} of {window_ms:.0f} ms: here the power limit does not set the clock",
        "The SM clock and the power cap over step 8's products were not read here: that needs "
        "NVIDIA's tensor cores, their clock and nvidia-smi",
        kind="cause", ghz=ghz, ghz1=one.get("clock_ghz"), max_ghz=max_ghz,
        pct=None if ghz is None or not max_ghz else 100 * ghz / max_ghz, **ms)


def tf32_time(t3, t_raw, pass_flops, feed_bytes, mma_gflops):
    """Part 6.3: the two modes against their mma at chapter 0's TF32 rate. One pass
    (truncated TF32) and 3xTF32's three both run well above the time their mma need
    there; the tiles' reads of X are stated as a rate. What sets the one-pass time
    is tf32_not_dram's question, not this claim's."""
    mma1 = None if not mma_gflops or pass_flops is None else pass_flops / mma_gflops / 1e9
    mma3 = None if mma1 is None else 3 * mma1
    rate = feed_bytes / t_raw / 1e9 if t_raw and feed_bytes else None
    return claim(
        "cov_tf32_time", "raw_ms >= 2 * mma1_ms and t3_ms >= 1.2 * mma3_ms",
        "At chapter 0's TF32 rate ({tflops:,.0f} TFLOP/s) the three passes of 3xTF32 need {mma3_ms:.1f} ms "
        "of mma, and one pass {mma1_ms:.1f} ms. Truncated TF32, one pass, takes {raw_ms:.1f} ms, "
        "{raw_ratio:.1f}× its mma, while its tiles read {gb:,.1f} GB of X (each panel of columns once per "
        "tile that uses it, {rate:,.0f} GB/s); 3xTF32 takes {t3_ms:.1f} ms, {t3_ratio:.2f}× its three passes",
        "At chapter 0's TF32 rate ({tflops:,.0f} TFLOP/s) the three passes of 3xTF32 need {mma3_ms:.1f} ms "
        "of mma, and one pass {mma1_ms:.1f} ms. Truncated TF32 takes {raw_ms:.1f} ms ({raw_ratio:.1f}× its "
        "mma) and 3xTF32 {t3_ms:.1f} ms ({t3_ratio:.2f}× its three passes): here the tensor cores run close "
        "to their rate",
        "Where 3xTF32's time goes is not measured here: that needs the tensor cores, and chapter 0's "
        "record of their rate",
        t3_ms=None if t3 is None else t3 * 1e3, raw_ms=None if t_raw is None else t_raw * 1e3,
        mma1_ms=None if mma1 is None else mma1 * 1e3, mma3_ms=None if mma3 is None else mma3 * 1e3,
        tflops=None if not mma_gflops else mma_gflops / 1e3,
        gb=None if feed_bytes is None else feed_bytes / 1e9, rate=rate,
        raw_ratio=None if mma1 is None or t_raw is None else t_raw / mma1,
        t3_ratio=None if mma3 is None or t3 is None else t3 / mma3)


def tf32_not_dram(t_raw, t_slab, slab_rows, n, l2_bytes, why=None):
    """Part 6.3's cause (kind "cause"): is one-pass TF32 held by its reads from device
    memory? Its tiles read X's panels again and again; fed X in slabs of rows that fit
    in L2 (one launch a slab, tf32.XtX's slab_rows), every tile reads X from L2 and
    device memory gives each row once. If those reads set its time, the slabs would
    take it well below the one launch; the claim: less than 15% faster, so they do
    not. `why`: the reason it was not measured, where it was not."""
    gain = t_raw / t_slab if t_raw and t_slab else None
    return claim(
        "cov_tf32_not_dram", "gain < 1.15",
        "Fed X in slabs of {slab:,.0f} rows ({slab_mb:.0f} MiB, which the {l2_mb:.0f} MiB L2 holds), one "
        "launch a slab, so that its tiles read X from L2 and device memory gives each row once, truncated "
        "TF32 takes {slab_ms:.1f} ms against {raw_ms:.1f} ms in one launch ({gain:.2f}×): its reads from "
        "device memory do not set its time, the work inside its tiles does",
        "Fed X in slabs of {slab:,.0f} rows ({slab_mb:.0f} MiB, which the {l2_mb:.0f} MiB L2 holds), one "
        "launch a slab, truncated TF32 takes {slab_ms:.1f} ms against {raw_ms:.1f} ms in one launch "
        "({gain:.2f}× faster): its reads from device memory set part of its time",
        "Whether device memory sets one-pass TF32's time is not measured here: "
        + (why or "that needs the tensor cores and the device's L2 size"),
        kind="cause", raw_ms=None if t_raw is None else t_raw * 1e3,
        slab_ms=None if t_slab is None else t_slab * 1e3, gain=gain, slab=slab_rows,
        slab_mb=None if slab_rows is None else 4 * n * slab_rows / 2**20,
        l2_mb=None if not l2_bytes else l2_bytes / 2**20)


def symmetric_follows_work(t_naive, t_sym, np_):
    """Step 2's cause (kind "cause"): the lower triangle keeps the naive kernel's two
    loads per multiply-add and drops the rest, so if the loads per multiply-add set its
    pace, its time falls by the work it skips: np_² entries against np_(np_+1)/2, within
    10%. A kernel held by something per work-item, whatever it computes (launching the
    work-items above the diagonal, occupancy), would not halve."""
    work = np_ * np_ / (np_ * (np_ + 1) / 2)
    gain = _ratio(t_naive, t_sym)
    return claim(
        "cov_symmetric_follows_work", "abs(gain / work - 1) < 0.1",
        "The lower triangle ran {gain:.2f}× as fast for {work:.2f}× fewer multiply-adds, "
        "within 10%: the time follows the multiply-adds, each with its two loads",
        "The lower triangle ran {gain:.2f}× as fast for {work:.2f}× fewer multiply-adds, "
        "more than 10% apart: something besides the multiply-adds and their loads sets the pace",
        glue=False, kind="cause", gain=gain, work=work)


# the register tile the H100's counters hold (the first shape of the sweep that a GPU runs)
REGISTER_TILES_COUNTED = (
    "tiles/register_tiles.cl:register_tiles[CHECK=0 FP64=0 GV=4 K=16 LV=4 PREFETCH=1 "
    "STAGES=1 TM=64 TN=64 TRIANGLE=1 TYPE=float WM=4 WN=4]")
COUNTED = [("column sums", "covariance/col_sums.cl:col_sums"),
           ("centre", "covariance/centre.cl:centre"),
           ("register tiles 64 × 64, 4 × 4 blocks", REGISTER_TILES_COUNTED),
           ("finish", "covariance/finish.cl:finish[MIRROR=1]")]


def register_tiles_off_memory(rows, whose, label=REGISTER_TILES_COUNTED):
    """Step 4's cause, read from the counters of `whose` (kind "cause"): register tiles
    fetch 2/TB floats from global memory per multiply-add, so device memory should
    idle (DRAM under 25% of its peak) while the compute unit issues (issue slots busy
    more than twice as much as DRAM). A tile held by device memory would show DRAM as
    busy as chapter 5's streams; one held by latency would leave the issue slots idle."""
    row = (rows or {}).get(label) or {}
    m = {} if row.get("why_not") else row.get("metrics") or {}
    top = next(iter(m["stalls"]), None) if m.get("stalls") else None
    return claim(
        "cov_register_tiles_off_dram", "dram < 25 and issue > 2 * dram",
        "The {whose}'s counters of a register tile (64 × 64, 4 × 4 per work-item) show "
        "device memory idle: DRAM at {dram:.0f}% of its peak with {hit:.0f}% L2 hits, "
        "while its issue slots are {issue:.0f}% busy; its warps wait most on {top}",
        "The {whose}'s counters of a register tile (64 × 64, 4 × 4 per work-item) do not "
        "show device memory idle: DRAM at {dram:.0f}% of its peak, issue slots {issue:.0f}% "
        "busy (the test: under 25%, and issue more than twice DRAM)",
        "The register tiles have no trusted counters here ({names} missing)",
        glue=False, kind="cause", whose=whose, dram=m.get("dram_pct"),
        issue=m.get("issue_pct"), hit=m.get("l2_hit_pct"),
        top=top and top.replace("_", " ").replace("mio throttle",
                                                  "the local-memory queue (MIO throttle)"))
