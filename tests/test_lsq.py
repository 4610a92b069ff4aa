"""Chapter 8's includ (Miller's AS 274) on the local OpenCL device against
NumPy: random, weighted, zero rows, collinear columns, m < n, refusals."""
from types import SimpleNamespace

import numpy as np
import pyopencl as cl
import pytest

import gpubook as gb
from gpubook.chapters import lsq


def test_packing():
    n = 6
    assert lsq.packed_size(n) == 15
    assert [lsq.row_start(i, n) for i in range(n)] == [0, 5, 9, 12, 14, 15]
    f = lsq.Factor(np.ones(3), np.array([1.0, 2.0, 3.0]), np.zeros(3), 0.0)
    assert np.array_equal(f.r(), [[1, 1, 2], [0, 1, 3], [0, 0, 1]])


def test_reference_factorises_and_gives_nested_rss():
    x, y = lsq.make_problem(200, 12)
    w = np.random.default_rng(2).uniform(0.2, 3.0, 200)
    f = lsq.includ_reference(x, y, w)
    assert lsq.factor_error(f, x, w) < 1e-13
    rss = f.rss_nested()
    for k in (1, 4, 12):
        assert rss[k] == pytest.approx(lsq.rss_lstsq(x[:, :k], y, w), rel=1e-10)
    assert rss[0] == pytest.approx(np.sum(w * y * y), rel=1e-12)


@pytest.mark.parametrize("step", lsq.STEPS)
@pytest.mark.parametrize("weighted", [False, True])
def test_device_includ_matches_the_reference(fp64_env, step, weighted):
    _, ctx, queue = fp64_env
    x, y = lsq.make_problem(150, 37, seed=3)
    w = np.random.default_rng(4).uniform(0.1, 5, 150) if weighted else None
    ref = lsq.includ_reference(x, y, w)
    for wg in ([None] if step == "1_sequential" else [16, 32]):
        got = lsq.Includ(ctx, queue, 37, step, wg=wg).run(x, y, w)
        assert np.allclose(got.d, ref.d, rtol=1e-12) and np.allclose(got.rbar, ref.rbar, atol=1e-12)
        assert np.allclose(got.thetab, ref.thetab, atol=1e-12)
        assert got.sserr == pytest.approx(ref.sserr, rel=1e-10)


@pytest.mark.parametrize("step", lsq.STEPS)
def test_zero_rows_zero_weights_and_rows_in_pieces(fp64_env, step):
    _, ctx, queue = fp64_env
    x, y = lsq.make_problem(90, 20, seed=5)
    x[3] = 0.0
    x[8, 4:9] = 0.0
    w = np.ones(90)
    w[11] = 0.0
    inc = lsq.Includ(ctx, queue, 20, step)
    data = inc.upload(x, y, w)
    for row0 in range(0, 90, 25):          # several launches continue one factorisation
        inc.enqueue(data, row0, min(25, 90 - row0))
    got, ref = inc.factor(), lsq.includ_reference(x, y, w)
    assert np.allclose(got.d, ref.d, rtol=1e-12) and got.sserr == pytest.approx(ref.sserr, rel=1e-10)


def test_collinear_columns_still_factorise(fp64_env):
    _, ctx, queue = fp64_env
    x, y = lsq.make_problem(120, 15, seed=6)
    x[:, 7] = 2.0 * x[:, 6]
    got = lsq.Includ(ctx, queue, 15, "2_row_group").run(x, y)
    assert lsq.factor_error(got, x) < 1e-12
    assert got.d[7] < 1e-20 * got.d[6]      # the dependent column leaves (almost) nothing on the diagonal


def test_fewer_rows_than_columns(fp64_env):
    _, ctx, queue = fp64_env
    x, y = lsq.make_problem(8, 12, seed=7)
    got = lsq.Includ(ctx, queue, 12, "2_row_group").run(x, y)
    assert lsq.factor_error(got, x) < 1e-12
    assert np.count_nonzero(got.d > 1e-12) == 8


def test_refusals(fp64_env):
    device, ctx, queue = fp64_env
    with pytest.raises(ValueError, match="local memory"):
        lsq.Includ(ctx, queue, device.local_mem_size // 8 + 1, "2_row_group")
    with pytest.raises(ValueError, match="unknown step"):
        lsq.Includ(ctx, queue, 4, "3_blocked")
    inc = lsq.Includ(ctx, queue, 4, "1_sequential")
    with pytest.raises(ValueError, match="x must have 4 columns"):
        inc.upload(np.zeros((3, 5)), np.zeros(3))
    with pytest.raises(ValueError, match="NaN"):
        inc.upload(np.full((3, 4), np.nan), np.zeros(3))
    with pytest.raises(ValueError, match="negative"):
        inc.upload(np.zeros((3, 4)), np.zeros(3), -np.ones(3))


def test_no_fp64_is_a_clear_error():
    dev = SimpleNamespace(double_fp_config=0, extensions="", name="Tiny GPU")
    queue = SimpleNamespace(device=dev)
    with pytest.raises(ValueError, match="no fp64"):
        lsq.Includ(None, queue, 4, "1_sequential")


def test_unrank_enumerates_every_subset_once():
    from itertools import combinations
    from math import comb

    for p, k in ((6, 1), (7, 3), (9, 5)):
        got = [lsq.unrank(g, k, p) for g in range(comb(p, k))]
        assert sorted(got) == list(combinations(range(p), k))


@pytest.mark.parametrize("k", [1, 3, 5])
def test_subset_search_matches_numpy_and_lstsq(fp64_env, k):
    _, ctx, queue = fp64_env
    x, y = lsq.make_problem(400, 13, seed=9)
    perm = np.random.default_rng(k).permutation(12) + 1          # hide the useful candidates
    x = x[:, np.concatenate([[0], perm])]
    xtx, xty, yty = lsq.cross_products(lsq.includ_reference(x, y), y @ y)
    search = lsq.SubsetSearch(ctx, queue, 12, k, wg=32)
    search.enqueue(search.upload(xtx, xty), yty)
    rss = np.empty(search.count)
    cl.enqueue_copy(queue, rss, search.rss)
    ref, subs = lsq.subsets_numpy(xtx, xty, yty, k)
    by_subset = {tuple(s): r for s, r in zip(subs, ref)}
    for g, r in enumerate(rss):
        assert r == pytest.approx(by_subset[lsq.unrank(g, k, 12)], rel=1e-9)
    best, sub = search.best(xtx, xty, yty)
    assert sub == tuple(subs[np.argmin(ref)])
    assert best == pytest.approx(lsq.rss_lstsq(x[:, [0] + [c + 1 for c in sub]], y), rel=1e-8)


def test_collinear_subsets_are_infinite_and_bad_k_refused(fp64_env):
    _, ctx, queue = fp64_env
    x, y = lsq.make_problem(100, 5, seed=10)
    x[:, 2] = x[:, 1]
    xtx, xty, yty = x.T @ x, x.T @ y, y @ y
    search = lsq.SubsetSearch(ctx, queue, 4, 2, wg=32)
    search.enqueue(search.upload(xtx, xty), yty)
    rss = np.empty(search.count)
    cl.enqueue_copy(queue, rss, search.rss)
    bad = [g for g in range(search.count) if lsq.unrank(g, 2, 4) == (0, 1)]
    assert np.isinf(rss[bad]).all() and np.isfinite(np.delete(rss, bad)).all()
    with pytest.raises(ValueError, match="subset size"):
        lsq.SubsetSearch(ctx, queue, 4, 5)


def check_weighted_in_blocks(qr):
    """A factorisation of 37 columns, fed 230 weighted rows in blocks of 100,
    against the row-by-row float64 reference: the factor, D and the nested RSS."""
    x, y = lsq.make_problem(230, 37, seed=21)
    w = np.random.default_rng(22).uniform(0.1, 4.0, 230)
    ref = lsq.includ_reference(x, y, w)
    got = qr.add(x, y, w).factor()
    assert lsq.factor_error(got, x, w) < 1e-13
    assert np.allclose(got.d, ref.d, rtol=1e-11)
    assert np.allclose(got.rss_nested(), ref.rss_nested(), rtol=1e-10, atol=0)


@pytest.mark.parametrize("nb", [8, 16, 32])
def test_blocked_householder_matches_the_reference(fp64_env, nb):
    """Step 3 in several blocks of rows, weighted, with n not a multiple of the panel width."""
    _, ctx, queue = fp64_env
    check_weighted_in_blocks(lsq.BlockedQR(ctx, queue, 37, nb=nb, block_rows=100))


def test_blocked_continues_a_factorisation_and_timing_helpers(fp64_env):
    _, ctx, queue = fp64_env
    x, y = lsq.make_problem(160, 24, seed=23)
    first = lsq.includ_reference(x[:70], y[:70])
    got = lsq.BlockedQR(ctx, queue, 24, nb=8).load(first).add(x[70:], y[70:]).factor()
    assert lsq.factor_error(got, x) < 1e-13
    assert got.sserr == pytest.approx(lsq.rss_lstsq(x, y), rel=1e-10)
    t, by_kernel, qr = lsq.time_blocked(ctx, queue, x, y, 8, repeats=2)
    assert t.median > 0 and set(by_kernel) >= {"house_step", "trail_update"}
    assert qr.sserr == pytest.approx(got.sserr, rel=1e-10)
    assert lsq.time_includ(ctx, queue, "2_row_group", got, x[:3], y[:3], wg=32, repeats=2).median > 0


SMALL_TILE = {"TM": 32, "TN": 32, "WM": 8, "WN": 4, "K": 8, "STAGES": 2}


@pytest.mark.parametrize("nb,outer,rpi", [(8, 16, 1), (4, 32, 2), (8, 64, 1)])
def test_tiled_householder_matches_the_reference(fp64_env, nb, outer, rpi):
    """Step 5 in several blocks of rows, weighted; n is no multiple of either panel,
    and the last outer panel is narrower than the others (or the only one)."""
    _, ctx, queue = fp64_env
    check_weighted_in_blocks(lsq.TiledQR(ctx, queue, 37, nb=nb, outer=outer, block_rows=100, shape=SMALL_TILE,
                                         chunk=32, rows_per_item=rpi))


def test_tiled_equals_blocked_and_times_its_products(fp64_env):
    _, ctx, queue = fp64_env
    x, y = lsq.make_problem(150, 30, seed=24)
    blocked = lsq.BlockedQR(ctx, queue, 30, nb=8).add(x, y)
    t, by_kernel, tiled = lsq.time_blocked(ctx, queue, x, y, 8, repeats=2,
                                           tiled={"outer": 16, "shape": SMALL_TILE, "chunk": 64})
    assert t.median > 0 and {"tiles: U'B", "tiles: T'Z", "tiles: B -= UW", "build_t"} <= set(by_kernel)
    assert lsq.gram_error(tiled, x, y) < 1e-13
    rb, zb = blocked.triangular()
    rt, zt = tiled.triangular()
    assert np.allclose(rt, rb, rtol=1e-10, atol=1e-10 * np.abs(rb).max()) and np.allclose(zt, zb, rtol=1e-10)


def test_tiled_refusals(fp64_env):
    _, ctx, queue = fp64_env
    with pytest.raises(ValueError, match="multiple of the inner"):
        lsq.TiledQR(ctx, queue, 20, nb=8, outer=12)
    with pytest.raises(ValueError, match="multiple of the tile's K"):
        lsq.TiledQR(ctx, queue, 20, nb=8, outer=16, shape=SMALL_TILE, chunk=30)
    with pytest.raises(ValueError, match="rows_per_item"):
        lsq.TiledQR(ctx, queue, 20, nb=8, outer=16, rows_per_item=0)
    with pytest.raises(gb.TileError, match="multiples"):
        lsq.TiledQR(ctx, queue, 20, nb=8, outer=16, shape={**SMALL_TILE, "WM": 3})


@pytest.mark.parametrize("which", ["1_sequential", "2_row_group", "3_blocked"])
def test_sing_marks_collinear_columns_and_keeps_the_fit(fp64_env, which):
    _, ctx, queue = fp64_env
    x, y = lsq.make_problem(120, 15, seed=6)
    x[:, 7] = 2.0 * x[:, 6] - x[:, 2]
    if which == "3_blocked":
        f = lsq.BlockedQR(ctx, queue, 15, nb=8).add(x, y).factor()
    else:
        f = lsq.Includ(ctx, queue, 15, which).run(x, y)
    assert lsq.sing(f) == [7]
    assert f.d[7] == 0.0 and lsq.factor_error(f, x) < 1e-12
    rss = f.rss_nested()
    assert rss[7] == rss[8]                       # the dependent column explains nothing
    for k in (7, 8, 15):
        assert rss[k] == pytest.approx(lsq.rss_lstsq(x[:, :k], y), rel=1e-9)


def test_sing_with_fewer_rows_than_columns(fp64_env):
    _, ctx, queue = fp64_env
    x, y = lsq.make_problem(12, 20, seed=7)
    f = lsq.BlockedQR(ctx, queue, 20, nb=8).add(x, y).factor()
    assert lsq.sing(f) == list(range(12, 20))
    assert lsq.factor_error(f, x) < 1e-12 and np.allclose(f.rss_nested()[12:], 0.0, atol=1e-9)


def test_blocked_refusals(fp64_env):
    _, ctx, queue = fp64_env
    qr = lsq.BlockedQR(ctx, queue, 6, block_rows=4)
    with pytest.raises(ValueError, match="NaN"):
        qr.add(np.full((2, 6), np.inf), np.zeros(2))
    with pytest.raises(ValueError, match="x must have 6 columns"):
        qr.add(np.zeros((2, 5)), np.zeros(2))
    with pytest.raises(ValueError, match="at most 4"):
        qr.upload(np.zeros((5, 7)))


def test_fp64_throughput_is_measured_or_refused(fp64_env):
    device, ctx, queue = fp64_env
    assert gb.fp64_gflops(ctx, queue, device) > 0
    no_fp64 = SimpleNamespace(name="Toy", double_fp_config=0, extensions="")
    with pytest.raises(ValueError, match="no fp64"):
        gb.fp64_gflops(ctx, queue, no_fp64)


def test_resource_rows_name_every_kernel_at_the_size_it_runs(fp64_env):
    device, ctx, queue = fp64_env
    qr = lsq.BlockedQR(ctx, queue, 40, nb=8, block_rows=300)
    shapes = qr.launch_shapes()
    assert shapes["house_step"] == ((-(-300 // qr.WGS) * qr.WGS,), (qr.WGS,))  # 300 rows, groups of WGS (<= 128)
    assert shapes["trail_update"][1] == (qr.TN, qr.RL)
    rows = qr.resource_rows()
    assert [label.split()[0] for label, _, _ in rows] == ["house_step", "house_dots", "trail_w", "trail_finish",
                                                         "trail_update", "column_ss"]
    for label, kern, size in rows:
        assert kern.function_name == label.split()[0]
        assert gb.launch.why_not(device, int(np.prod(size)), kern=kern) is None, label
    tiled = lsq.TiledQR(ctx, queue, 40, nb=8, outer=16, block_rows=300,
                        shape={"TM": 32, "TN": 32, "WM": 4, "WN": 8, "K": 8, "STAGES": 2})
    names = [kern.function_name for _, kern, _ in tiled.resource_rows()]
    assert names[6:] == ["register_tiles", "z_sum", "build_t", "r_update", "transpose"]
    words = lsq.resources_in_words(tiled.resource_rows(), "register_tiles", device)
    assert ("registers per work-item" in words) != ("registers not reported" in words)


def test_fp64_rate_can_come_from_chapter_0s_record(fp64_env, monkeypatch):
    """recorded=True quotes chapter 0's FP64 FMA chains as recorded for the device
    (one figure for every page); without a record it measures them."""
    device, ctx, queue = fp64_env
    from gpubook import limits
    monkeypatch.setattr(limits, "load_results", lambda chapter: {
        limits.device_slug(device): {"data": {"tensor": {"fp64_fma_gflops": 1234.5}}}})
    assert gb.fp64_gflops(ctx, queue, device, recorded=True) == 1234.5
    monkeypatch.setattr(limits, "load_results", lambda chapter: {})
    assert gb.fp64_gflops(ctx, queue, device, recorded=True) > 0
