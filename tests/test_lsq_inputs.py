"""Chapter 8's entry points on bad input and at awkward sizes: a dtype that is
not real, another memory order, wrong shapes, NaN and Inf, 0 rows, buffers
smaller than the rows asked for, and sizes that divide no tile. Each gives
NumPy's float64 answer or a ValueError/TypeError naming the argument; none a
raw OpenCL error or a wrong number."""
import numpy as np
import pyopencl as cl
import pytest

from gpubook.chapters import lsq
from gpubook.chapters.lsq import cholqr, inputs, measure

SMALL_TILE = {"TM": 16, "TN": 16, "WM": 4, "WN": 4, "K": 4, "STAGES": 2}  # 16 work-items
N = 5                                                   # columns of x (7 would be prime too)


@pytest.fixture(scope="module")
def paths(fp64_env):
    _, ctx, queue = fp64_env
    return {"ctx": ctx, "queue": queue,
            "includ": lsq.Includ(ctx, queue, N, "1_sequential"),
            "row_group": lsq.Includ(ctx, queue, N, "2_row_group"),
            "blocked": lsq.BlockedQR(ctx, queue, N, nb=4, block_rows=16),
            "tiled": lsq.TiledQR(ctx, queue, N, nb=4, outer=8, block_rows=16, shape=SMALL_TILE, chunk=8),
            "tsqr": lsq.TSQR(ctx, queue, N + 1, block_rows=8),
            "chol": measure.portable(ctx, queue, N + 1, tsqr_options={"block_rows": 8})[0]}


def fits(paths):
    """Every path as (name, a function of x, y that gives the residual sum of squares)."""
    def miller(qr):
        def fit(x, y):
            qr.reset()
            return qr.add(x, y).factor().sserr
        return fit
    return [("includ", lambda x, y: paths["includ"].run(x, y).sserr),
            ("row_group", lambda x, y: paths["row_group"].run(x, y).sserr),
            ("blocked", miller(paths["blocked"])), ("tiled", miller(paths["tiled"])),
            ("tsqr", lambda x, y: paths["tsqr"].least_squares(x, y)[2]),
            ("chol", lambda x, y: paths["chol"].least_squares(x, y)[2])]


@pytest.mark.parametrize("m", [7, 13, 37, 61])
def test_sizes_that_divide_no_tile_give_lstsq(paths, m):
    """m prime (leaves of 8 rows, blocks of 16, tiles of 16 and chunks of 8 all cut
    short), 5 columns against panels of 4 and tiles of 16; Fortran order and
    float32 are converted, not misread."""
    rng = np.random.default_rng(m)
    x, y = np.asfortranarray(rng.standard_normal((m, N))), rng.standard_normal(m).astype(np.float32)
    want = lsq.rss_lstsq(x, y.astype(np.float64))
    for name, fit in fits(paths):
        assert fit(x, y) == pytest.approx(want, rel=1e-9), name


def test_integer_data_are_converted(paths):
    x = np.arange(40, dtype=np.int32).reshape(8, N) % 7
    y = np.arange(8, dtype=np.int64)
    want = lsq.rss_lstsq(x, y)
    for name, fit in fits(paths):
        assert fit(x, y) == pytest.approx(want, rel=1e-9, abs=1e-9), name


BAD = [
    (lambda x, y: (x.astype(complex), y), TypeError, "x must hold real numbers"),
    (lambda x, y: (x.astype(str), y), TypeError, "x must hold real numbers"),
    (lambda x, y: (x, y.astype(object)), TypeError, "y must hold real numbers"),
    (lambda x, y: (x[:, :-1], y), ValueError, "x must have 5 columns"),
    (lambda x, y: (x[0], y), ValueError, "x must be 2-dimensional"),
    (lambda x, y: (x, y[:-1]), ValueError, "y must hold 10 values"),
    (lambda x, y: (x, y[:, None]), ValueError, "y must be 1-dimensional"),
    (lambda x, y: (np.where(x > 1, np.nan, x), y), ValueError, "x contains NaN or infinite"),
    (lambda x, y: (x, np.where(y > 1, np.inf, y)), ValueError, "y contains NaN or infinite"),
]


@pytest.mark.parametrize("bad", range(len(BAD)))
def test_bad_data_are_refused_by_every_path(paths, bad):
    make, error, message = BAD[bad]
    rng = np.random.default_rng(bad)
    x, y = make(rng.standard_normal((10, N)) * 2, rng.standard_normal(10) * 2)
    for name, fit in fits(paths):
        with pytest.raises(error, match=message):
            fit(x, y)


def test_zero_rows(paths):
    """Includ and the Householder steps take no rows (nothing is added); TSQR and
    CholeskyQR2, which factor one matrix, say that it needs a row."""
    x, y = np.zeros((0, N)), np.zeros(0)
    for name in ("includ", "row_group"):
        f = paths[name].run(x, y)
        assert not np.any(f.d) and f.sserr == 0.0, name
        assert paths[name].enqueue(paths[name].upload(x, y), 0, 0) is None
    paths["blocked"].reset()
    assert paths["blocked"].add(x, y).factor().sserr == 0.0
    for name in ("tsqr", "chol"):
        with pytest.raises(ValueError, match="x must have at least 1 row"):
            paths[name].least_squares(x, y)


def test_counts_and_buffers_are_checked(paths):
    ctx, queue = paths["ctx"], paths["queue"]
    with pytest.raises(ValueError, match="n must be at least 1"):
        lsq.Includ(ctx, queue, 0, "1_sequential")
    with pytest.raises(TypeError, match="cols must be an integer"):
        lsq.TSQR(ctx, queue, 3.5)
    with pytest.raises(ValueError, match="block_rows must be at least 1"):
        lsq.BlockedQR(ctx, queue, 4, block_rows=0)
    inc = paths["includ"]
    data = inc.upload(np.ones((4, N)), np.ones(4))
    with pytest.raises(ValueError, match="data .* holds 160 bytes; 200 are needed"):
        inc.enqueue(data, 1, 4)
    with pytest.raises(ValueError, match="rows must be at least 0"):
        inc.enqueue(data, 0, -1)
    with pytest.raises(ValueError, match="f must be a factorisation of 5 columns"):
        inc.load(lsq.Factor.empty(3))
    small = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 8 * 3 * (N + 1))
    for name in ("tsqr", "chol"):
        with pytest.raises(ValueError, match="buf holds 144 bytes"):
            paths[name].enqueue(small, 4)
    with pytest.raises(ValueError, match="b: a block holds at most 16 rows"):
        paths["blocked"].enqueue(17)
    with pytest.raises(ValueError, match="rt must be upper triangular"):
        paths["blocked"].load_triangular(np.ones((N, N)), np.ones(N), 0.0)
    chol = paths["chol"].chol
    with pytest.raises(ValueError, match="g holds"):
        chol.enqueue(small)
    with pytest.raises(ValueError, match="slot must be 0 or 1"):
        chol.enqueue(paths["chol"].G1, slot=2)
    for read in (chol.ok, chol.status):          # reading a slot that is not there
        with pytest.raises(ValueError, match="slot must be 0 or 1, got -1"):
            read(-1)


def test_subset_search_refuses_bad_cross_products(paths):
    ctx, queue = paths["ctx"], paths["queue"]
    search = lsq.SubsetSearch(ctx, queue, 4, 2, wg=8)
    xtx, xty = np.eye(5), np.ones(5)
    with pytest.raises(ValueError, match=r"xtx must have shape \(5, 5\)"):
        search.upload(np.eye(4), xty)
    with pytest.raises(ValueError, match="xty contains NaN"):
        search.upload(xtx, np.full(5, np.nan))
    with pytest.raises(TypeError, match="xtx must hold real numbers"):
        search.upload(xtx.astype(complex), xty)
    with pytest.raises(ValueError, match="yty contains NaN"):
        search.best(xtx, xty, np.nan)
    with pytest.raises(ValueError, match="every subset .* is collinear"):
        search.best(np.zeros((5, 5)), xty, 10.0)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        lsq.SubsetSearch(ctx, queue, 4, 0)


def test_factor_from_triangular_checks_and_keeps_a_zero_pivots_row():
    """R of [x y] with an exact zero pivot and non-zeros to its right: Miller's
    form holds the same Gram matrix and lstsq's residual."""
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((30, 4)), rng.standard_normal(30)
    x[:, 1] = 0.0
    r = np.linalg.qr(np.column_stack([x, y]), mode="r")     # LAPACK leaves the zero column's row as it was
    assert r[1, 1] == 0.0 and np.all(r[1, 2:] != 0.0)
    rt, z, rss = r[:4, :4], r[:4, 4], r[4, 4] ** 2
    f = lsq.Factor.from_triangular(rt, z, rss)
    assert lsq.factor_error(f, x) < 1e-12
    lsq.sing(f)
    assert f.sserr == pytest.approx(lsq.rss_lstsq(x, y), rel=1e-10)
    with pytest.raises(ValueError, match="z must hold 4 values"):
        lsq.Factor.from_triangular(rt, z[:3], rss)
    with pytest.raises(ValueError, match="sserr contains NaN"):
        lsq.Factor.from_triangular(rt, z, np.nan)


def test_cholesky_qr2_without_its_limit_still_gives_lstsq_on_rank_deficient_data(fp64_env):
    """With the condition limit off, a repeated column can pass both Cholesky
    factorisations on rounding: least_squares then sees the dependent column in
    CholeskyQR2's own R and refits by TSQR."""
    _, ctx, queue = fp64_env
    cq = cholqr.CholeskyQR2(ctx, queue, N + 1, limit=np.inf, gram_shape=SMALL_TILE, product_shape=SMALL_TILE,
                            update_shape=SMALL_TILE, inverse_shape=SMALL_TILE, block=4, band=16,
                            tsqr_options={"block_rows": 8})
    for seed in range(6):
        rng = np.random.default_rng(seed)
        x, y = rng.standard_normal((23, N)), rng.standard_normal(23)
        x[:, 3] = x[:, 1] * 3.0
        rss = cq.least_squares(x, y)[2]
        assert cq.method == "TSQR" and cq.reason and cq.dependent == [3]
        assert rss == pytest.approx(lsq.rss_lstsq(x, y), rel=1e-9)


def test_inputs_helpers():
    assert inputs.matrix("a", np.ones((3, 2), order="F")).flags.c_contiguous
    assert inputs.scalar("s", np.float32(2.5)) == 2.5
    with pytest.raises(ValueError, match="x must be a 2-dimensional array"):
        inputs.matrix("x", [[1.0, 2.0], [3.0]])
    with pytest.raises(TypeError, match="n must be an integer"):
        inputs.count("n", True, 0)
    with pytest.raises(TypeError, match="buf must be a pyopencl Buffer"):
        inputs.buffer("buf", np.zeros(3), 8)
