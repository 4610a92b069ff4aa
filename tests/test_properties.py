"""Property tests of chapters 3, 5, 6 and 10 (Hypothesis; profiles and counts in
tests/property_inputs.py): the covariance in core, streamed, by tile pairs and
over several devices, the transposes and gradient of chapter 5, and the sums of
chapters 3 and 10. Each input gives NumPy's float64 answer within a stated
tolerance, NaN and Inf where NumPy has them, or a TypeError/ValueError."""
import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest
from hypothesis import given, strategies as st

import gpubook as gb
from gpubook import logistic, stream as oc, xtx
from gpubook.chapters import covariance as cv, multi
from gpubook.chapters.multi import sums as msums
from gpubook.chapters.reduction.steps import STEPS as SUM_STEPS, DeviceSum
from gpubook.chapters.transpose import steps as tr
from property_inputs import bounded, compared, finite_real, matrices, same_specials, sizes, tried, vectors

TILE = cv.shape(32, 4, 4, 8, stages=2)
REFUSED = (TypeError, ValueError)


@pytest.fixture(scope="module")
def env():
    device, ctx, queue, _, _ = gb.open_device()
    return device, ctx, queue


def cov_tolerance(how):
    """float32 keeps 7 digits; centring on a float32 mean of data offset by o
    standard deviations loses about log10(1 + o) of them: 1e-4 of the largest entry,
    times 1 + o."""
    return 1e-4 * (1 + how["offset"])


def check_cov(c, x, how):
    """C against the float64 covariance: the same NaN and Inf, and the finite
    entries within cov_tolerance of the largest one (or of the smallest normal
    float32 squared, for data all zero)."""
    ref = xtx.reference(np.asarray(x, np.float64))
    top32 = np.finfo(np.float32).max
    with np.errstate(invalid="ignore"):
        # beyond float32: an entry overflows (to Inf, or to NaN where the kernel subtracts one
        # overflowed sum from another); one whose sum S = m C nearly does may too
        assert not np.any(np.isfinite(c[np.abs(ref) > top32])), "a covariance beyond float32 came back finite"
        near = ~np.isfinite(c) & np.isfinite(ref) & (np.abs(ref) * len(x) > top32 / 4)
    c = np.where(near, ref, c)
    ok = same_specials(c, ref)
    if ok.any():
        top = max(np.max(np.abs(ref[ok])), 1e-30)
        assert np.max(np.abs(c[ok] - ref[ok])) <= cov_tolerance(how) * top


def cov_data(**kw):
    return st.tuples(sizes(0, 140), sizes(0, 70)).flatmap(lambda s: matrices(*s, **kw))


@bounded(200)
@given(data=cov_data(exps=(-12, 12)), step=st.sampled_from(cv.STEPS))
def test_covariance_in_core(env, data, step):
    tried("Covariance")
    _, ctx, queue = env
    x, how = data
    m, n = x.shape
    if m < 2 or n < 1 or x.dtype != np.float32:
        with pytest.raises(ValueError):
            cv.Covariance(ctx, queue, m, n).run(x, step, TILE)
        return
    check_cov(cv.Covariance(ctx, queue, m, n).run(x, step, TILE), x, how)
    compared("Covariance")


HOST_ROWS = dict(orders=["C", "C", "C", "F", "slice"])   # what streams must be: mostly C-contiguous


@bounded(150)
@given(data=cov_data(**HOST_ROWS), gather=st.sampled_from(["flatten", "rect"]))
def test_tile_pairs(env, data, gather):
    tried("TilePairs")
    device, ctx, _ = env
    x, how = data
    m, n = x.shape
    if n < 1:
        with pytest.raises(ValueError):
            cv.TilePairs(ctx, device, n, 0, TILE, width=32, rows=64)
        return
    tp = cv.TilePairs(ctx, device, n, 0, TILE, width=32, rows=64)
    if m < 1 or x.dtype != np.float32 or not x.flags.c_contiguous:
        with pytest.raises(REFUSED):
            tp.run(x, gather)
        return
    check_cov(tp.run(x, gather), x, how)
    compared("TilePairs")


@bounded(150)
@given(data=cov_data(**HOST_ROWS))
def test_stream(env, data):
    tried("Stream")
    device, ctx, _ = env
    x, how = data
    m, n = x.shape
    if n < 1:
        with pytest.raises(ValueError):
            oc.Stream(ctx, device, n, 10**6, TILE)
        return
    s = oc.Stream(ctx, device, n, oc.stream_bytes(n, 64), TILE)
    if m < 1 or x.dtype != np.float32 or not x.flags.c_contiguous:
        with pytest.raises(REFUSED):
            s.run(x)
        return
    check_cov(s.run(x), x, how)
    compared("Stream")


@pytest.fixture(scope="module")
def lanes():
    device = multi.devices()[0]
    return [multi.Lane(device), multi.Lane(device)]


@bounded(60)
@given(data=st.tuples(sizes(0, 200), sizes(1, 40)).flatmap(lambda s: matrices(*s, **HOST_ROWS)), count=st.sampled_from([1, 2]))
def test_covariance_over_devices(lanes, data, count):
    tried("multi.Covariance")
    x, how = data
    m, n = x.shape
    mc = multi.Covariance(lanes, n, oc.stream_bytes(n, 64), TILE, m=max(m, 1))
    if m < 1 or x.dtype != np.float32 or not x.flags.c_contiguous:
        with pytest.raises(REFUSED):
            mc.run(x, count)
        return
    check_cov(mc.run(x, count), x, how)
    compared("multi.Covariance")


# Chapter 5: X and XT on the device, and training over the whole device ---------------------
KP, STRIDE = 16, 128


@pytest.fixture(scope="module")
def logreg5(env):
    device, ctx, queue = env
    lr = tr.Logreg(ctx, queue, device, KP)
    return lr, lr.alloc(STRIDE)


@st.composite
def labelled(draw, most_j=STRIDE, most_k=KP):
    x, how = draw(st.tuples(sizes(0, most_j), sizes(1, most_k)).flatmap(
        lambda s: matrices(*s, exps=(-3, 1), offsets=(0.0, 1.0), specials=[None] * 4 + ["nan", "inf"])))
    rng = np.random.default_rng(how["seed"])
    labels = rng.integers(0, 2, len(x)).astype(draw(st.sampled_from(["float32", "float64", "int32", "bool"])))
    if len(x) and draw(st.integers(0, 5)) == 0:
        bad = draw(st.sampled_from([2, -1, 0.5, np.nan]))
        if labels.dtype.kind != "f" and bad != int(bad if bad == bad else 0):   # 0.5, NaN
            labels = labels.astype(np.float64)                                  # need a float
        labels[rng.integers(len(x))] = bad
    return x, labels, how


def labels_ok(labels):
    return finite_real(labels) and bool(np.all((labels == 0) | (labels == 1)))


@bounded(120)
@given(data=labelled(), variant=st.sampled_from(tr.ITERATIONS), rate=st.sampled_from([0.01, 0.1, 1.0]))
def test_chapter5_transposes_and_training(logreg5, data, variant, rate):
    tried("Logreg (transposes)")
    lr, buf = logreg5
    x, labels, how = data
    valid = finite_real(x) and labels_ok(labels)
    if not valid:
        with pytest.raises(REFUSED):
            lr.upload(buf, x, labels)
        return
    lr.upload(buf, x, labels)
    xp, _ = tr.pad(x, labels, STRIDE, KP)
    for t in tr.TRANSPOSES:
        lr.transpose(t, buf, STRIDE).wait()
        xt = lr.get(buf.xt, STRIDE * KP).reshape(KP, STRIDE)
        assert np.array_equal(xt, xp.T), t          # a transpose moves bits: exactly equal
    J = len(labels)
    if J == 0:
        with pytest.raises(ValueError):
            lr.train(variant, buf, J, rate / max(J, 1), 3)
        return
    step = rate / J
    ref = logistic.train(np.asarray(x, np.float32), labels, step, 3)
    got = lr.train(variant, buf, J, step, 3)[:x.shape[1]]
    # float32 sums of J <= 128 terms against float64: 1e-4 of the largest weight
    assert np.max(np.abs(got - ref)) <= 1e-4 * max(np.max(np.abs(ref)), 1e-6), variant
    compared("Logreg (transposes)")
    wrong = next(n for n in (x.shape[1] + 1, x.shape[1] + 2) if n != KP)   # KP: the padded form
    with pytest.raises(ValueError):
        lr.train(variant, buf, J, step, 3, theta0=np.zeros(wrong))


# Chapter 3's device sum ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def sums3(env):
    _, ctx, queue = env
    return {step: DeviceSum(ctx, queue, step) for step in SUM_STEPS}


@bounded(250)
@given(data=st.one_of(sizes(0, 300), st.integers(300, 20_000)).flatmap(
    lambda n: vectors(n, exps=(-30, 30), dtypes=["float32"] * 4 + ["float64", "int32"])),
       step=st.sampled_from(SUM_STEPS), ask=st.sampled_from([None, "all", "fewer", "more"]))
def test_device_sum(env, sums3, data, step, ask):
    tried("DeviceSum (chapter 3)")
    _, _, queue = env
    v, how = data
    n = {None: None, "all": len(v), "fewer": len(v) // 2, "more": len(v) + 1}[ask]
    red = sums3[step]
    if v.dtype != np.float32 or not v.flags.c_contiguous:
        # pyopencl holds only contiguous arrays: a strided one is copied on upload
        if v.dtype != np.float32:
            with pytest.raises(TypeError):
                red.sum(cla.to_device(queue, np.ascontiguousarray(v)), n)
        return
    if len(v) == 0:                                 # pyopencl makes no empty buffer: n = 0 of one
        with pytest.raises(ValueError):
            red.sum(cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 4), 0, np.float32)
        return
    if n == 0 or (n or 0) > len(v):
        with pytest.raises(ValueError):
            red.sum(cla.to_device(queue, v), n)
        return
    used = v[:len(v) if n is None else n]
    ref = np.sum(used, dtype=np.float64)
    with np.errstate(over="ignore"):
        if abs(ref) > np.finfo(np.float32).max / 2:
            return                                  # beyond float32: not this sum's question
    got = red.sum(cla.to_device(queue, v), n)
    if same_specials(got, ref):
        # float32 pairwise sums: n * eps32 of the sum of magnitudes
        assert abs(got - ref) <= len(used) * 6e-8 * np.sum(np.abs(used), dtype=np.float64) + 1e-45
    compared("DeviceSum (chapter 3)")


# Chapter 10's sums of partial X'X --------------------------------------------------------------
@st.composite
def partials(draw):
    n = draw(sizes(1, 40))
    k = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    dtype = draw(st.sampled_from(["float32", "float64", "complex64", "int32"]))
    parts = []
    for _ in range(k):
        a = rng.standard_normal((draw(st.integers(1, 30)), n)) * 10.0 ** draw(st.integers(-6, 6))
        parts.append(((a.T @ a).astype(dtype), a.sum(axis=0)))
    m = draw(st.sampled_from([sum(1 for _ in parts) * 10, 1, 0, -3, np.inf, np.nan]))
    wrong = draw(st.sampled_from([None, None, None, "shape", "cols"]))
    if wrong == "shape":
        parts[0] = (parts[0][0][:, :-1], parts[0][1])
    elif wrong == "cols":
        parts[0] = (parts[0][0], parts[0][1][:-1])
    return n, parts, m, wrong, dtype


def sum_ok(n, parts, m, wrong, dtype):
    return wrong is None and dtype != "complex64" and isinstance(m, int) and m > 0


@bounded(150)
@given(case=partials(), threads=st.sampled_from([1, 2, 3]), triangle=st.booleans())
def test_chapter10_host_sum(case, threads, triangle):
    tried("Sum (chapter 10)")
    n, parts, m, wrong, dtype = case
    total = msums.Sum(n, threads, triangle)
    try:
        if not sum_ok(*case):
            with pytest.raises(REFUSED):
                total.add_all(parts, m)
            return
        got = total.add_all(parts, m)
    finally:
        total.close()
    s = sum(np.asarray(p, np.float64) for p, _ in parts)
    d = sum(c for _, c in parts) / m
    ref = s / m - np.outer(d, d)
    assert np.allclose(got, ref, rtol=1e-6, atol=1e-6 * np.max(np.abs(s / m)))   # float32 partials add exactly
    compared("Sum (chapter 10)")


@pytest.fixture(scope="module")
def device_sums(lanes):
    found = {}

    def get(n):
        if n not in found:
            found[n] = msums.DeviceSum(lanes[0], n)
        return found[n]
    return get


@bounded(80)
@given(case=partials())
def test_chapter10_device_sum(lanes, device_sums, case):
    tried("DeviceSum (chapter 10)")
    if not lanes[0].device.double_fp_config:
        pytest.skip("no fp64")
    n, parts, m, wrong, dtype = case
    total = device_sums(n)
    total.start()
    if not sum_ok(*case):
        with pytest.raises(REFUSED):
            total.add_all(parts, m)
        return
    got = total.add_all(parts, m)
    s = sum(np.asarray(p, np.float32).astype(np.float64) for p, _ in parts)   # sent as float32
    d = sum(c for _, c in parts) / m
    assert np.allclose(got, s / m - np.outer(d, d), rtol=1e-9, atol=1e-9 * np.max(np.abs(s / m)))
    compared("DeviceSum (chapter 10)")
