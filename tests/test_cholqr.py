"""Chapter 8's step 6 (gpubook.chapters.cholqr) in float64 against NumPy on
PoCL: the blocked Cholesky factorisation and its inverse at sizes that are
not multiples of the block or of the tiles, CholeskyQR2 on well-conditioned
matrices, its fall-back to TSQR (a failed Cholesky, a condition estimate
above the limit, rank-deficient columns), and least squares with the
response carried along."""
import numpy as np
import pyopencl as cl
import pytest

from gpubook.chapters import lsq
from gpubook.chapters.lsq import cholqr, tsqr

SMALL = {"TM": 16, "TN": 16, "WM": 4, "WN": 4, "K": 4, "STAGES": 2}
WIDE = {"TM": 32, "TN": 16, "WM": 4, "WN": 4, "K": 4, "STAGES": 2}


def spd(k, seed, cond=1e3):
    rng = np.random.default_rng(seed)
    u, _ = np.linalg.qr(rng.standard_normal((k, k)))
    return (u * np.logspace(0, np.log10(cond), k)) @ u.T


def conditioned(m, n, cond, seed):
    rng = np.random.default_rng(seed)
    u, _ = np.linalg.qr(rng.standard_normal((m, n)))
    v, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return (u * np.logspace(0, np.log10(cond), n)) @ v.T


def device_cholesky(ctx, queue, g, block, inverse=True, panel=1):
    k = len(g)
    chol = cholqr.DeviceCholesky(ctx, queue, k, block=block, update_shape=SMALL, product_shape=WIDE,
                                 panel=panel)
    mf = cl.mem_flags
    low = np.tril(g) + np.triu(np.full_like(g, np.nan), 1)      # the upper triangle must not be read
    gb_ = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(low))
    eb = cl.Buffer(ctx, mf.READ_WRITE, 8 * k * k) if inverse else None
    chol.enqueue(gb_, 0, eb)
    ok, diag = chol.status(0)
    out = np.empty((k, k))
    cl.enqueue_copy(queue, out, gb_)
    inv = None
    if inverse:
        inv = np.empty((k, k))
        cl.enqueue_copy(queue, inv, eb)
    return ok, diag, out, inv, chol


@pytest.mark.parametrize("k, block, panel", [(45, 16, 1), (32, 16, 1), (7, 16, 1), (1, 8, 1), (70, 32, 1),
                                             (45, 8, 2), (70, 16, 3), (33, 8, 4), (64, 16, 4)])
def test_blocked_cholesky_and_inverse_match_numpy(fp64_env, k, block, panel):
    """Panels of one block or several (the panel's own columns first, the rest
    once per panel), with the last panel and block cut short."""
    _, ctx, queue = fp64_env
    g = spd(k, seed=k)
    ok, diag, out, inv, chol = device_cholesky(ctx, queue, g, block, panel=panel)
    assert ok and chol.CB == min(block, 1 << (k.bit_length() - 1))
    ref = np.linalg.cholesky(g)
    lower, upper = np.tril(out), np.triu(out)
    assert np.max(np.abs(lower - ref)) <= 1e-12 * np.max(np.abs(ref))
    assert np.allclose(upper, lower.T, rtol=0, atol=0)           # R = L' written alongside
    assert np.allclose(diag, np.diag(ref), rtol=1e-12)
    assert np.allclose(np.triu(inv, 1), 0.0)
    assert np.max(np.abs(inv @ ref - np.eye(k))) <= 1e-9


def test_a_panel_needs_a_block(fp64_env):
    _, ctx, queue = fp64_env
    with pytest.raises(ValueError, match="panel"):
        cholqr.DeviceCholesky(ctx, queue, 16, block=8, update_shape=SMALL, product_shape=WIDE, panel=0)


def test_cholesky_flags_a_matrix_that_is_not_positive_definite(fp64_env):
    _, ctx, queue = fp64_env
    g = spd(40, seed=3)
    g[30, 30] = -1.0                                             # a pivot past the first block goes negative
    ok, _, _, _, _ = device_cholesky(ctx, queue, g, 16, inverse=False)
    assert not ok


@pytest.fixture(scope="module")
def cq(fp64_env):
    _, ctx, queue = fp64_env
    return cholqr.CholeskyQR2(ctx, queue, 13, gram_shape=SMALL, product_shape=WIDE, update_shape=SMALL, inverse_shape=WIDE, block=8, band=16,
                              tsqr_options={"block_rows": 64})


def assert_r_matches(r, a):
    """R'R = A'A to 1e-12 of its largest entry, |R| = |numpy's R| (rows may differ in sign)."""
    assert np.all(np.isfinite(r)) and np.allclose(r, np.triu(r))
    assert tsqr.gram_error(r, a) < 1e-12
    ref = np.linalg.qr(a, mode="r")
    assert np.max(np.abs(np.abs(r) - np.abs(ref))) <= 1e-10 * np.max(np.abs(ref))


@pytest.mark.parametrize("m, cond", [(1003, 1e5), (13, 10.0), (200, 1.0)])
def test_cholesky_qr2_on_well_conditioned_matrices(cq, m, cond):
    a = conditioned(m, 13, cond, seed=m)
    r = cq.r_factor(a)
    assert cq.method == "CholeskyQR2" and cq.reason == ""
    assert cond / 30 < cq.cond_estimate < 30 * cond
    assert_r_matches(r, a)


def test_cholesky_qr2_on_many_columns_and_bands(fp64_env):
    """More columns than a block, a band and a tile: every edge of the loops."""
    _, ctx, queue = fp64_env
    a = conditioned(301, 70, 1e3, seed=9)
    big = cholqr.CholeskyQR2(ctx, queue, 70, gram_shape=SMALL, product_shape=WIDE, update_shape=SMALL, inverse_shape=WIDE, block=16, band=32)
    assert_r_matches(big.r_factor(a), a)
    assert big.method == "CholeskyQR2"


def test_cholesky_qr2_falls_back_when_cholesky_fails(cq):
    a = conditioned(1003, 13, 1e12, seed=5)
    r = cq.r_factor(a)
    assert cq.method == "TSQR"
    assert "not numerically positive definite" in cq.reason or "above the limit" in cq.reason
    assert tsqr.gram_error(r, a) < 1e-12


def test_rank_deficient_columns_fall_back_to_tsqr(cq):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((500, 13))
    a[:, 4] = a[:, 1]                                            # a repeat
    a[:, 9] = 0.0                                                # a zero column
    r = cq.r_factor(a)
    assert cq.method == "TSQR" and cq.reason
    assert np.all(np.isfinite(r)) and tsqr.gram_error(r, a) < 1e-12


def test_cholesky_qr2_falls_back_above_its_limit(fp64_env):
    """A matrix whose Cholesky factor exists but whose diagonal ratio passes the limit."""
    _, ctx, queue = fp64_env
    strict = cholqr.CholeskyQR2(ctx, queue, 13, limit=1e3, gram_shape=SMALL, product_shape=WIDE, update_shape=SMALL, inverse_shape=WIDE, block=8,
                                tsqr_options={"block_rows": 64})
    a = conditioned(1003, 13, 1e6, seed=6)
    r = strict.r_factor(a)
    assert strict.method == "TSQR" and "above the limit 1e+03" in strict.reason
    assert strict.cond_estimate > 1e3
    assert_r_matches(r, a)


def test_least_squares_and_bad_input(cq):
    x, y = lsq.make_problem(2001, 12)
    rt, z, rss = cq.least_squares(x, y)
    assert cq.method == "CholeskyQR2"
    assert rss == pytest.approx(lsq.rss_lstsq(x, y), rel=1e-9)
    assert np.allclose(np.linalg.solve(rt, z), np.linalg.lstsq(x, y, rcond=None)[0], rtol=1e-9, atol=1e-11)
    with pytest.raises(ValueError, match="a must have 13 columns"):
        cq.r_factor(np.ones((10, 5)))
    with pytest.raises(ValueError, match="NaN or infinite"):
        cq.r_factor(np.full((10, 13), np.nan))
    with pytest.raises(ValueError, match="y must hold 10 values"):
        cq.least_squares(np.ones((10, 12)), np.ones(9))


def test_a_second_run_reuses_every_launch_with_its_arguments_set(fp64_env, plain_calls):
    """launch.Bound: the launches of one CholeskyQR2 repeat from run to run, so the
    second run adds no kernel copy, makes no launch anew (each is recalled) and gives
    the same R; another matrix (another
    buffer) gets its own copies, and its own right R."""
    _, ctx, queue = fp64_env
    cq = cholqr.CholeskyQR2(ctx, queue, 13, block=8, band=16, gram_shape=SMALL, update_shape=SMALL,
                            product_shape=WIDE, inverse_shape=WIDE)
    a = conditioned(300, 13, 1e3, seed=2)
    buf = cq.upload(a)
    r1 = cq.factor_buffer(buf, len(a))
    copies, made = cq.products.bound.copies, cq.products.bound.count
    assert copies > 0
    with plain_calls() as plain:
        r2 = cq.factor_buffer(buf, len(a))
    assert plain == []                           # no launch sets its arguments anew (kernel.__call__)
    assert cq.products.bound.copies == copies and np.array_equal(r1, r2)
    assert cq.products.bound.count == made       # every launch enqueued again as kept (Bound.recall)
    assert tsqr.gram_error(r1, a) < 1e-13
    b = conditioned(300, 13, 1e2, seed=3)
    rb = cq.r_factor(b)
    assert cq.products.bound.copies > copies and tsqr.gram_error(rb, b) < 1e-13
