"""Devices of few work-items per work-group (PoCL's POCL_MAX_WORK_GROUP_SIZE=32
or 16): each step either runs with what fits or says in one line why not.
Stub devices for the choices; PoCL with the variable set, in a subprocess,
for the runs."""
import os
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import numpy as np
import pyopencl as cl
import pytest

import gpubook as gb
from gpubook.chapters.lsq import measure as lm


def run_small(most, code):
    """Run `code` in a fresh interpreter whose PoCL allows `most` work-items per work-group."""
    env = {**os.environ, "POCL_MAX_WORK_GROUP_SIZE": str(most), "GPUBOOK_SCALE": "small"}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def pocl():
    try:
        device = gb.choose_device()
    except Exception:
        return False
    return "portable computing language" in str(device.platform.name).lower()


needs_pocl = pytest.mark.skipif(not pocl(), reason="runs PoCL with POCL_MAX_WORK_GROUP_SIZE")


@pytest.mark.parametrize("most", [32, 16])
def test_cholqr2_has_register_tiles_for_32_and_16_work_items(most):
    chosen = lm.portable_shapes(SimpleNamespace(max_work_group_size=most, local_mem_size=64 * 1024))
    assert set(chosen) == {"gram_shape", "update_shape", "product_shape", "inverse_shape"}
    for key, shape in chosen.items():
        assert gb.tiles.work_items(shape) <= most
        if key in ("gram_shape", "update_shape"):
            assert shape["TM"] == shape["TN"]


@needs_pocl
@pytest.mark.parametrize("most", [32, 16])
def test_cholqr2_runs_where_the_device_allows_few_work_items(most):
    out = run_small(most, """
        import numpy as np, gpubook as gb
        from gpubook.chapters.lsq import measure, tsqr
        device, ctx, queue, _, _ = gb.open_device()
        if not gb.has_fp64(device):
            print("no fp64"); raise SystemExit
        cq, note = measure.portable(ctx, queue, 21)
        a = np.random.default_rng(0).standard_normal((500, 21))
        r = cq.r_factor(a)
        print(cq.method, tsqr.gram_error(r, a) < 1e-12)
    """)
    assert out.split()[-2:] == ["CholeskyQR2", "True"] or out.strip() == "no fp64"


# --- chapter 6: register tiles, local tiles, mean and centring, tensor cores ---------------

from gpubook.chapters import covariance as cv                       # noqa: E402
from gpubook.chapters.covariance import incore, tensor_cores as ct  # noqa: E402


def small_device(most, fp64=True):
    return SimpleNamespace(max_work_group_size=most, local_mem_size=64 * 1024, name="small",
                           double_fp_config=int(fp64), extensions="cl_khr_fp64" if fp64 else "")


def test_register_tiles_of_the_sweep_at_32_and_a_small_one_at_16():
    at32, _ = cv.tile_shapes(small_device(32))
    assert at32 and all(gb.tiles.work_items(s) <= 32 for s in at32)
    assert all(s in [cv.shape(*c) for c in cv.SWEEP] for s in at32)       # the sweep's own shapes
    at16, skipped = cv.tile_shapes(small_device(16))
    assert len(at16) == 1 and gb.tiles.work_items(at16[0]) <= 16
    assert len(skipped) == len(cv.SWEEP)                                  # each sweep shape says why


def test_local_tiles_follow_the_built_kernels_limit(monkeypatch):
    device, ctx, _, _, _ = gb.open_device()
    real = gb.launch.kernel_max
    monkeypatch.setattr(gb.launch, "kernel_max", lambda k, d: min(32, real(k, d)))
    _, t = incore.local_tiles_kernel(ctx, device)
    assert t * t <= 32


def test_mean_and_centring_run_where_no_register_tile_does(monkeypatch):
    def none_fits(ctx, device, preferred=()):
        raise gb.TileError("no register tile fits (test)")
    monkeypatch.setattr(incore, "runnable_tile", none_fits)
    device, ctx, queue, _, _ = gb.open_device()
    data = cv.make_data(100, 40, seed=3)
    cov = cv.Covariance(ctx, queue, 100, 40)
    cov.upload(data.x)
    cov.mean()
    cov.centre()
    assert abs(cov.mean_vector() - data.x.mean(axis=0)).max() < 1e-4
    assert cov.tile is None
    cov.covariance_events("symmetric")
    cv.check(cov.result(), cv.reference(data.x), 1e-4)
    with pytest.raises(gb.TileError, match="no register tile fits"):
        cov.products("register_tiles")


def test_tensor_step_checks_fp64_and_the_warp_first():
    assert "no fp64 support" in ct.why_not_here(small_device(1024, fp64=False), emulate=True)
    assert "32 work-items per work-group, this device allows 16" in ct.why_not_here(small_device(16), True)
    assert ct.why_not_here(small_device(32), emulate=True) is None
    built, skipped = ct.products(None, SimpleNamespace(device=small_device(1024, fp64=False)), [{"T": 16}])
    assert not built and "no fp64 support" in skipped[0][1]


@needs_pocl
def test_covariance_chapter_steps_run_at_16():
    out = run_small(16, """
        import gpubook as gb
        from gpubook.chapters import covariance as cv
        device, ctx, queue, _, _ = gb.open_device()
        data = cv.make_data(100, 40, seed=3)
        for step in cv.STEPS:
            cv.check(cv.Covariance(ctx, queue, 100, 40).run(data.x, step), cv.reference(data.x), 1e-4)
        print("ok")
    """)
    assert out.strip() == "ok"


# --- chapter 8 at 16 work-items: step 2's work-group, step 3's panels ---------------------

@needs_pocl
def test_lsq_steps_2_and_3_fit_16_work_items():
    out = run_small(16, """
        import gpubook as gb
        from gpubook.chapters import lsq
        device, ctx, queue, _, _ = gb.open_device()
        if not gb.has_fp64(device):
            print("no fp64"); raise SystemExit
        groups, skipped = lsq.row_group_sizes(ctx, queue, [8, 40])
        widths, too_wide = lsq.panel_widths(ctx, queue, [8, 16, 20, 32], n=40)
        x, y = lsq.make_problem(200, 40, seed=2)
        f = lsq.BlockedQR(ctx, queue, 40).add(x, y).factor()     # the default panel fits
        g = lsq.Includ(ctx, queue, 40, "2_row_group", wg=groups[0]).run(x, y)
        print(groups, [w for w, _ in skipped], widths, [w for w, _ in too_wide],
              lsq.factor_error(f, x) < 1e-12, lsq.factor_error(g, x) < 1e-12)
        print(too_wide[0][1])
    """)
    if out.strip() == "no fp64":
        return
    first, reason = out.strip().splitlines()
    assert first == "[16] [32, 128, 256, 1024] [8, 16] [20, 32] True True"
    assert "need work-groups of 20 work-items" in reason and "allows 16" in reason


@needs_pocl
def test_multi_device_subset_search_runs_at_16():
    out = run_small(16, """
        import gpubook as gb
        from gpubook.chapters.multi import subsets
        device, ctx, _, _, _ = gb.open_device()
        if not gb.has_fp64(device):
            print("no fp64"); raise SystemExit
        _, wg = subsets._subset_kernel(ctx, device, 2, 10)
        print(wg)
    """)
    assert out.strip() in ("16", "no fp64")


@needs_pocl
def test_transpose_warp_trace_at_16_work_items():
    out = run_small(16, """
        import numpy as np, gpubook as gb
        from gpubook.chapters.transpose import figures as tf
        device, ctx, queue, _, _ = gb.open_device()
        print(all(np.array_equal(tf.traced_bytes(ctx, queue, v, 16), tf.predicted_bytes(v, 16))
                  for v in tf.KERNELS))
    """)
    assert out.strip() == "True"


# --- chapter 7: steps 1-2 on a small device; the labels as a NumPy array ----------------

from gpubook.chapters import scan as sc  # noqa: E402


def test_list_sizes_keep_the_candidates_or_add_what_fits():
    assert sc.list_sizes(small_device(1024)) == (32, 64, 128, 256, 512, 1024)
    assert sc.list_sizes(small_device(16)) == (32, 64, 128, 256, 512, 1024, 16)


def test_list_fitness_takes_a_numpy_array_or_says_what_it_wants():
    _, ctx, queue, _, _ = gb.open_device()
    rng = np.random.default_rng(7)
    labels = rng.integers(0, 2, 1000).astype(np.int32)
    ref = sc.fitness_reference(-np.arange(1000, dtype=np.float64), labels)
    lf = sc.ListFitness(ctx, queue, sc.LIST_STEPS[1], wg=gb.launch.largest(queue.device, 64))
    device_copy = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=labels)
    assert abs(lf.fitness(device_copy, 1000, np.int32) - ref) < 1e-12
    assert abs(lf.fitness(labels, 1000) - ref) < 1e-12                  # copied to the device
    assert abs(lf.fitness(labels.astype(np.int64), 1000) - ref) < 1e-12
    with pytest.raises(ValueError, match="at least n = 1,000 integer labels"):
        lf.fitness(labels[:10], 1000)
    with pytest.raises(TypeError, match="device buffer or a NumPy array"):
        lf.fitness(list(labels), 1000)
