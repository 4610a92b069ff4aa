"""Chapter 8's communication-avoiding panel (gpubook.chapters.tsqr) in float64
against NumPy: odd sizes, blocks in local and in global memory, repeated
columns, and least squares with the response carried along."""
import numpy as np
import pyopencl as cl
import pytest

from gpubook.chapters import lsq
from gpubook.chapters.lsq import tsqr

def assert_r_matches(r, a):
    """R'R = A'A to 1e-12 of its largest entry, |R| = |numpy's R| (rows may differ in sign)."""
    assert np.all(np.isfinite(r))
    assert np.allclose(r, np.triu(r))
    assert tsqr.gram_error(r, a) < 1e-12
    ref = np.linalg.qr(a, mode="r")
    k = min(a.shape)
    assert np.max(np.abs(np.abs(r[:k]) - np.abs(ref[:k]))) <= 1e-12 * np.max(np.abs(ref))
    assert not np.any(r[k:])  # rows past the rank of a short matrix are zero


@pytest.mark.parametrize("m, cols, block_rows, in_local", [
    (1001, 13, 64, None),    # 16 leaves and a partial one: a tree of 5 levels, odd counts
    (777, 7, None, False),   # blocks factored in place in global memory
    (90, 33, 8, None),       # more than 32 columns; leaves of fewer rows than columns
    (5, 13, 64, None),       # fewer rows than columns
    (1, 7, None, False),
])
def test_tsqr_matches_numpy(fp64_env, m, cols, block_rows, in_local):
    _, ctx, queue = fp64_env
    a = np.random.default_rng(m + cols).standard_normal((m, cols))
    qr = tsqr.TSQR(ctx, queue, cols, block_rows=block_rows, in_local=in_local)
    if in_local is False:
        assert not any(qr.in_local.values())
    assert qr.leaves(m) == -(-m // qr.BR)
    assert_r_matches(qr.r_factor(a), a)


def test_repeated_columns_give_zero_diagonal_not_nan(fp64_env):
    _, ctx, queue = fp64_env
    rng = np.random.default_rng(3)
    a = rng.standard_normal((500, 13))
    a[:, 4] = a[:, 1]                    # a repeat
    a[:, 7] = 2 * a[:, 0] - a[:, 2]      # a combination
    a[:, 9] = 0.0                        # a zero column
    r = tsqr.TSQR(ctx, queue, 13, block_rows=64).r_factor(a)
    assert np.all(np.isfinite(r))
    scale = np.max(np.abs(r))
    dependent = [4, 7, 9]
    assert np.all(np.abs(np.diag(r)[dependent]) < 1e-12 * scale)
    assert np.all(np.abs(np.delete(np.diag(r), dependent)) > 1e-3 * scale)
    assert tsqr.gram_error(r, a) < 1e-12


def test_least_squares_with_the_response_as_a_column(fp64_env):
    _, ctx, queue = fp64_env
    x, y = lsq.make_problem(3001, 12)
    qr = tsqr.TSQR(ctx, queue, 13, block_rows=64)
    rt, z, rss = qr.least_squares(x, y)
    assert rss == pytest.approx(lsq.rss_lstsq(x, y), rel=1e-10)
    coef = np.linalg.solve(rt, z)
    assert np.allclose(coef, np.linalg.lstsq(x, y, rcond=None)[0], rtol=1e-10, atol=1e-12)
    f = qr.factor(x, y)                  # Miller's form, as chapter 8's other steps hold it
    assert lsq.factor_error(f, x) < 1e-12
    assert f.rss_nested()[-1] == pytest.approx(rss, rel=1e-12)


def test_bad_input_is_refused_clearly(fp64_env):
    _, ctx, queue = fp64_env
    qr = tsqr.TSQR(ctx, queue, 13, block_rows=64)
    with pytest.raises(ValueError, match="a must have 13 columns"):
        qr.r_factor(np.ones((10, 5)))
    with pytest.raises(ValueError, match="NaN or infinite"):
        qr.r_factor(np.full((10, 13), np.nan))
    with pytest.raises(ValueError, match="a must have at least 1 row"):
        qr.r_factor(np.ones((0, 13)))
    with pytest.raises(ValueError, match="y must hold 10 values"):
        qr.least_squares(np.ones((10, 12)), np.ones(9))


def test_tall_skinny_million_by_128_on_a_gpu(fp64_env):
    device, ctx, queue = fp64_env
    if not device.type & cl.device_type.GPU:
        pytest.skip("the 1,000,000 x 128 case runs on a GPU only (CPU: minutes)")
    rng = np.random.default_rng(7)
    a = rng.standard_normal((1_000_000, 128))
    r = tsqr.TSQR(ctx, queue, 128).r_factor(a)
    assert tsqr.gram_error(r, a) < 1e-12
    ref = np.linalg.qr(a, mode="r")
    assert np.max(np.abs(np.abs(r) - np.abs(ref))) <= 1e-10 * np.max(np.abs(ref))


def test_on_a_cpu_a_work_group_has_at_most_eight_rows(fp64_env):
    """Debian's PoCL corrupts memory running tsqr_tree with 16 or more rows of work-items."""
    device, ctx, queue = fp64_env
    if not device.type & cl.device_type.CPU:
        pytest.skip("a GPU keeps the work-groups asked for")
    for cols in (1, 3, 7, 40):
        qr = tsqr.TSQR(ctx, queue, cols)
        for name, wg in qr.wg.items():
            assert wg // tsqr._columns_per_row(cols, wg) <= 8, (cols, name, wg)
