"""gpubook.wgmma.Gram and kernels/tensor/wgmma_gram.cl on any device, with each wgmma
computed by the work-items (emulate=True): the tiles, X' in the tensor cores' order,
the copies, the flushes and the 3xTF32 split against NumPy; the markers' rewrite into
one wgmma; the input checks; and part 6.3's step 8 helpers."""
import numpy as np
import pyopencl as cl
import pytest

import gpubook as gb
from gpubook import ptx_probe, wgmma
from gpubook.chapters.covariance import tensor_cores as ct

SHAPES = [wgmma.GRAM_SHAPE,
          {"WGS": 1, "MW": 2, "TN": 128, "KC": 8, "STAGES": 4, "WAIT": 1},
          {"WGS": 1, "MW": 1, "TN": 64, "KC": 8, "STAGES": 3, "WAIT": 1},
          {"WGS": 1, "MW": 2, "TN": 64, "KC": 8, "STAGES": 3, "WAIT": 1, "AREG": 1},
          {"WGS": 1, "MW": 1, "TN": 64, "KC": 8, "STAGES": 4, "WAIT": 1, "AREG": 1, "LOS": 3}]


@pytest.fixture(scope="module")
def env():
    _, ctx, queue, _, _ = gb.open_device()
    return ctx, queue


def lower(n):
    return np.tril(np.ones((n, n), bool))


@pytest.mark.parametrize("shape, mode", [(SHAPES[0], "tf32-raw"), (SHAPES[0], "3xtf32"), (SHAPES[1], "tf32"),
                                         (SHAPES[2], "3xtf32"), (SHAPES[3], "3xtf32"),
                                         (SHAPES[4], "3xtf32")],
                         ids=lambda v: v if isinstance(v, str) else "-".join(str(x) for x in v.values()))
def test_small_integers_give_numpys_product_exactly(env, shape, mode):
    ctx, queue = env
    x = np.random.default_rng(1).integers(-2, 3, (128, 256)).astype(np.float32)
    gram = wgmma.Gram(ctx, queue, mode, shape, emulate=True, flush_rows=64)
    got = gram.product(x)
    want = x.astype(np.float64).T @ x
    assert np.array_equal(got[lower(256)], want[lower(256)])


def test_the_modes_errors_are_tf32s_and_3xtf32_is_float32s(env):
    ctx, queue = env
    x = np.random.default_rng(2).standard_normal((256, 128)).astype(np.float32)
    want = x.astype(np.float64).T @ x
    keep = lower(128)
    err = {}
    for mode in wgmma.GRAM_MODES:
        got = wgmma.Gram(ctx, queue, mode, SHAPES[2], emulate=True).product(x)
        err[mode] = np.max(np.abs(got - want)[keep]) / np.max(np.abs(want))
    assert 1e-4 < err["tf32-raw"] < 3e-3           # truncated to 10 bits: each term off by up to 2^-10
    assert err["tf32"] < err["tf32-raw"] / 3        # rounded: errors of both signs
    assert err["3xtf32"] < 1e-5                      # the split: float32's digits back
    areg = wgmma.Gram(ctx, queue, "3xtf32", SHAPES[3], emulate=True).product(x)
    same = wgmma.Gram(ctx, queue, "3xtf32", {**SHAPES[3], "AREG": 0}, emulate=True).product(x)
    assert np.array_equal(areg[keep], same[keep])    # A's lo parts from registers: the same sums


def test_a_from_registers_is_3xtf32s_and_saves_a_stage_of_lo_parts(env):
    ctx, queue = env
    with pytest.raises(ValueError, match="AREG"):
        wgmma.Gram(ctx, queue, "tf32", SHAPES[3], emulate=True)
    both, b_only = (wgmma.gram_local_bytes({**SHAPES[3], "AREG": a}, "3xtf32") for a in (0, 1))
    assert both - b_only == 4 * 2 * 128 * 8            # two lo stages of A's 128 rows of 8 terms
    with pytest.raises(ValueError, match="LOS"):
        wgmma.Gram(ctx, queue, "3xtf32", {**SHAPES[4], "LOS": 4}, emulate=True)
    three = wgmma.Gram(ctx, queue, "3xtf32", SHAPES[4], emulate=True, flush_rows=64)
    x = np.random.default_rng(4).standard_normal((512, 64)).astype(np.float32)
    two = wgmma.Gram(ctx, queue, "3xtf32", {**SHAPES[4], "LOS": 2}, emulate=True, flush_rows=64)
    assert np.array_equal(three.product(x)[lower(64)], two.product(x)[lower(64)])


def test_a_shift_centres_each_column_on_the_way_into_x_prime(env):
    ctx, queue = env
    x = (np.random.default_rng(3).standard_normal((128, 128)) + 5).astype(np.float32)
    mean = x.mean(axis=0).astype(np.float32)
    gram = wgmma.Gram(ctx, queue, "3xtf32", SHAPES[2], emulate=True)
    mf = cl.mem_flags
    xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    sb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=mean * 128)
    cb = cl.Buffer(ctx, mf.READ_WRITE, 4 * 128 * 128)
    cl.wait_for_events(gram.enqueue(xb, 128, 128, cb, shift=sb, scale=1 / 128))
    got = np.empty((128, 128), np.float32)
    cl.enqueue_copy(queue, got, cb)
    xc = x.astype(np.float64) - x.astype(np.float64).mean(axis=0)
    want = xc.T @ xc
    keep = lower(128)     # the tiles above them are never written: compare only what is
    assert np.max(np.abs(got[keep] - want[keep])) < 1e-4 * np.max(np.abs(want))


def test_sizes_modes_and_shapes_that_cannot_run_are_refused(env):
    ctx, queue = env
    with pytest.raises(ValueError, match="unknown mode"):
        wgmma.Gram(ctx, queue, "fp16", emulate=True)
    with pytest.raises(ValueError, match="TN must be"):
        wgmma.Gram(ctx, queue, "tf32", {**wgmma.GRAM_SHAPE, "TN": 48}, emulate=True)
    with pytest.raises(ValueError, match="local memory"):
        wgmma.Gram(ctx, queue, "3xtf32", {**wgmma.GRAM_SHAPE, "STAGES": 4}, emulate=False)
    gram = wgmma.Gram(ctx, queue, "tf32", SHAPES[2], emulate=True)
    with pytest.raises(ValueError, match="must be multiples of"):
        gram.check_sizes(100, 128)
    mf = cl.mem_flags
    xb = cl.Buffer(ctx, mf.READ_WRITE, 4 * 100 * 70)
    with pytest.raises(ValueError, match="at least one row"):
        gram.enqueue(xb, 0, 70, xb)
    with pytest.raises(ValueError, match="a shift needs"):
        gram.enqueue(xb, 100, 70, xb, shift=xb, scale=1.0)
    with pytest.raises(ValueError, match="NaN"):
        gram.product(np.full((4, 4), np.nan, np.float32))


@pytest.mark.parametrize("m, n", [(100, 70), (1, 1), (65, 129)])
def test_sizes_that_no_tile_divides_give_numpys_product(env, m, n):
    ctx, queue = env
    x = np.random.default_rng(m + n).integers(-2, 3, (m, n)).astype(np.float32)
    got = wgmma.Gram(ctx, queue, "3xtf32", SHAPES[2], emulate=True).product(x)
    want = x.astype(np.float64).T @ x
    assert np.array_equal(got[lower(n)], want[lower(n)])
    if n > 64:
        assert got[0, n - 1] == 0                     # in no tile of the lower triangle


def test_the_grams_markers_become_one_wgmma_as_wide_as_its_accumulators():
    acc = [f"%f{i}" for i in range(1, 33)]
    ptx = ("//\n.version 8.5\n.target sm_90, texmode_independent\n"
           f"\t// WG_FENCE\n\t// WG_ACC {' '.join(acc[:16])}\n\t// WG_ACC {' '.join(acc[16:])}\n"
           "\t// WG_MMA_GO %rd1 %rd2 %r5\n\t// WG_COMMIT\n\t// WG_WAIT 1\n"
           f"\t// WG_HOLD {' '.join(acc[:16])}\n\x00")
    text = wgmma.rewrite(ptx, sync=False)
    assert "WG_" not in text and ".target sm_90a" in text
    assert f"wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {{{', '.join(acc)}}}, %rd1, %rd2, p, 1, 1;" in text
    assert text.index("wgmma.fence") < text.index("setp.ne.b32 p, %r5, 0;") < text.index("wgmma.mma_async")
    assert "wgmma.commit_group.sync.aligned;" in text and "wgmma.wait_group.sync.aligned 1;" in text
    with pytest.raises(ValueError, match="WG_MMA_GO needs"):
        wgmma.rewrite("\t// WG_MMA_GO %rd1 %rd2 %r5\n")
    regs = ("\t// WG_FENCE %r1 %r2 %r3 %r4 %r5 %r6 %r7 %r8\n"
            f"\t// WG_ACC {' '.join(acc[:16])}\n\t// WG_MMA_GOR %r1 %r2 %r3 %r4 %rd2 %r9\n")
    text = wgmma.rewrite(regs, sync=False)
    assert ("wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
            f"{{{', '.join(acc[:16])}}}, {{%r1, %r2, %r3, %r4}}, %rd2, p, 1, 1;") in text
    assert text.index("wgmma.fence") < text.index("wgmma.mma_async")
    with pytest.raises(ValueError, match="WG_MMA_GOR needs"):
        wgmma.rewrite(f"\t// WG_ACC {' '.join(acc[:8])}\n\t// WG_MMA_GOR %r1 %r2 %rd2 %r9\n")


def test_a_register_cap_goes_before_each_kernels_body():
    ptx = (".version 8.5\n.target sm_90\n.entry a(\n.param .u32 x\n)\n.reqntid 256, 1, 1\n{\n\tret;\n}\n"
           ".entry b(\n.param .u32 y\n)\n{\n\tret;\n}\n\x00")
    lines = wgmma.rewrite(ptx, maxnreg=128).splitlines()
    assert [i for i, ln in enumerate(lines) if ln == ".maxnreg 128"] == [6, 13]
    assert all(lines[i + 1] == "{" for i in (6, 13))
    assert ".maxnreg" not in wgmma.rewrite(ptx)
    assert wgmma.GRAM_SHAPE_3X["REGS"] == 128       # L2HINT's policy register: ptxas went to 164


def test_step_8_runs_only_where_the_probes_wgmma_product_was_right():
    assert "no PTX for sm_90a" in ct.wgmma_why_not([])
    right = ("wgmma product", "built", "ran, equal to NumPy")
    assert ct.wgmma_why_not([(ct.ptx_probe.PRODUCT, *right[1:])]) is None
    wrong = (ct.ptx_probe.PRODUCT, "built", "ran, off NumPy by up to 3")
    assert "off NumPy by up to 3" in ct.wgmma_why_not([wrong])


def test_step_8s_sentence_is_computed_from_its_times():
    times = {"tf32-raw": {"pass_s": 0.001, "product_s": 0.010, "total_s": 0.012, "executed": 2.3e12},
             "3xtf32": {"pass_s": 0.001, "product_s": 0.027, "total_s": 0.030, "executed": 6.75e12}}
    note = ct.wgmma_note(times, {"tf32-raw": 0.024, "3xtf32": 0.030}, 0.018, 0.051, 2.2e12, 4.5e12)
    assert "12.0 ms" in note and "0.67× the time of cuBLAS's TF32 GEMM" in note
    assert "2.00× step 7's speed" in note and "1.70× cuBLAS SSYRK's speed" in note
    assert "execute 250 TFLOP/s, where cuBLAS's TF32 GEMM executes 250" in note
    assert ct.wgmma_note({}, {}, None, None, 1.0) == ""


def test_bulk_copies_add_an_mbarrier_a_stage_and_only_where_asked():
    shape = wgmma.GRAM_SHAPE_3X
    assert shape["BULK"] == 1
    plain = wgmma.gram_local_bytes({**shape, "BULK": 0}, "3xtf32")
    assert plain == 45056                         # what ptxas gave the stages and lo parts
    assert wgmma.gram_local_bytes(shape, "3xtf32") == plain + 8 * shape["STAGES"]
    assert wgmma.gram_local_bytes(shape, "3xtf32") <= wgmma.LOCAL_LIMIT
    # one-pass TF32's stages fill the 48 KB: an mbarrier more would not fit
    assert wgmma.gram_local_bytes({**wgmma.GRAM_SHAPE, "BULK": 1}) > wgmma.LOCAL_LIMIT
    assert "BULK" not in wgmma.GRAM_SHAPE


def test_the_gpu_host_tools_say_in_one_line_why_wgmma_does_not_apply_elsewhere(capsys):
    device = gb.open_device()[0]
    if ptx_probe.is_nvidia(device):
        pytest.skip("an NVIDIA device: the tools run here")
    assert ptx_probe.open_nvidia() is None
    out = capsys.readouterr().out
    assert out == f"{device.name.strip()} is not an NVIDIA device: wgmma does not apply\n"


def test_clocks_stamp_each_work_group_and_leave_the_product_exact(env):
    ctx, queue = env
    x = np.random.default_rng(4).integers(-2, 3, (128, 256)).astype(np.float32)
    gram = wgmma.Gram(ctx, queue, "3xtf32", SHAPES[4], emulate=True, flush_rows=64, clocks=True)
    with pytest.raises(gb.clock.ClockUnavailable, match="has not run"):
        gram.clock()
    got = gram.product(x)
    want = x.astype(np.float64).T @ x
    assert np.array_equal(got[lower(256)], want[lower(256)])
    # off NVIDIA the stamps are zeros, and the clock is refused, not made up
    with pytest.raises(gb.clock.ClockUnavailable, match="did not advance over the products"):
        gram.clock()
    with pytest.raises(gb.clock.ClockUnavailable, match="without clocks=True"):
        wgmma.Gram(ctx, queue, "3xtf32", SHAPES[4], emulate=True).clock()


def test_step_8s_clock_claim_needs_the_power_cap_and_can_fail():
    from gpubook.chapters.covariance import claims as cc
    three = {"clock_ghz": 1.56, "capped_s": 0.11, "window_s": 0.14}
    times = {"3xtf32": three, "tf32-raw": {"clock_ghz": 1.66}}
    c = cc.wgmma_clock(times, 1.98)
    assert c.kind == "cause" and c.held is True
    assert "1.56 GHz" in c.sentence and "79% of the 1.98 GHz" in c.sentence and "110 of the 140 ms" in c.sentence
    assert cc.wgmma_clock({**times, "3xtf32": {**three, "capped_s": 0.01}}, 1.98).held is False
    assert cc.wgmma_clock({**times, "3xtf32": {**three, "clock_ghz": 1.97}}, 1.98).held is False
    assert cc.wgmma_clock({**times, "3xtf32": {**three, "capped_s": None}}, 1.98).held is None
    assert cc.wgmma_clock(times, 0).held is None                 # a maximum clock unreported
    assert "not read here" in cc.wgmma_clock({}, 1.98).sentence


def test_step_8s_times_leave_the_clock_and_power_cap_unread_off_nvidia(env):
    from gpubook.chapters.covariance import incore as cv
    ctx, queue = env
    if ptx_probe.is_nvidia(queue.device):
        pytest.skip("an NVIDIA device reads them")
    x = np.random.default_rng(5).standard_normal((256, 128)).astype(np.float32)
    cov = cv.Covariance(ctx, queue, *x.shape)
    cov.upload(x)
    cov.mean()
    cov.centre()
    grams = {mode: wgmma.Gram(ctx, queue, mode, ct.WGMMA_EMULATED_SHAPE, emulate=True, clocks=True)
             for mode in ("tf32-raw", "3xtf32")}
    times = ct.wgmma_times(cov, grams, repeats=1)
    for t in times.values():
        assert t["clock_ghz"] is None and t["capped_s"] is None and t["window_s"] > 0
        assert 0 < t["product_s"] < t["window_s"]


def test_the_power_exercise_needs_stamped_tensor_core_runs_and_its_claim_can_fail(env):
    from gpubook.chapters.covariance import power
    ctx, queue = env
    with pytest.raises(ValueError, match="clocks=True on the tensor cores"):
        power.ramp(None, wgmma.Gram(ctx, queue, "3xtf32", SHAPES[4], emulate=True, clocks=True))
    runs = [{"product_s": 0.0192, "ghz": 1.95}] + [{"product_s": 0.0210, "ghz": 1.56}] * 29
    found = {"runs": runs, "window_s": 0.70, "rest_s": 3.0, "capped_s": 0.55}
    c = power.claim_of(found, 1.98)
    assert c.kind == "cause" and c.held is True
    assert "19.2 ms at 1.95 GHz" in c.sentence and "21.0 ms at 1.56 GHz" in c.sentence
    assert "550 of their 700 ms" in c.sentence and "slows by 9%" in c.sentence
    assert power.claim_of({**found, "capped_s": 0.01}, 1.98).held is False
    steady = [{"product_s": 0.0210, "ghz": 1.56}] * 30
    assert power.claim_of({**found, "runs": steady}, 1.98).held is False
    assert power.claim_of({**found, "capped_s": None}, 1.98).held is None
    assert power.claim_of({**found, "runs": runs[:5]}, 1.98).held is None     # too few to compare
    assert "not all here" in power.claim_of(None, 1.98).sentence
    fig = power.draw(found, "a GPU")
    assert [ax.get_ylabel() for ax in fig.axes] == ["products (ms)", "SM clock (GHz)"]
    assert fig.axes[1].get_xlabel() and len(fig.axes[0].lines[0].get_xdata()) == 30
    import matplotlib.pyplot as plt
    plt.close(fig)
