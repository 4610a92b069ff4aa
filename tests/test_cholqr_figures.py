"""Chapter 8's step 6 on the page (gpubook.chapters.lsq.measure and figures): the
stages of a traced CholeskyQR2 against the host's loop, the bands of Q1 against
the triangle they must cover, the tiles chosen for a small device, the timing
and checking helpers, the fallback on ill-conditioned data, and the figure."""
from types import SimpleNamespace

import matplotlib.pyplot as plt
import numpy as np
import pytest

import gpubook as gb
from gpubook.chapters import lsq
from gpubook.chapters.lsq import cholqr, tsqr
from gpubook.chapters.lsq import measure as lm

SMALL = {"TM": 16, "TN": 16, "WM": 2, "WN": 2, "K": 4, "STAGES": 2}
WIDE = {"TM": 32, "TN": 16, "WM": 4, "WN": 2, "K": 4, "STAGES": 2}
SHAPES = {"gram_shape": SMALL, "update_shape": SMALL, "product_shape": WIDE, "inverse_shape": WIDE}


@pytest.fixture(scope="module")
def traced(fp64_env):
    """A CholeskyQR2 of 40 columns (blocks of 8, bands of 16) and the trace of one factorisation."""
    _, ctx, queue = fp64_env
    cq = cholqr.CholeskyQR2(ctx, queue, 40, block=8, band=16, **SHAPES)
    a = np.random.default_rng(3).standard_normal((300, 40))
    trace = []
    r = cq.factor_buffer(cq.upload(a), len(a), trace)
    return cq, a, r, trace


def test_phases_follow_the_host_loop(traced):
    cq, _, _, trace = traced
    stages = dict(lm.phases([name for name, _ in trace]))
    assert list(stages) == lm.STAGE_LABELS
    blocks = -(-cq.C // cq.chol.CB)
    bands = -(-cq.C // cq.band)
    # per block: the diagonal block and the column solve; below every block but the last,
    # the row solve and the two trailing products
    assert len(stages["G1 = R1'R1, R1^-1"]) == 2 * blocks + 3 * (blocks - 1)
    assert len(stages["G2 = R2'R2"]) == blocks + 2 * (blocks - 1)       # no inverse the second time
    assert len(stages["Q1 = A R1^-1"]) == bands
    assert len(stages["R = R2 R1"]) == bands * (bands + 1) // 2          # the upper triangle of band blocks
    assert sorted(i for idx in stages.values() for i in idx) == list(range(len(trace)))


def test_phases_refuse_what_is_not_one_factorisation():
    with pytest.raises(ValueError, match="not a launch"):
        lm.phases(["tiles: Gram", "tsqr_leaf"])
    with pytest.raises(ValueError, match="not one whole"):
        lm.phases(["tiles: Gram", "chol_diag"])


def test_q1_bands_cover_the_upper_triangle_and_skip_below():
    mask, bands = lsq.figures.q1_parts(70, 32)
    assert bands == [(0, 32), (32, 64), (64, 70)]
    upper = np.triu(np.ones((70, 70), bool))
    assert mask[upper].all()                                   # every entry that can be non-zero is summed
    for j0, j1 in bands:                                       # band b sums rows 0..j1 of its columns only
        assert mask[:j1, j0:j1].all() and not mask[j1:, j0:j1].any()
    assert mask.sum() == sum(j1 * (j1 - j0) for j0, j1 in bands)
    with pytest.raises(ValueError):
        lsq.figures.q1_parts(0, 8)


def test_q1_bands_match_the_launches(traced):
    cq, _, _, trace = traced
    _, bands = lsq.figures.q1_parts(cq.C, cq.band)
    assert sum(1 for name, _ in trace if name == "tiles: Q1 = A R1^-1") == len(bands)


def test_product_flops_count_the_useful_multiply_adds():
    m, c = 7, 5
    gram = sum(2 * m for i in range(c) for j in range(i + 1))            # one triangle of dot products
    q1 = sum(2 * m * (j + 1) for j in range(c))                          # column j sums rows 0..j of R1^-1
    r2r1 = sum(2 for i in range(c) for j in range(i, c) for k in range(i, j + 1))
    assert lm.product_flops(m, c) == 2 * gram + q1 + r2r1


def test_portable_shapes_fit_the_device():
    roomy = SimpleNamespace(max_work_group_size=1024, local_mem_size=96 * 1024)
    assert lm.portable_shapes(roomy) == {}
    small = SimpleNamespace(max_work_group_size=64, local_mem_size=64 * 1024)
    chosen = lm.portable_shapes(small)
    assert set(chosen) == {"update_shape", "product_shape", "inverse_shape"}   # the Gram tile has 64 work-items
    for shape in chosen.values():
        assert gb.tiles.work_items(shape) <= 64
    assert chosen["update_shape"]["TM"] == chosen["update_shape"]["TN"]
    with pytest.raises(gb.TileError):
        lm.portable_shapes(SimpleNamespace(max_work_group_size=2, local_mem_size=64 * 1024))


def test_timing_and_the_check_of_the_fit(fp64_env):
    _, ctx, queue = fp64_env
    x, y = lsq.make_problem(400, 12, seed=4)
    cq = cholqr.CholeskyQR2(ctx, queue, 13, block=8, band=16, **SHAPES)
    found, r = lm.time_factor(cq, np.column_stack([x, y]), repeats=1)
    assert found["method"] == "CholeskyQR2" and found["launches"] == sum(found["stage_launches"].values())
    assert np.isclose(sum(found["stage_s"].values()), sum(found["by_kernel"].values()))
    # the device's clock spans every launch; the wall adds the host's enqueueing and read-back
    assert sum(found["by_kernel"].values()) <= found["median_s"] * (1 + 1e-9) <= found["wall_s"]
    error, factor, gap = lm.fit_check(r, x, y)
    a = np.column_stack([x, y])
    assert error < 1e-13 and np.isclose(error, tsqr.gram_error(r, a), rtol=0, atol=1e-16)
    assert lm.gram_error(r, None, a.T @ a) == error
    assert gap < 1e-10 and np.isclose(factor.rss_nested()[12], lsq.rss_lstsq(x, y))
    found_t, r_t = lm.time_tsqr(ctx, queue, a, repeats=1)
    assert found_t["launches"] >= 1 and lm.gram_error(r_t, a) < 1e-13
    with pytest.raises(ValueError):
        lm.time_factor(cq, np.ones((5, 4)))


def test_ill_conditioned_data_fall_back_to_tsqr(fp64_env):
    _, ctx, queue = fp64_env
    a = lm.ill_conditioned(200, 12, top=1e9)
    assert np.linalg.cond(a) > 1e8
    cq = cholqr.CholeskyQR2(ctx, queue, 12, block=8, band=16, **SHAPES)
    found, r = lm.time_factor(cq, a, repeats=1)
    assert found["method"] == "TSQR" and found["cond_estimate"] > cholqr.COND_LIMIT and found["stage_launches"] == {}
    assert tsqr.gram_error(r, a) < 1e-12
    with pytest.raises(ValueError):
        lm.ill_conditioned(3, 5)


def test_the_figure_draws(traced):
    cq, _, _, trace = traced
    fig = lsq.figures.draw_launches(trace, cq.C, cq.band)
    assert len(fig.axes) == 2 and fig.patch.get_alpha() == 1.0
    assert fig.patch.get_facecolor()[:3] == (1.0, 1.0, 1.0)
    plt.close("all")


def test_the_hosts_share_is_measured_and_claimed(fp64_env):
    """lm.enqueue_seconds times the host's enqueueing alone and the device's idle time
    between launches; the claims say whether setting every argument costs, and
    whether the device then waits for the host."""
    from gpubook.chapters.lsq import claims as lc
    _, ctx, queue = fp64_env
    x, y = lsq.make_problem(300, 12, seed=4)
    for bind in (False, True):
        cq = cholqr.CholeskyQR2(ctx, queue, 13, block=8, band=16, bind=bind, **SHAPES)
        host, idle, launches = lm.enqueue_seconds(cq, np.column_stack([x, y]), repeats=1)
        assert host > 0 and idle >= 0
        assert launches == lm.time_factor(cq, np.column_stack([x, y]), 1)[0]["launches"]
        assert (cq.products.bound is None) == (not bind)
    c = lc.host_enqueue(0.081, 0.034, 700, 0.031, 0.001)
    assert c.held and gb.claims.recorded()["lsq_host_arguments"]["held"]
    c = lc.host_enqueue(0.030, 0.029, 700, 0.0011, 0.001)
    assert c.held is False and "keeps ahead of the device either way" in c.sentence
