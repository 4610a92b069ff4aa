"""Property tests of chapters 1-4, 7 and 8 (Hypothesis; profiles and counts in
tests/property_inputs.py): the device scan, the list and population fitness,
one-work-group training, the QR updates, blocked Householder, TSQR, CholeskyQR2
and the subset search. Each input gives NumPy's float64 answer within a stated
tolerance, NaN and Inf where NumPy has them, or a TypeError/ValueError."""
import numpy as np
import pyopencl.array as cla
import pytest
from hypothesis import given, strategies as st

from gpubook import logistic
from gpubook.chapters import logreg as lr, lsq
from gpubook.chapters.lsq import measure, shifted
from gpubook.orthogonality import orthogonality
from gpubook.chapters.scan import steps as sc
from property_inputs import bounded, compared, finite_real, matrices, same_specials, sizes, tried, vectors

REFUSED = (TypeError, ValueError)
SMALL_TILE = {"TM": 16, "TN": 16, "WM": 4, "WN": 4, "K": 4, "STAGES": 2}  # 16 work-items
N = 5


@pytest.fixture(scope="module")
def env(fp64_env):
    return fp64_env


# Chapter 7 -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def scans(env):
    _, ctx, queue = env
    return {step: sc.DeviceScan(ctx, queue, step, items=8) for step in sc.DEVICE_STEPS}


@bounded(250)
@given(data=st.one_of(sizes(0, 300), st.integers(300, 9000)).flatmap(
    lambda n: vectors(n, exps=(-20, 20), dtypes=["float32"], orders=["C"])), step=st.sampled_from(sc.DEVICE_STEPS))
def test_device_scan(env, scans, data, step):
    tried("DeviceScan")
    _, _, queue = env
    v, how = data
    n = len(v)
    src = cla.to_device(queue, v if n else np.zeros(1, np.float32))
    dst = cla.empty(queue, max(n, 1), np.float32)
    scans[step].enqueue(src, dst, n)
    with pytest.raises(ValueError):
        scans[step].enqueue(src, dst, max(n, 1) + 1)     # n beyond the buffers
    if not n:
        return
    got, ref = dst.get(), np.cumsum(v, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if np.nanmax(np.abs(ref), initial=0) > np.finfo(np.float32).max / 2:
            return                                   # beyond float32
    ok = same_specials(got, ref)
    # float32 tree scans of tiles: (log2 n + items) * eps32 of the running sum of magnitudes
    bound = 40 * 6e-8 * np.cumsum(np.abs(np.where(np.isfinite(v), v, 0)), dtype=np.float64)
    assert np.all(np.abs(got - ref)[ok] <= bound[ok] + 1e-38)
    compared("DeviceScan")


@pytest.fixture(scope="module")
def lists(env):
    _, ctx, queue = env
    return {step: sc.ListFitness(ctx, queue, step) for step in sc.LIST_STEPS}


@st.composite
def labels(draw, most=600):
    n = draw(sizes(0, most))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    p = draw(st.sampled_from([0.0, 0.02, 0.5, 0.5, 0.98, 1.0]))
    y = (rng.random(n) < p).astype(draw(st.sampled_from(["int32"] * 4 + ["int64", "uint8", "float32", "bool"])))
    if n and draw(st.integers(0, 4)) == 0:
        y[rng.integers(n)] = draw(st.sampled_from([2, 3, 255] if y.dtype.kind in "iu" else [1]))
    return y


def fitness_ok(y):
    return len(y) >= 2 and bool(np.all((y == 0) | (y == 1))) and 0 < np.count_nonzero(y) < len(y)


@bounded(200)
@given(y=labels(), step=st.sampled_from(sc.LIST_STEPS), on_device=st.booleans())
def test_list_fitness(env, lists, y, step, on_device):
    tried("ListFitness")
    _, _, queue = env
    f = lists[step]
    arg = y
    if on_device and y.dtype == np.int32 and len(y):
        arg = cla.to_device(queue, y)
    if y.dtype.kind not in "iu" or not fitness_ok(y):
        with pytest.raises(REFUSED):
            f.fitness(arg, len(y))
        return
    ref = float(sc.fitness_reference(-np.arange(len(y), dtype=np.float64), y))
    assert f.fitness(arg, len(y)) == pytest.approx(ref, abs=1e-6)
    compared("ListFitness")


@pytest.fixture(scope="module")
def populations(env):
    _, ctx, queue = env
    found = {}

    def get(n):
        if n not in found:
            found[n] = sc.Population(ctx, queue, n, shortcut=n % 2 == 0)
        return found[n]
    return get


@bounded(150)
@given(n=st.sampled_from([2, 3, 13, 64, 100]), models=st.integers(0, 5), y=labels(100),
       seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(["normal", "ties", "inf", "nan", "float64"]))
def test_population_fitness(env, populations, n, models, y, seed, kind):
    tried("Population")
    rng = np.random.default_rng(seed)
    y = np.resize(y, n) if len(y) else rng.integers(0, 2, n)
    s = rng.standard_normal((models, n)).astype(np.float32)
    if kind == "ties":
        s = np.round(s * 2) / 2
    elif kind == "inf" and models:
        s[0, rng.integers(n)] = rng.choice([np.inf, -np.inf])
    elif kind == "nan" and models:
        s[0, rng.integers(n)] = np.nan
    pop = populations(n)
    if kind == "float64":
        with pytest.raises(TypeError):
            pop.fitness(s.astype(np.float64), y)
        return
    if y.dtype.kind not in "biuf" or not fitness_ok(y) or (kind == "nan" and models):
        with pytest.raises(REFUSED):
            pop.fitness(s, y)
        return
    got = pop.fitness(s, y)
    assert got.shape == (models,)
    if models:
        assert np.allclose(got, sc.fitness_reference(s, y), atol=1e-5)
    compared("Population")


# Chapters 1-4: one work-group trains the logistic regression ---------------------------------------
J, K, ITERATIONS = 64, 4, 20


@pytest.fixture(scope="module")
def tree(env):
    _, ctx, queue = env
    return lr.build(ctx, queue.device, "tree", J, K, 16)


@bounded(100)
@given(data=matrices(J, K, exps=(-2, 1), offsets=(0.0, 1.0)), seed=st.integers(0, 2**32 - 1),
       bad=st.sampled_from([None] * 6 + ["label", "w0"]), start=st.booleans())
def test_trainer(env, tree, data, seed, bad, start):
    tried("Trainer")
    _, ctx, queue = env
    x, how = data
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, J).astype(np.float32)
    w0 = rng.standard_normal(K + (bad == "w0")) * 0.1 if start or bad == "w0" else None
    if bad == "label":
        y[rng.integers(J)] = rng.choice([2.0, -1.0, np.nan])
    if bad or not finite_real(x) or not np.all(np.isfinite(np.asarray(x, np.float32))):
        with pytest.raises(REFUSED):
            prob = lr.Problem(J, K, ITERATIONS, x, y, 1.0 / J)
            lr.Trainer(ctx, queue, prob).train(tree, 16, w0=w0)
        return
    prob = lr.Problem(J, K, ITERATIONS, x, y, 1.0 / J)
    got = lr.Trainer(ctx, queue, prob).train(tree, 16, w0=w0)[0]
    ref = logistic.train(np.asarray(x, np.float32), y, np.float32(1.0 / J), ITERATIONS, w0=w0)
    # Gradient descent contracts only while the step times the largest curvature (at most
    # |X|_2^2 / 4 for the logistic loss) stays below 2; past it each iteration multiplies
    # a difference, rounding's included, so float32 and float64 part ways by design, and
    # only finite weights of the right length are asked of the kernel.
    if (1.0 / J) * np.linalg.norm(np.asarray(x, np.float64), 2) ** 2 / 4 >= 1.0:
        assert got.shape == ref.shape and np.all(np.isfinite(got) | ~np.isfinite(ref))
        return
    assert np.max(np.abs(got - ref)) <= lr.TOLERANCE * max(np.max(np.abs(ref)), 1e-3)
    compared("Trainer")


# Chapter 8 ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fits(env):
    _, ctx, queue = env
    includ = lsq.Includ(ctx, queue, N, "1_sequential")
    blocked = lsq.BlockedQR(ctx, queue, N, nb=4, block_rows=16)
    tsqr = lsq.TSQR(ctx, queue, N + 1, block_rows=8)
    chol = measure.portable(ctx, queue, N + 1, tsqr_options={"block_rows": 8})[0]

    def after_sing(f):                 # Miller's form is read after sing (tests/test_lsq_rank.py)
        lsq.sing(f)
        return f.sserr

    def householder(x, y):
        blocked.reset()
        return after_sing(blocked.add(x, y).factor())
    return {"Includ": lambda x, y: after_sing(includ.run(x, y)), "BlockedQR": householder,
            "TSQR": lambda x, y: tsqr.least_squares(x, y)[2], "CholeskyQR2": lambda x, y: chol.least_squares(x, y)[2]}


def regression(m_low=0):
    return st.tuples(sizes(m_low, 90).flatmap(lambda m: matrices(m, N, exps=(-12, 12), offsets=(0.0, 1.0, 100.0))),
                     st.integers(0, 2**32 - 1), st.sampled_from([None] * 5 + ["nan", "short", "complex"]))


def check_fit(fits, name, data):
    tried(name)
    (x, how), seed, bad = data
    m = len(x)
    rng = np.random.default_rng(seed)
    y = rng.standard_normal(m) * 10.0 ** how["e"]
    if m and bad == "nan":
        y[rng.integers(m)] = np.nan
    elif bad == "short":
        y = y[:-1] if m else np.zeros(1)
    elif bad == "complex":
        y = y.astype(complex)
    fit = fits[name]
    valid = x.dtype.kind in "biuf" and finite_real(x) and (bad is None or (bad == "nan" and m == 0))
    if not valid or (m == 0 and name in ("TSQR", "CholeskyQR2")):
        with pytest.raises(REFUSED):
            fit(x, y)
        return
    # The reference is lstsq of the columns scaled to unit length: the least residual does
    # not change with the columns' scale, and lstsq's rank cut then sits relative to each
    # column's own size, as a QR's does (unscaled, one column of 1e9 would make it drop a
    # column that differs from another by 1e-7, and the fit of the data as given is lower).
    x64 = np.asarray(x, np.float64)
    norms = np.linalg.norm(x64, axis=0) if m else np.ones(x.shape[1])
    ref = lsq.rss_lstsq(x64 / np.where(norms > 0, norms, 1.0), y)
    # float64 QR against LAPACK's lstsq: 1e-7 of |y|^2 (an ill-conditioned fit loses
    # digits of the residual in both)
    tol = 1e-7 * float(np.sum(y.astype(np.float64) ** 2)) + 1e-300
    got = fit(x, y)
    assert got == pytest.approx(ref, rel=1e-6, abs=tol)
    compared(name)


@bounded(100)
@given(data=regression())
def test_includ(fits, data):
    check_fit(fits, "Includ", data)


@bounded(100)
@given(data=regression())
def test_blocked_qr(fits, data):
    check_fit(fits, "BlockedQR", data)


@bounded(100)
@given(data=regression())
def test_tsqr(fits, data):
    check_fit(fits, "TSQR", data)


@bounded(100)
@given(data=regression())
def test_cholesky_qr2(fits, data):
    check_fit(fits, "CholeskyQR2", data)


@pytest.fixture(scope="module")
def chosen(env):
    _, ctx, queue = env
    return shifted.portable(ctx, queue, N + 1)


@bounded(100)
@given(data=sizes(0, 90).flatmap(lambda m: matrices(m, N + 1, exps=(-12, 12), offsets=(0.0, 1.0, 100.0))))
def test_chosen_qr(chosen, data):
    """Part 8.3's chosen method (CholeskyQR2 or shifted CholeskyQR): any input gives a
    Q orthonormal to 1e-13 with Q R = A to 1e-13 of A, a ConditionError only where A
    is numerically rank deficient (κ above 1e12 by NumPy's SVD), or a TypeError/
    ValueError for what is not a real finite matrix of at least as many rows as
    columns."""
    tried("Chosen")
    x, how = data
    if not (x.dtype.kind in "biuf" and finite_real(x) and len(x) >= N + 1):
        with pytest.raises(REFUSED):
            chosen.r_factor(x)
        return
    a = np.asarray(x, np.float64)
    try:
        r = chosen.r_factor(x)
    except shifted.ConditionError:
        assert np.linalg.cond(a) > 1e12, (how, chosen.estimates)
        return
    q = chosen.q()
    assert orthogonality(q) <= 1e-13, (how, chosen.method, orthogonality(q))
    # Q1 = A R1^-1 multiplies by R1^-1 formed explicitly (for the products), which leaves
    # Q R = A to about u κ(R1) (a triangular solve would give u): κ(R1) from A's singular
    # values and the shift where the method shifted
    sv = np.linalg.svd(a, compute_uv=False)
    s = shifted.shift_coefficient(*a.shape) * float((sv ** 2).sum()) if chosen.shifts else 0.0
    kappa_r1 = float(np.sqrt((sv[0] ** 2 + s) / (sv[-1] ** 2 + s))) if sv[-1] ** 2 + s > 0 else np.inf
    residual = float(np.linalg.norm(q @ r - a) / np.linalg.norm(a))
    assert residual <= 1e-13 + shifted.U * kappa_r1, (how, chosen.method, residual, kappa_r1)
    compared("Chosen")


@pytest.fixture(scope="module")
def searches(env):
    _, ctx, queue = env
    return {k: lsq.SubsetSearch(ctx, queue, 6, k, wg=8) for k in (1, 2, 3)}


@bounded(120)
@given(data=st.tuples(st.integers(8, 60), st.integers(0, 2**32 - 1)).flatmap(
    lambda a: matrices(a[0], 7, dtypes=["float64"], exps=(-6, 6), specials=[None], orders=["C"])),
       k=st.sampled_from([1, 2, 3]), bad=st.sampled_from([None] * 6 + ["nan", "shape"]))
def test_subset_search(searches, data, k, bad):
    tried("SubsetSearch")
    a, how = data
    a[:, 0] = 1.0                      # the intercept
    x, y = a[:, :6], a[:, 6] + 0.1 * np.arange(len(a)) * 10.0 ** how["e"]
    design = np.column_stack([np.ones(len(a)), x])
    xtx, xty, yty = design.T @ design, design.T @ y, float(y @ y)
    if bad == "nan":
        xty[1] = np.nan
    elif bad == "shape":
        xtx = xtx[:-1]
    search = searches[k]
    if bad:
        with pytest.raises(REFUSED):
            search.best(xtx, xty, yty)
        return
    rss = {}
    for sub in search_subsets(6, k):
        cols = design[:, [0] + [s + 1 for s in sub]]
        if np.linalg.matrix_rank(cols) == cols.shape[1]:
            rss[sub] = lsq.rss_lstsq(cols, y)
    if not rss:
        with pytest.raises(ValueError):
            search.best(xtx, xty, yty)
        return
    try:
        got, sub = search.best(xtx, xty, yty)
    except ValueError:
        assert min(rss.values()) < 1e-9 * yty, "refused, but a subset of full rank fits"
        return
    # normal equations in float64: cond(X'X) * eps of y'y
    tol = 1e-6 * yty
    assert got >= min(rss.values()) - tol
    if sub in rss:
        assert got == pytest.approx(rss[sub], abs=tol)
    compared("SubsetSearch")


def search_subsets(p, k):
    from itertools import combinations
    return list(combinations(range(p), k))
