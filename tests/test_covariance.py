"""Chapter 6's host side on the local OpenCL device: the steps, padding, budget
planning, streaming, tile pairs with both gathers, and the timeline."""
from types import SimpleNamespace

import numpy as np
import pytest

import gpubook as gb
from gpubook.chapters import covariance as cv
from gpubook.timeline import busy_ms, spans

TILE = cv.shape(32, 4, 4, 8, stages=2)


@pytest.fixture(scope="module")
def cl_env():
    device, ctx, queue, _, _ = gb.open_device()
    return device, ctx, queue


@pytest.fixture(scope="module")
def small():
    data = cv.make_data(130, 70, seed=3)
    return data, cv.reference(data.x)


def test_flop_counts_and_sizes():
    assert cv.flops(10, 4) == (10 * 4 * 5, 2 * 10 * 16)
    m, n = cv.sizes("small")
    assert n % cv.COL_PAD and m % cv.ROW_PAD  # the small scale exercises the padding


def test_reference_is_the_covariance(small):
    data, ref = small
    assert np.allclose(ref, np.cov(data.x.astype(np.float64), rowvar=False, bias=True))


@pytest.mark.parametrize("step", cv.STEPS)
def test_every_step_on_sizes_no_tile_divides(cl_env, small, step):
    _, ctx, queue = cl_env
    data, ref = small
    assert cv.check(cv.Covariance(ctx, queue, 130, 70).run(data.x, step, TILE), ref, 1e-4) < 1e-4


def test_one_pass_loses_digits_that_centring_keeps(cl_env, small):
    _, ctx, queue = cl_env
    data, ref = small
    cov = cv.Covariance(ctx, queue, 130, 70)
    assert cv.error(cov.one_pass(data.x, TILE), ref) > 100 * cv.error(cov.run(data.x, tile=TILE), ref)


def test_check_raises_beyond_tolerance():
    with pytest.raises(AssertionError, match="differs from float64"):
        cv.check(np.ones((2, 2)), np.ones((2, 2)) * 2, 1e-4)


def test_bad_shapes_are_refused(cl_env):
    _, ctx, queue = cl_env
    with pytest.raises(ValueError, match="at least 2 observations"):
        cv.Covariance(ctx, queue, 1, 5)
    with pytest.raises(ValueError, match="expected a float32 array"):
        cv.Covariance(ctx, queue, 4, 5).upload(np.zeros((4, 5)))
    with pytest.raises(ValueError, match="unknown step"):
        cv.Covariance(ctx, queue, 4, 5).products("blocked")


def test_tile_shapes_respect_the_device():
    big = SimpleNamespace(max_work_group_size=1024, local_mem_size=48 * 1024)
    tiny = SimpleNamespace(max_work_group_size=256, local_mem_size=8 * 1024)
    shapes, skipped = cv.tile_shapes(big)
    assert cv.shape(128, 8, 8, 16) in shapes and len(shapes) + len(skipped) == len(cv.SWEEP)
    assert any("local memory" in why for _, why in skipped)        # 128 x 128, K = 32, two buffers
    small, reasons = cv.tile_shapes(tiny)
    for s in small:
        assert (s["TM"] // s["WM"]) * (s["TN"] // s["WN"]) <= 256
        assert s["STAGES"] * s["K"] * (s["TM"] + s["TN"]) * 4 <= 8 * 1024
    assert small and len(small) < len(shapes)
    assert all(("work-items" in why or "local memory" in why) for _, why in reasons)


def test_row_blocks_fit_the_budget_and_cover_the_data():
    budget = 50 * 2**20
    rows = cv.plan_rows(budget, 1000)
    assert rows % cv.ROW_PAD == 0 and cv.stream_bytes(1000, rows) <= budget
    assert cv.stream_bytes(1000, rows + cv.ROW_PAD) > budget
    assert cv.plan_rows(budget, 1000, m=100) == 128
    parts = cv.blocks(1000, 384)
    assert parts == [(0, 384), (384, 384), (768, 232)]


def test_a_budget_below_one_block_names_the_minimum():
    need = cv.stream_bytes(4096, cv.ROW_PAD)
    with pytest.raises(ValueError, match=f"at least {need:,} bytes"):
        cv.plan_rows(need - 1, 4096)
    assert cv.plan_rows(need, 4096) == cv.ROW_PAD
    with pytest.raises(ValueError, match="cannot hold one pair of panels"):
        cv.plan_pairs(10_000, 300)


def test_pair_plan_takes_the_widest_panel_that_fits():
    budget = 48 * 2**20
    width, rows = cv.plan_pairs(budget, 4096)
    assert width % cv.COL_PAD == 0 and rows >= cv.MIN_PAIR_ROWS
    assert cv.pair_bytes(width, rows) <= budget
    wider = width + cv.COL_PAD
    assert cv.pair_bytes(wider, cv.MIN_PAIR_ROWS) > budget


def test_pairs_cover_the_lower_triangle_once_diagonal_first(cl_env):
    device, ctx, _ = cl_env
    tp = cv.TilePairs(ctx, device, 300, 10**8, TILE, width=128, rows=64)
    assert tp.panels() == [(0, 128), (128, 128), (256, 44)]
    pairs = tp.pairs()
    assert sorted(pairs) == sorted((a, b) for a in range(3) for b in range(a + 1))
    for p1 in range(3):
        assert [p for p in pairs if p[0] == p1][0] == (p1, p1)


def test_stream_matches_in_core_within_budget(cl_env, small):
    device, ctx, queue = cl_env
    data, ref = small
    x = gb.pinned_empty(ctx, queue, (3 * 130, 70))
    for r in range(3):
        x[r * 130:(r + 1) * 130] = data.x
    budget = cv.stream_bytes(70, 128)
    st = cv.Stream(ctx, device, 70, budget, TILE)
    assert st.bytes <= budget and len(cv.blocks(390, st.rows)) == 4
    cv.check(st.run(x), ref, 1e-4)
    rows = spans(st.lanes)
    assert {r[0] for r in rows} == {"copy queue", "compute queue"}
    assert min(r[2] for r in rows) == 0 and all(e >= s for *_, s, e in rows)
    assert busy_ms(rows, "copy queue") > 0
    x.base.release(queue)


@pytest.mark.parametrize("gather", ["flatten", "rect"])
def test_tile_pairs_gather_and_scatter(cl_env, gather):
    device, ctx, _ = cl_env
    data = cv.make_data(200, 150, seed=4)
    tp = cv.TilePairs(ctx, device, 150, 10**8, TILE, width=64, rows=64)
    cv.check(tp.run(data.x, gather), cv.reference(data.x), 1e-4)
    with pytest.raises(ValueError, match="gather must be"):
        tp.run(data.x, "scatter")


def test_limits_fall_back_to_a_measurement(cl_env):
    device, ctx, queue = cl_env
    assert gb.fp32_gflops(ctx, queue, device) > 0 and gb.h2d_gbs(ctx, queue, device) > 0


def test_change_table_holds_every_one_change_pair_of_the_sweep():
    fields = [lambda s: s[0], lambda s: s[1:3], lambda s: s[3], lambda s: s[4], lambda s: s[5]]
    want = {frozenset((a, b)) for i, a in enumerate(cv.SWEEP) for b in cv.SWEEP[i + 1:]
            if sum(f(a) != f(b) for f in fields) == 1}
    assert {frozenset((b, a)) for _, b, a in cv.CHANGES} == want and len(cv.CHANGES) == len(want)
    by_pair = {(b, a): what for what, b, a in cv.CHANGES}
    assert by_pair[(64, 4, 4, 16, 1, 1), (64, 8, 8, 16, 1, 1)] == "block per work-item 4 x 4 → 8 x 8"
    assert by_pair[(128, 8, 8, 16, 1, 1), (128, 8, 8, 16, 1, 0)] == "loads a chunk ahead → when needed"


def test_diagonal_skip_share_counts_the_skipped_blocks():
    # 8 x 8 blocks are 2 x 2 blocks of 4 x 4: one of four skipped on each of 32 diagonal tiles of 528
    assert cv.diag_skip_share(4096, cv.shape(128, 8, 8, 16)) == pytest.approx(32 * 0.25 / 528)
    assert cv.diag_skip_share(4096, cv.shape(64, 4, 4, 16)) == 0.0      # one block: nothing above
    assert cv.diag_skip_share(256, cv.shape(128, 8, 16, 16)) == 0.0     # rectangular blocks skip nothing


def test_kernel_before_the_diagonal_skip_gives_the_same_covariance(cl_env, small):
    _, ctx, queue = cl_env
    data, ref = small
    cov = cv.Covariance(ctx, queue, 130, 70)
    tile = cv.shape(32, 8, 8, 8)
    before = cov.run(data.x, tile=tile, extra={"DIAG_SKIP": 0})
    assert cv.check(before, ref, 1e-4) < 1e-4
    assert np.allclose(before, cov.run(data.x, tile=tile), rtol=1e-5, atol=1e-6 * np.abs(ref).max())
    k_old, size = cov.step_kernel("register_tiles", tile, {"DIAG_SKIP": 0})
    assert k_old is not cov.step_kernel("register_tiles", tile)[0] and size == (16, 1)


def test_local_bound_and_ptx_counts_say_what_they_can(cl_env):
    device, ctx, queue = cl_env
    assert cv.local_bound_gflops(8000.0) == 2000.0     # 8 bytes per multiply-add of 2 flops
    rate, where = cv.local_gbs(ctx, queue, device, "small")
    assert rate > 0 and "machine chapter" in where
    cov = cv.Covariance(ctx, queue, 130, 70)
    counts = cv.fmas_per_local_load(cov.step_kernel("local_tiles")[0])
    assert counts is None or counts[1] > 0               # None where the binary is not PTX (PoCL)


def test_step_kernels_name_their_local_sizes(cl_env):
    device, ctx, queue = cl_env
    cov = cv.Covariance(ctx, queue, 130, 70)
    for step in cv.STEPS:
        k, size = cov.step_kernel(step, TILE if step == "register_tiles" else None)
        assert gb.kernel_resources(k, device, size)["work_group"] == int(np.prod(size))
    k, size = cov.step_kernel("local_tiles", 4)
    assert size == (4, 4)
    with pytest.raises(ValueError, match="unknown step"):
        cov.step_kernel("tensor_cores")



# --- a device that stops loops early (gpubook.loopcap; Mesa's llvmpipe: 65,535) ----------

@pytest.fixture
def capped(cl_env, monkeypatch):
    """cap(n): this device stops every work-item's loops after n iterations, for one test."""
    from gpubook import loopcap

    return lambda n: monkeypatch.setitem(loopcap._caps, cl_env[0].int_ptr, n)


def rows_cap(step, rows, tile=TILE, t=None):
    """A cap under which `step` runs `rows` rows per launch (its bound of a row's loops)."""
    from gpubook import xtx

    per_row, fixed = {"naive": (1, 8), "symmetric": (1, 8), "local_tiles": ((t + 1) / t if t else 0, 8),
                      "register_tiles": xtx.tile_loops(tile)}[step]
    return int(np.ceil(fixed + per_row * rows))


@pytest.mark.parametrize("step", cv.STEPS)
def test_a_loop_cap_splits_every_step_over_launches(cl_env, capped, step):
    """On rusticl (llvmpipe) chapter 6's kernels looped past the cap over the rows and 11
    cells failed (2026-11-28). With a cap, each step runs blocks of rows in launches under
    it, their sums added in S, and C is float64's; without one, a single launch as before."""
    _, ctx, queue = cl_env
    data = cv.make_data(300, 70, seed=5)                     # 320 padded rows: 3 launches of 128
    ref = cv.reference(data.x)
    cov = cv.Covariance(ctx, queue, 300, 70)
    one = cov.products(step, TILE)
    assert not isinstance(one, list)                          # PoCL: no cap, one launch
    t = cov.step_kernel("local_tiles")[1][0] if step == "local_tiles" else None
    capped(rows_cap(step, 128, t=t))
    assert cv.check(cov.run(data.x, step, TILE), ref, 1e-4) < 1e-4
    launches = cov.products(step, TILE)
    kernels = len(launches) - (2 if step in ("naive", "symmetric") else 0)   # + 2 additions
    assert kernels == 3
    events = cov.covariance_events(step, TILE)
    assert all(isinstance(e, type(one)) for e in events) and len(events) == len(launches) + 1
    assert gb.time_events(lambda: cov.covariance_events(step, TILE), repeats=1).median > 0


def test_launches_stay_under_the_cap_in_whole_steps(cl_env, capped):
    from gpubook import loopcap

    device = cl_env[0]
    assert loopcap.launches(device, 300, 1.5, fixed=10, step=64) == [(0, 300)]   # no cap
    capped(10 + 200)                         # (210 - 10) / 1.5 = 133 items, 128 in steps of 64
    assert loopcap.launches(device, 300, 1.5, fixed=10, step=64) == [(0, 128), (128, 128), (256, 44)]
    assert loopcap.launches(device, 100, 1.5, fixed=10, step=64) == [(0, 100)]
    with pytest.raises(ValueError, match="tiles: a launch of 256 items.*over this device's cap of 210"):
        loopcap.launches(device, 300, 1.5, fixed=10, step=256, what="tiles")
    assert loopcap.flat(1, [2, 3], 4) == [1, 2, 3, 4] and loopcap.one_or_all([5]) == 5


def test_stream_and_tile_pairs_split_their_blocks_under_a_cap(cl_env, capped, small):
    device, ctx, queue = cl_env
    data, ref = small
    capped(rows_cap("register_tiles", 64))
    st = cv.Stream(ctx, device, 70, cv.stream_bytes(70, 256), TILE)
    cv.check(st.run(np.ascontiguousarray(np.vstack([data.x] * 3))), ref, 1e-4)   # blocks of 256 rows
    # 390 rows: blocks of 256 and 134 (192 padded), in launches of 64
    assert sum(name == "tiles" for name, _ in st.lanes["compute queue"]) == 4 + 3
    assert st.block_seconds(repeats=1) > 0
    pairs = cv.TilePairs(ctx, device, 150, 10**8, TILE, width=64, rows=192)
    data2 = cv.make_data(200, 150, seed=4)
    cv.check(pairs.run(data2.x), cv.reference(data2.x), 1e-4)
    assert len(spans(pairs.lanes)) > 0


def test_a_cap_below_one_block_of_rows_is_refused_naming_it(cl_env, capped):
    _, ctx, queue = cl_env
    cov = cv.Covariance(ctx, queue, 130, 70)
    capped(50)                                # below 64 rows of any step
    for step in cv.STEPS:
        with pytest.raises(ValueError, match="over this device's cap of 50 iterations"):
            cov.products(step, TILE)
