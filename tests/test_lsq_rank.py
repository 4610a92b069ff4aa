"""Every least-squares path of chapter 8 (Includ's two steps, BlockedQR,
TiledQR, TSQR and CholeskyQR2, which falls back to TSQR) on the same
rank-deficient problem and on a wide one (more columns than rows): none may
return a residual below the true minimum. Includ, BlockedQR and TiledQR hold
Miller's form and are read after `sing`; TSQR and CholeskyQR2 run it in
least_squares."""
import numpy as np
import pyopencl as cl
import pytest

from gpubook.chapters import lsq
from gpubook.chapters.lsq import measure

SMALL_TILE = {"TM": 16, "TN": 16, "WM": 4, "WN": 4, "K": 4, "STAGES": 2}  # 16 work-items


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


def random_rank_deficient(seed, n=6):
    """m x n (m small, random) with a column exactly zero, an exact copy of
    another column, or both, at random places."""
    rng = np.random.default_rng(100 + seed)
    m = int(rng.integers(n + 1, 40))
    x, y = rng.standard_normal((m, n)), rng.standard_normal(m)
    zero, copy, source = rng.choice(n, 3, replace=False)
    if seed % 3 != 1:
        x[:, zero] = 0.0
    if seed % 3 != 0:
        x[:, copy] = x[:, source]
    return x, y


@pytest.fixture(scope="module")
def entry_points(fp64_env):
    """Every least-squares entry point of chapter 8 for 6 columns, as functions
    of (x, y) that give the residual sum of squares (built once: the kernels
    are built per number of columns)."""
    _, ctx, queue = fp64_env
    n = 6
    steps = {step: lsq.Includ(ctx, queue, n, step) for step in lsq.STEPS}
    blocked = lsq.BlockedQR(ctx, queue, n, nb=4, block_rows=16)
    tiled = lsq.TiledQR(ctx, queue, n, nb=4, outer=8, block_rows=16, shape=SMALL_TILE, chunk=8)
    tsqr = lsq.TSQR(ctx, queue, n + 1, block_rows=8)
    chol, _ = measure.portable(ctx, queue, n + 1, tsqr_options={"block_rows": 8})

    def miller(qr):
        def fit(x, y):
            qr.reset()
            f = qr.add(x, y).factor()
            lsq.sing(f)
            return f.sserr
        return fit

    def includ(inc):
        def fit(x, y):
            f = inc.run(x, y)
            lsq.sing(f)
            return f.sserr
        return fit
    return {**{step: includ(inc) for step, inc in steps.items()}, "BlockedQR": miller(blocked),
            "TiledQR": miller(tiled), "TSQR": lambda x, y: tsqr.least_squares(x, y)[2],
            "CholeskyQR2": lambda x, y: chol.least_squares(x, y)[2]}


def test_thirty_random_rank_deficient_problems_give_lstsq_residual(entry_points):
    """A zero column or an exact copy: every path's residual sum of squares is
    lstsq's to 1e-9 of it (plus 1e-12 y'y), never below the true minimum
    (TSQR gave 1.70158 against 1.70921 before a zero pivot's row was kept)."""
    wrong = []
    for seed in range(30):
        x, y = random_rank_deficient(seed)
        want = lsq.rss_lstsq(x, y)
        for name, fit in entry_points.items():
            got = fit(x, y)
            if not abs(got - want) <= 1e-9 * want + 1e-12 * float(y @ y):
                wrong.append((seed, name, got, want))
    assert not wrong, f"{len(wrong)} wrong: {wrong[:6]}"


def test_subset_search_on_rank_deficient_problems(fp64_env):
    """Every subset of 2 of the 5 candidates: a finite RSS is lstsq's; a subset
    whose columns are exactly collinear gets +inf, never a number."""
    from itertools import combinations

    _, ctx, queue = fp64_env
    search = lsq.SubsetSearch(ctx, queue, 5, 2, wg=8)
    subsets = list(combinations(range(5), 2))
    for seed in range(0, 30, 3):
        x, y = random_rank_deficient(seed)
        search.enqueue(search.upload(x.T @ x, x.T @ y), y @ y)
        rss = np.empty(search.count)
        cl.enqueue_copy(queue, rss, search.rss)
        for g, r in enumerate(rss):
            cols = [0] + [c + 1 for c in lsq.unrank(g, 2, 5)]
            singular = np.linalg.matrix_rank(x[:, cols]) < len(cols)
            assert np.isinf(r) == singular, (seed, cols)
            if not singular:
                assert r == pytest.approx(lsq.rss_lstsq(x[:, cols], y), rel=1e-9, abs=1e-12 * float(y @ y))
        assert len(subsets) == search.count
