"""The claims of chapters 4 to 8, evaluated on the numbers the reference records
hold (the H200's and the H100's), and on the H200's stored notebook outputs where
the record does not hold them (the exercises, which run after the record): every
claim must hold there, so the reference pages, once re-run, show true sentences."""
import re

import pytest

from gpubook.chapters.covariance import claims as cov
from gpubook.chapters.logreg import vectors as vt
from gpubook.chapters.lsq import claims as lsq
from gpubook.chapters.lsq.measure import product_flops
from gpubook.chapters.scan import claims as scan
from gpubook.chapters.transpose import claims as tr
from stored_outputs import all_held as all_hold, printed, record as data

DEVICES = ("nvidia-h200", "nvidia-h100-80gb-hbm3")


pytestmark = pytest.mark.usefixtures("no_glue")   # tests/conftest.py


def number(text):
    return float(text.replace(",", ""))


@pytest.mark.parametrize("slug", DEVICES)
def test_chapter6_gemm_against_step4_holds_on_the_records(slug):
    d = data(slug, "06_covariance")
    m, n = d["m"], d["n"]
    c = cov.gemm_against_step4(d["gemm_s"], d["steps"]["register_tiles"], 2 * m * n * n, m * n * (n + 1))
    all_hold(c)
    assert 1.0 < c.values["rate_ratio"] < 1.25  # the "about 1.1x", executed against executed


def test_chapter6_gemm_without_cublas_says_so():
    c = cov.gemm_against_step4(None, 0.045, 2.0, 1.0)
    assert c.held is None and "No cuBLAS GEMM" in c.sentence and "nan" not in c.sentence.lower()


def test_chapter6_exercises_hold_on_the_stored_outputs():
    text = printed("06_going_further")  # the exercises and the sweep's resource table
    t = {int(a): number(b) / 1e3 for a, b in re.findall(r"T = +(\d+): +([\d.,]+) ms", text)}
    all_hold(*cov.tile_side(t, 32))
    blocks = {int(a): number(b) / 1e3 for a, b in re.findall(r"(\d) x \d per work-item: ([\d.]+) ms", text)}
    # registers and occupancy of the two 64 x 64 shapes, from the sweep's resource table
    res = {int(w): (int(r), int(o) / 100) for w, r, o in re.findall(
        r"\| 64x64 tile, (\d)x\d per item, K=16, 1 stage \| \d+ \| (\d+) \|[^\n]*\| (\d+)% \(", text)}
    all_hold(*cov.block_per_item(blocks[4], blocks[8], res[4][0], res[8][0], res[4][1], res[8][1]))
    st = {int(a): number(b) / 1e3 for a, b in re.findall(r"STAGES=(\d): ([\d.]+) ms", text)}
    chunks = number(re.search(r"STAGES=1: [\d.]+ ms, ([\d,]+) chunks", text).group(1))
    all_hold(cov.stages(st[1], st[2], chunks))


def test_chapter6_exercises_on_a_small_device_say_what_is_missing():
    eight, four, local = cov.tile_side({4: 1.0}, 32)
    assert eight.held is None and four.held is None and local.held is None
    assert all("nan" not in c.sentence.lower() for c in (eight, four, local))


@pytest.mark.parametrize("slug", DEVICES)
def test_chapter8_claims_hold_on_the_records(slug):
    d, dev = data(slug, "08_lsq"), data(slug, "00_device")
    step3 = d["blocked"][str(d["nb_best"])]["median_s"]
    all_hold(lsq.step3_against_cusolver(step3, d["cusolver_qr_s"]))
    mma, shape = lsq.f64_mma_in(dev)
    c = lsq.fp64_tensor_cores(mma, shape, d["fp64_gflops"], "m16n8k4")  # sm_90: Hopper's shape
    all_hold(c)
    # what each record measured: the H200's older m8n8k4 loop at the FMA rate, the H100's m16n8k4 above it
    assert (shape, c.values["ratio"] > 1.5) in (("m8n8k4", False), ("m16n8k4", True))


@pytest.mark.parametrize("slug", DEVICES)
def test_chapter8_tall_case_is_held_against_the_roof_of_its_own_units(slug):
    d, dev = data(slug, "08_lsq"), data(slug, "00_device")
    tall = d["step6"]["tall"]
    best = min((k for k in tall["runs"] if k.startswith("CholeskyQR2")),
               key=lambda k: tall["runs"][k]["median_s"])
    run, m, cols = tall["runs"][best], tall["m"], tall["cols"]
    if "passes" not in run:
        pytest.skip(f"the {slug} record predates the tall case's count of passes")
    copy_pct = 100 * run["passes"] * 8 * m * cols / run["median_s"] / 1e9 / dev["limits"]["copy_gbs"]
    c = lsq.tall_roofs(copy_pct, product_flops(m, cols) / run["median_s"] / 1e9, "DMMA" in best,
                       dev["limits"]["fp64_mma_gflops"], d["fp64_gflops"])
    all_hold(c)
    assert ("tensor cores" in c.sentence) == ("DMMA" in best)


def test_chapter8_tall_roofs_fail_past_half_a_roof_and_say_what_is_missing():
    assert lsq.tall_roofs(62.0, 10_000.0, True, 66_000.0, 27_000.0).held is False
    assert lsq.tall_roofs(30.0, 16_000.0, False, 66_000.0, 27_000.0).held is False
    gone = lsq.tall_roofs(30.0, 10_000.0, True, None, 27_000.0)
    assert gone.held is None and "no FP64 tensor-core rate" in gone.sentence


def test_chapter8_without_nvidia_libraries_says_so_in_words():
    c = lsq.step3_against_cusolver(0.5, None)
    assert c.held is None and "no NVIDIA library" in c.sentence
    assert "not compared with cuSOLVER" in lsq.times_vendor(0.5, None)
    t = lsq.fp64_tensor_cores(None, None, 27000.0, None)
    assert t.held is None and "no FP64 tensor-core rate" in t.sentence
    assert all("nan" not in x.lower() for x in (c.sentence, t.sentence, lsq.times_vendor(0.5, None)))


def test_chapter8_exercises_hold_on_the_stored_outputs():
    text = printed("08_going_further")
    rates = {int(a): number(b) for a, b in re.findall(r"WG = +(\d+): +([\d,]+) rows/s", text)}
    all_hold(lsq.row_group_exercise(rates))
    d = data("nvidia-h200", "08_lsq")
    shares = {int(w): 100 * b["by_kernel"]["house_step"] / sum(b["by_kernel"].values())
              for w, b in d["blocked"].items()}
    all_hold(lsq.panel_share_exercise(shares))
    t3, t4, work = re.search(r"k = 3: \d+ subsets in ([\d,]+) µs; k = 4: \d+ in ([\d,]+) µs: "
                             r"[\d.]+× the time for ([\d.]+)× the work", text).groups()
    all_hold(lsq.subset_size_exercise(number(t3) / 1e6, number(t4) / 1e6, float(work)))


@pytest.mark.parametrize("slug", DEVICES)
def test_chapter7_claims_hold_on_the_records(slug):
    d = data(slug, "07_scan")
    all_hold(scan.seed_rises(d["list_sweep"], "1_hillis_steele"))
    at = {r["variant"]: r["median_s"] for r in d["pop_sweep"] if r["examples"] == d["n_pop"]}
    all_hold(scan.population(at["sort + scan"], at["sort + rank sum"]))
    full = {r["variant"]: r["median_s"] for r in d["scan_sweep"] if r["floats"] == d["n_scan"]}
    sp = min(t for v, t in full.items() if v.startswith("4_single_pass"))
    rts = min(t for v, t in full.items() if v.startswith("3_reduce_then_scan"))
    all_hold(*scan.device_reading(sp, rts, full["pyopencl.scan"]))
    all_hold(scan.population_lead(d["pop_sweep"]))


def test_chapter7_exercises_hold_on_the_stored_outputs():
    text = printed("07_going_further")
    items = {int(a): number(b) / 1e3 for a, b in re.findall(r"ITEMS= ?(\d+): +([\d.]+) ms", text)}
    wg = int(re.search(r"ITEMS= 2: +[\d.]+ ms, [\d.]+ billion labels/s, [\d,]+ blocks of ([\d,]+) labels",
                       text).group(1).replace(",", "")) // 2
    all_hold(*scan.items_exercise(items, wg))
    look = {int(a): number(b) / 1e3 for a, b in re.findall(r"LOOK= ?(\d+): ([\d.]+) ms", text)}
    all_hold(*scan.look_exercise(look))


def table_after(text, header):
    """The rows of the Markdown table whose header line starts with `header`, as lists of cells."""
    lines = text[text.index(header):].splitlines()[2:]
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


@pytest.mark.parametrize("slug", DEVICES)
def test_chapter5_claims_hold_on_the_records(slug):
    d = data(slug, "05_transpose")
    ks = sorted({r["K"] for r in d["k_sweep"]})
    all_hold(tr.fused_lead(d["k_sweep"], 292, ks[-1]))
    n, copy = d["summary"]["J_max"], d["summary"]["copy_gbs"]

    def at(key, variant):
        return next(r for r in d[key] if r["variant"] == variant and r["J"] == n)
    # row-major float loads 1,184 bytes apart: each of a warp's 32 sectors gives 4 of its 32 bytes
    tr.scores_reading(at("scores", "rows")["rate"] / copy, at("scores", "cols")["rate"] / copy, 8,
                      1e3 * at("transpose", "tiled")["median_s"], 1e3 * at("scores", "cols")["median_s"])
    from gpubook import claims
    all_hold(claims._made["tr_cols_above_copy"], claims._made["tr_rows_cache_saves"])
    all_hold(tr.gradient_reading(at("gradient", "groups")["rate"] / copy, at("gradient", "blocks")["rate"] / copy,
                                 at("scores", "cols")["rate"] / copy))


def test_chapter5_exercises_hold_on_the_stored_outputs():
    text = printed("05_going_further")  # the exercises live on the Going-further page
    copy = data("nvidia-h200", "00_device")["limits"]["copy_gbs"]
    rates = {int(a): number(b) for a, b in table_after(text, "| work-group size | scores over transposed X")}
    all_hold(*tr.group_size_exercise(rates, copy))
    tiles = {int(a): (number(b), number(c)) for a, b, c in table_after(text, "| examples per tile |")}
    all_hold(tr.tile_exercise(tiles))
    runs = {int(a): (number(b), number(c)) for a, b, c in table_after(text, "| m (float4s per work-item) |")}
    all_hold(tr.blocks_exercise(runs, 132))


def test_chapter4_exercises_hold_on_the_stored_outputs():
    text = printed("04_going_further")  # the exercises live there
    regs = re.search(r"N = (\d+): IN_REGS=0: ([\d,]+), IN_REGS=(\d+): ([\d,]+) iterations/s", text).groups()
    all_hold(vt.registers_exercise({"IN_REGS=0": number(regs[1]), f"IN_REGS={regs[2]}": number(regs[3])},
                                   int(regs[2])))
    n, r2, r16 = re.search(r"N = (\d+): RADIX=2: ([\d,]+), RADIX=16: ([\d,]+) iterations/s", text).groups()
    c = vt.radix_exercise({"RADIX=2": number(r2), "RADIX=16": number(r16)}, int(n))
    all_hold(c)
    assert (c.values["rounds2"], c.values["rounds16"]) == (8, 2)  # fast.cl's loop at N = 512


@pytest.mark.parametrize("slug", DEVICES)
def test_chapter4_one_group_limits_hold_on_the_records(slug):
    d = data(slug, "04_vector_types")
    fastest = f"fastest config, N = {d['fast']['work_items']}"
    largest = next(r["variant"] for r in d["examples"] if r["variant"].startswith("same kernel"))
    cpu = "cpu-skylake-avx512-intel-r-xeon-r-processor"
    all_hold(*vt.one_group_limits(d["examples"], fastest, largest, d["bound"],
                                  {cpu: {"data": data(cpu, "04_vector_types")}}))


def test_chapter4_one_group_limits_on_a_small_device_say_what_is_missing():
    rows = [{"variant": "f", "examples": j, "rate": r} for j, r in ((2048, 10.0), (4096, 4.0))]
    below, slower, swap = vt.one_group_limits(rows, "f", None, [5.0, 5.0], {})
    assert below.held and slower.held is None and swap.held is None
    assert "nan" not in (slower.sentence + swap.sentence).lower()


@pytest.mark.parametrize("slug", DEVICES)
def test_chapter4_arithmetic_floor_holds_on_the_records(slug):
    d = data(slug, "04_vector_types")
    clock_ns = 1e3 / data(slug, "00_device")["summary"]["max clock (MHz)"]
    floor = vt.arithmetic_floor(1e9 / d["fast_rate"], clock_ns, d["J"], d["K"], 128, 16)
    all_hold(floor)
    # the lanes and the special-function units run at the same time: the floor is the
    # longer of their counts (256 and 256 cycles), never their sum ("at least 512 cycles")
    assert floor.values["floor"] == max(floor.values["fma"], floor.values["sfu"]) == 256
    assert "512 cycles" not in floor.sentence
    c = vt.arithmetic_floor(500.0, float("nan"), 2048, 8)
    assert c.held is None and "nan" not in c.sentence.lower()


def test_chapter4_local_rounds_follow_the_kernel_loop():
    assert [vt.local_rounds(n, 2) for n in (2, 4, 1024)] == [0, 1, 9]
    assert [vt.local_rounds(n, 16) for n in (16, 32, 512, 1024)] == [0, 1, 2, 2]


@pytest.mark.parametrize("slug", DEVICES)
def test_chapter6_flush_exercise_holds_on_the_records(slug):
    d = data(slug, "06_covariance")
    tc = d["tensor_cores"]
    all_hold(cov.flush_interval(tc["errors"]["3xtf32"], tc["error_3xtf32_unflushed"], tc["flush_rows"], d["m"]))


def test_chapter6_and_8_part_exercises_without_their_inputs_say_so():
    made = (cov.flush_interval(None, None, 2048, 1000), cov.stream_block_size(1.0, None, 4, None),
            lsq.near_the_limit({1e8: ("TSQR", 8.6e7, 1e-16)}, 1e7), cov.wgmma_flush({}, None, 1024, 2048))
    assert all(c.held is None and "nan" not in c.sentence.lower() for c in made)


def test_chapter6_wgmma_flush_exercise_needs_both_orders():
    # the H200's probe (2026-11-28): 1,024 / 2,048 / 4,096 rows
    three = {1024: {"product_s": 27.2e-3, "error": 1.9e-5}, 2048: {"product_s": 25.2e-3, "error": 3.8e-5},
             4096: {"product_s": 24.4e-3, "error": 7.4e-5}}
    c = cov.wgmma_flush(three, 3.7e-5, 2048, 2048)
    assert c.held is True and "every 1,024 rows" in c.sentence and "3.7e-05" in c.sentence
    assert cov.wgmma_flush({**three, 2048: {"product_s": 28e-3, "error": 3.8e-5}}, 3.7e-5, 2048, 2048).held is False
    assert cov.wgmma_flush({**three, 1024: {"product_s": 27e-3, "error": 5e-5}}, 3.7e-5, 2048, 2048).held is False
    # the page's 3xTF32 flush is half the one-pass modes': rounded TF32 is named at its own
    c = cov.wgmma_flush({512: three[1024], 1024: three[2048], 2048: three[4096]}, 3.7e-5, 1024, 2048)
    assert c.held is True and "flushed every 2,048 rows as on the page, is off by 3.7e-05" in c.sentence


def test_chapter6_wgmma_digits_says_whether_3xtf32_gave_float32s_digits():
    # the H200 (2026-11-28): 3xTF32 2.0e-5 every 1,024 rows, rounded TF32 3.7e-5 every
    # 2,048, step 4 in float32 2.4e-5; every 2,048 rows 3xTF32 was off by 4.0e-5
    c = cov.wgmma_digits(2.0e-5, 3.7e-5, 2.4e-5, 1024, 2048)
    assert c.held is True and "float32's digits" in c.sentence and "every 1,024 rows" in c.sentence
    assert cov.wgmma_digits(4.0e-5, 3.7e-5, 2.4e-5, 2048, 2048).held is False
    assert cov.wgmma_digits(3.0e-5, 6e-5, 1.0e-5, 1024, 2048).held is False
    c = cov.wgmma_digits(None, None, 2.4e-5, 1024, 2048)
    assert c.held is None and "not compared" in c.sentence


def test_chapter8_near_the_limit_judges_only_what_cholqr2_factored():
    runs = {1e3: ("CholeskyQR2", 9e2, 2e-16), 1e6: ("CholeskyQR2", 8e5, 5e-16), 1e8: ("TSQR", 8e7, 1e-9)}
    c = lsq.near_the_limit(runs, 1e7)
    assert c.held is True and c.values["largest"] == 8e5 and c.values["worst"] == 5e-16
    assert lsq.near_the_limit({1e6: ("CholeskyQR2", 8e5, 1e-9)}, 1e7).held is False


@pytest.mark.parametrize("n, wg, rounds, pairs, blocks", [
    (4096, 256, 78, 8, 16), (512, 256, 45, 1, 2), (512, 64, 45, 4, 8), (300, 128, 45, 2, 3)])
def test_chapter7_population_counts_follow_the_kernel_loops(n, wg, rounds, pairs, blocks):
    # the sort's rounds over the next power of two of keys, the pairs each work-item
    # compare-exchanges per round, the scan's blocks of WG labels (5_population.cl)
    from gpubook.chapters.scan.steps import Population
    pop = Population.__new__(Population)
    pop.n, pop.wg, pop.np2 = n, wg, 1 << (n - 1).bit_length()
    work = pop.work()
    assert (work["sort_rounds"], work["pairs_per_item"], work["scan_blocks"]) == (
        rounds, pairs, blocks)
    k = pop.np2.bit_length() - 1
    assert work["sort_rounds"] == sum(1 for size in range(1, k + 1) for _ in range(size))


def test_chapter4_one_group_is_not_enough_only_where_every_one_group_build_falls():
    """The fastest configuration can fall below the line while the same kernel with
    a larger group stays above: one work-group is no longer enough only from the J
    where every one-work-group build (not the host's NumPy) is below it."""
    rates = {"f": (10.0, 4.0, 1.0), "g": (8.0, 7.0, 2.0), "NumPy, host CPU": (9.0, 9.0, 9.0)}
    rows = [{"variant": v, "examples": j, "rate": r}
            for v, rs in rates.items() for j, r in zip((2048, 4096, 8192), rs)]
    below, _, _ = vt.one_group_limits(rows, "f", "g", [5.0, 5.0, 5.0], {})
    assert below.held
    assert (below.values["j_fast"], below.values["j_held"], below.values["j_cross"]) == (
        4096, 4096, 8192)
    assert "from $J$ = 8,192: from there one work-group is no longer enough" in below.sentence
