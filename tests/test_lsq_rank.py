"""Every least-squares path of chapter 8 (Includ's two steps, BlockedQR,
TiledQR, TSQR and CholeskyQR2, which falls back to TSQR) on the same
rank-deficient problem and on a wide one (more columns than rows): none may
return a residual below the true minimum. Includ, BlockedQR and TiledQR hold
Miller's form and are read after `sing`; TSQR and CholeskyQR2 run it in
least_squares."""
import numpy as np
import pytest

from gpubook.chapters import lsq
from gpubook.chapters.lsq import measure

SMALL_TILE = {"TM": 16, "TN": 16, "WM": 2, "WN": 2, "K": 4, "STAGES": 2}


def rank_deficient():
    """200 x 6 of rank 4: column 4 = col 0 + col 1, column 5 = 2 col 2 - col 3."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((200, 6))
    x[:, 4] = x[:, 0] + x[:, 1]
    x[:, 5] = 2 * x[:, 2] - x[:, 3]
    return x, rng.standard_normal(200), [4, 5]


def wide():
    """5 rows, 8 columns: columns 5..7 depend on the first five, the fit is exact."""
    rng = np.random.default_rng(2)
    return rng.standard_normal((5, 8)), rng.standard_normal(5), [5, 6, 7]


def by_miller(qr_factor):
    f = qr_factor
    dependent = lsq.sing(f)
    return f.sserr, dependent


def fit(path, ctx, queue, x, y):
    """(residual sum of squares, dependent columns) by one path."""
    n = x.shape[1]
    if path in lsq.STEPS:
        return by_miller(lsq.Includ(ctx, queue, n, path).run(x, y))
    if path == "BlockedQR":
        return by_miller(lsq.BlockedQR(ctx, queue, n, nb=4, block_rows=64).add(x, y).factor())
    if path == "TiledQR":
        return by_miller(lsq.TiledQR(ctx, queue, n, nb=4, outer=16, block_rows=64, shape=SMALL_TILE)
                         .add(x, y).factor())
    if path == "TSQR":
        qr = lsq.TSQR(ctx, queue, n + 1, block_rows=64)
    else:
        qr, _ = measure.portable(ctx, queue, n + 1, tsqr_options={"block_rows": 64})
    rt, z, rss = qr.least_squares(x, y)
    if path == "CholeskyQR2":
        assert qr.method == "TSQR" and qr.reason      # the Gram matrix is singular: it falls back
    assert np.all(np.diag(rt)[qr.dependent] == 0.0) and np.all(z[qr.dependent] == 0.0)
    return rss, qr.dependent


PATHS = [*lsq.STEPS, "BlockedQR", "TiledQR", "TSQR", "CholeskyQR2"]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("problem", [rank_deficient, wide])
def test_rank_deficient_and_wide_problems_give_lstsq_residual(fp64_env, path, problem):
    _, ctx, queue = fp64_env
    x, y, dependent = problem()
    rss, found = fit(path, ctx, queue, x, y)
    want = lsq.rss_lstsq(x, y)
    assert found == dependent
    assert rss == pytest.approx(want, rel=1e-10, abs=1e-12 * float(y @ y))


def test_full_rank_fit_is_left_as_it_was(fp64_env):
    _, ctx, queue = fp64_env
    x, y = lsq.make_problem(300, 6)
    qr = lsq.TSQR(ctx, queue, 7, block_rows=64)
    rt, z, rss = qr.least_squares(x, y)
    assert qr.dependent == []
    assert np.allclose(np.linalg.solve(rt, z), np.linalg.lstsq(x, y, rcond=None)[0], rtol=1e-10)
    assert rss == pytest.approx(lsq.rss_lstsq(x, y), rel=1e-10)
