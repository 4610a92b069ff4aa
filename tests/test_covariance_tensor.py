"""Chapter 6's tensor-core step (gpubook.chapters.covariance.tensor_cores): the step runs
through the chapter's own pipeline (centring, padded S, finishing kernel) and its
errors are the chapter's; on a CPU the warp's product is emulated. The figure of
the split is drawn from the split's own bits."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import gpubook as gb  # noqa: E402
from gpubook import tensor, tf32  # noqa: E402
from gpubook.chapters import covariance as cv  # noqa: E402
from gpubook.chapters.covariance import tensor_cores as ct  # noqa: E402


@pytest.fixture(scope="module")
def cl_env():
    device, ctx, queue, _, _ = gb.open_device()
    return device, ctx, queue


@pytest.fixture(scope="module")
def emulated_env(cl_env):
    """cl_env where step 7's emulated kernels can run (a warp of 32 work-items), else a skip
    with the reason the chapter gives (POCL_MAX_WORK_GROUP_SIZE=16, say)."""
    why = ct.why_not_here(cl_env[0], emulate=True)
    if why:
        pytest.skip(f"step 7 emulated cannot run here: {why}")
    return cl_env


@pytest.fixture(scope="module")
def small():
    d = cv.make_data(300, 40, seed=3)
    return d.x, cv.reference(d.x)


def test_candidate_shapes_fall_back_to_the_one_default(monkeypatch):
    monkeypatch.delattr(tf32, "XTX_SHAPES", raising=False)
    assert ct.candidate_shapes() == [tf32.XTX_SHAPE]
    monkeypatch.setattr(tf32, "XTX_SHAPES", [ct.EMULATED_SHAPE, tf32.XTX_SHAPE], raising=False)
    shapes = ct.candidate_shapes()
    assert shapes == [ct.EMULATED_SHAPE, tf32.XTX_SHAPE] and shapes[0] is not ct.EMULATED_SHAPE
    assert ct.label(ct.EMULATED_SHAPE) == "T 16, warps 1 x 1, KC 8, 32 work-items"


def test_the_step_emulated_gives_the_chapters_errors(emulated_env, small):
    """Through the chapter's pipeline: 3xTF32 as accurate as step 4, truncation over the tolerance."""
    _, ctx, queue = emulated_env
    x, ref = small
    cov = cv.Covariance(ctx, queue, *x.shape)
    errors, checked = ct.mode_errors(ctx, queue, cov, x, ref, emulate=True)
    assert checked == x.shape and set(errors) == set(ct.MODES)
    step4 = cv.error(cov.run(x), ref)
    assert errors["3xtf32"] <= max(3 * step4, 1e-6) and errors["3xtf32"] < 1e-4
    assert errors["tf32-raw"] > 1e-4 > errors["tf32"]          # truncation's errors add up on the diagonal
    # the emulated C is the TF32 model's covariance of the device's centred data, summed in float32
    c = ct.run(cov, x, tf32.XtX(ctx, queue, "tf32-raw", shape=ct.EMULATED_SHAPE, emulate=True))
    xc = x - cov.mean_vector()
    model = tf32.xtx_model(xc, "tf32-raw") / x.shape[0]
    assert cv.error(c, model) < 5e-5 < cv.error(c, ref)


def test_the_emulated_check_is_cut_to_its_largest_problem(emulated_env, small, monkeypatch):
    _, ctx, queue = emulated_env
    x, ref = small
    monkeypatch.setattr(ct, "EMULATED_MAX", (200, 24))
    errors, checked = ct.mode_errors(ctx, queue, None, x, ref, emulate=True)
    assert checked == (200, 24)
    assert errors["3xtf32"] < 1e-5 < 1e-4 < errors["tf32-raw"]   # against the cut data's own reference


def test_shapes_that_cannot_run_are_listed_with_the_reason(emulated_env):
    _, ctx, queue = emulated_env
    bad = {"T": 24, "WARPS_M": 1, "WARPS_N": 1, "KC": 8}
    built, skipped = ct.products(ctx, queue, [ct.EMULATED_SHAPE, bad], emulate=True)
    assert [s for s, _ in built] == [ct.EMULATED_SHAPE] and isinstance(built[0][1], tf32.XtX)
    assert skipped[0][0] == bad and "T must be a multiple" in skipped[0][1] and "\n" not in skipped[0][1]


def test_products_without_tensor_cores_say_why(cl_env):
    device, ctx, queue = cl_env
    if tensor.available(device)[0]:
        pytest.skip("tensor cores here: tools/check_tensor.py checks them")
    built, skipped = ct.products(ctx, queue, [tf32.XTX_SHAPE])
    assert built == [] and skipped[0][1] == tensor.available(device)[1]


def test_the_wgmma_flush_exercise_says_why_where_wgmma_does_not_apply(cl_env, small):
    device, ctx, queue = cl_env
    if "NVIDIA" in device.vendor.upper():
        pytest.skip("an NVIDIA device: the exercise runs (tools/probe_wgmma_gram.py times it)")
    x, ref = small
    three, rounded, why = ct.wgmma_flushes(ctx, queue, cv.Covariance(ctx, queue, *x.shape), x, ref,
                                           (1024, 2048, 4096), 2048)
    assert three == {} and rounded is None and "not an NVIDIA device" in why


def _value(bits, lead):
    return sum(2.0 ** (lead - k) for k, b in enumerate(bits) if b == 1)


@pytest.mark.parametrize("x", [np.e, np.pi, -0.1, 1000.7, 3e-30, 1.0 - 2**-24])
def test_the_bit_rows_hold_the_split(x):
    rows = {name: (bits, value) for name, bits, value in ct.split_rows(np.float32(x))}
    lead = int(np.frexp(abs(float(np.float32(x))))[1]) - 1
    bits, value = rows["x, float32"]
    assert value == float(np.float32(x)) and _value(bits, lead) == abs(value) and (bits >= 0).all()
    raw, raw_value = rows["TF32 truncated"]
    assert (raw[:11] == bits[:11]).all() and (raw[11:] == -1).all() and _value(raw, lead) == abs(raw_value)
    for name in ("hi = tf32(x)", "lo = tf32(x − hi)"):
        part, v = rows[name]
        assert (part >= 0).sum() <= 11
        if abs(v) < 2.0 ** (lead + 1) and v != 0:                  # hi rounded past x's leading bit is cut
            assert _value(part, lead) == pytest.approx(abs(v), rel=2**-12)
    hi, lo = rows["hi = tf32(x)"][1], rows["lo = tf32(x − hi)"][1]
    assert abs(hi + lo - float(np.float32(x))) <= 2.0 ** (lead - 21)


def test_the_dropped_product_is_below_float32s_rounding():
    sizes = ct.product_sizes(n=4000)
    assert sizes["hi·hi"] == pytest.approx(1.0, rel=1e-3)
    assert 2**-24 < sizes["hi·lo"] < 2**-11 and 2**-24 < sizes["lo·hi"] < 2**-11
    assert sizes["lo·lo"] < 2**-24


def test_the_split_figure_draws_on_white():
    fig = ct.draw_split()
    try:
        assert matplotlib.colors.to_rgba(fig.get_facecolor()) == (1.0, 1.0, 1.0, 1.0)
        left, right = fig.axes[:2]
        assert len(left.patches) == 24 + 3 * 11 and len(right.patches) == 4
        assert "log2" in right.get_ylabel() and "bit position" in left.get_xlabel()
    finally:
        plt.close(fig)


def test_the_split_note_compares_the_best_of_each_place():
    rows = [{"T": 64, "WARPS_M": 2, "WARPS_N": 2, "KC": 16, "variant": "early", "median_s": 0.070},
            {"T": 128, "WARPS_M": 2, "WARPS_N": 4, "KC": 16, "LATE": 1, "variant": "late a", "median_s": 0.047},
            {"T": 64, "WARPS_M": 2, "WARPS_N": 2, "KC": 16, "LATE": 1, "variant": "late b", "median_s": 0.050}]
    note = ct.split_note(rows)
    assert "(early) takes 70.0 ms" in note and "(late a) takes 47.0 ms" in note and "1.49× faster" in note
    assert ct.shape_of(rows[1]) == {"T": 128, "WARPS_M": 2, "WARPS_N": 4, "KC": 16, "LATE": 1}
    assert ct.shape_of(rows[0]) == {"T": 64, "WARPS_M": 2, "WARPS_N": 2, "KC": 16}
    assert "only the late" in ct.split_note(rows[1:])
    assert "nothing was timed" in ct.split_note([])


def test_the_work_of_the_tensor_core_step_is_counted_tile_by_tile():
    """ct.work: every panel of T columns is read once per panel of the triangle, and
    the mma run over whole tiles, less the warps' blocks above a diagonal tile's
    diagonal (one of four with 2 x 2 warps)."""
    shape = {"T": 128, "WARPS_M": 2, "WARPS_N": 2, "KC": 16}
    feed, flops = ct.work(shape, 131_072, 4_096)
    assert feed == 4 * 32 * 4_096 * 131_072
    assert flops == 2 * 131_072 * 128 * 128 * (32 * 31 // 2 + 32 * 3 / 4)
    assert ct.work({**shape, "DIAG_SKIP": 0}, 100, 200)[1] == 2 * 112 * 128 * 128 * 3


def test_where_the_3xtf32_time_goes_is_a_claim_of_the_run():
    from gpubook.chapters.covariance import claims as cc
    feed, flops = 68.7e9, 2.23e12
    held = cc.tf32_time(0.0316, 0.0240, flops, feed, 323_000)
    assert held.held and "3.5× its mma" in held.sentence and "% of" not in held.sentence
    mma_bound = cc.tf32_time(0.0316, 0.0100, flops, feed, 323_000)
    assert mma_bound.held is False and "close to their rate" in mma_bound.sentence
    nothing = cc.tf32_time(None, None, None, None, None)
    assert nothing.held is None and "needs the tensor cores" in nothing.sentence


def test_whether_device_memory_sets_one_pass_tf32_is_an_experiment():
    from gpubook.chapters.covariance import claims as cc
    held = cc.tf32_not_dram(0.0240, 0.0231, 2048, 4096, 52_428_800)
    assert held.held and held.kind == "cause" and "1.04×" in held.sentence
    assert "32 MiB" in held.sentence and "50 MiB L2" in held.sentence
    dram = cc.tf32_not_dram(0.0240, 0.0100, 2048, 4096, 52_428_800)
    assert dram.held is False and "set part of its time" in dram.sentence
    unknown = cc.tf32_not_dram(0.0240, None, None, 4096, None, why="no L2 size for this device")
    assert unknown.held is None and "no L2 size" in unknown.sentence


def test_the_slab_fits_three_quarters_of_l2_in_whole_flushes():
    class Dev:
        name = "NVIDIA H100 80GB HBM3"
    rows, l2 = ct.l2_slab_rows(Dev, 4096, 2048)
    assert l2 == 50 * 2**20 and rows == 2048          # 2,400 rows fit: 2,048, a whole flush
    assert ct.l2_slab_rows(Dev, 64, 2048)[0] == 2048 * 75   # 153,600 rows of 256 B
    assert ct.l2_slab_rows(Dev, 1_000_000, 2048)[0] == 2048  # at least one flush
    Dev.name = "Some laptop GPU"
    assert ct.l2_slab_rows(Dev, 4096, 2048) == (None, None)
