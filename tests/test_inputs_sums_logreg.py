"""Issue 46's rows for the device sum (chapter 3), the host and device sums of
chapter 10 and logistic regression (chapters 1-4): each bad input gets a clear
ValueError or TypeError that names the argument before any launch, an input
that can be converted (a float64 or Fortran-order X) gives the float64
reference's answer, and launch shapes come from the kernel, not the device.

Tolerances: a float32 device sum of positive values against NumPy's float64 sum,
1e-5 relative (as tests/test_reduction.py); trained weights against the float64
reference of the same iterations from the unconverted data, lr.TOLERANCE (1e-4,
max-norm relative)."""
import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import gpubook as gb
from gpubook import launch
from gpubook.chapters import logreg as lr, multi
from gpubook.chapters.multi import sums
from gpubook.chapters.reduction import DeviceSum, figures as rf


@pytest.fixture(scope="module")
def ctx_queue():
    return gb.make_queue()


# Device sum (chapter 3) -------------------------------------------------------------

def test_device_sum_checks_n_against_the_buffer(ctx_queue):
    ctx, queue = ctx_queue
    x = cla.to_device(queue, np.ones(1000, np.float32))
    red = DeviceSum(ctx, queue, "2_sequential")
    for src in (x.data, x):   # a bare buffer: the old code read past its end and gave nan
        with pytest.raises(ValueError, match="n=1,001 exceeds the 1,000 float32 values in src"):
            red.sum(src, 1001, dtype=np.float32 if src is x.data else None)
    with pytest.raises(TypeError, match="n must be an integer"):
        red.sum(x, 10.5)
    with pytest.raises(ValueError, match="n must be 1 to"):
        red.sum(x, 0)


def test_device_sum_refuses_a_bare_buffer_whose_dtype_it_cannot_know(ctx_queue):
    ctx, queue = ctx_queue
    x64 = cla.to_device(queue, np.ones(1000, np.float64))
    red = DeviceSum(ctx, queue, "2_sequential")
    # a float64 buffer read as float32 summed to 937.5 for 1,000 ones
    with pytest.raises(TypeError, match="carries no dtype"):
        red.sum(x64.data)
    with pytest.raises(TypeError, match="src: expected float32 items, got a buffer of float64"):
        red.sum(x64.data, dtype=np.float64)
    with pytest.raises(TypeError, match="holds float64"):
        red.sum(x64)
    x32 = cla.to_device(queue, np.ones(1000, np.float32))
    assert red.sum(x32.data, dtype=np.float32) == red.sum(x32) == 1000.0


def test_device_sum_checks_the_dtype_and_sums_views(ctx_queue):
    ctx, queue = ctx_queue
    red = DeviceSum(ctx, queue, "4_multi")
    with pytest.raises(TypeError, match="src holds float64; DeviceSum sums float32"):
        red.sum(cla.to_device(queue, np.ones(1000)), 1000)
    with pytest.raises(TypeError, match="src must be a pyopencl.array.Array or cl.Buffer"):
        red.sum(np.ones(1000, np.float32), 1000)
    x = np.random.default_rng(1).random(5_003, dtype=np.float32)
    dev = cla.to_device(queue, x)
    with pytest.raises(ValueError, match="src must be contiguous"):
        red.sum(dev[::2])
    for got, want in ((red.sum(dev), x), (red.sum(dev[17:], 4_000), x[17:4_017])):
        ref = want.sum(dtype=np.float64)
        assert abs(got - ref) <= 1e-5 * ref


# Launch shapes from the kernel ------------------------------------------------------

def _cap_kernels(monkeypatch, cap):
    """Every built kernel allows at most `cap` work-items, as on Mesa's rusticl (32)
    where the device reports far more."""
    real = launch.kernel_max
    monkeypatch.setattr(launch, "kernel_max", lambda kern, device: min(cap, real(kern, device)))


def test_chapter_3_sizes_come_from_the_kernel(ctx_queue, monkeypatch):
    ctx, queue = ctx_queue
    _cap_kernels(monkeypatch, 8)
    wg, reads = rf.traced_trees(ctx, queue, 64)
    assert wg == 8 and reads == {s: rf.predicted_reads(s, 8) for s in rf.TREES}
    red = DeviceSum(ctx, queue, "2_sequential", largest=64)
    assert red.work_group == 8
    x = np.random.default_rng(2).random(3_001, dtype=np.float32)
    assert abs(red.sum(cla.to_device(queue, x)) - x.sum(dtype=np.float64)) <= 1e-5 * x.sum(dtype=np.float64)
    with pytest.raises(ValueError, match="allows on .* \\(8\\): ask for a power of two up to 8, or leave work_group out"):
        DeviceSum(ctx, queue, "2_sequential", work_group=16)
    with pytest.raises(TypeError, match="work_group must be an integer, not 16.5"):
        DeviceSum(ctx, queue, "2_sequential", work_group=16.5)


# Chapter 10's sums of partials ------------------------------------------------------

def test_sums_of_partials_check_their_inputs():
    lane = multi.Lane(multi.devices()[0])
    for total in (sums.Sum(4, 1), sums.DeviceSum(lane, 4, out=np.empty((4, 4)))):
        with pytest.raises(ValueError, match="its column sums of shape \\(3,\\).*expected \\(4,\\)"):
            total.add(np.ones((4, 4)), np.ones(3))
        with pytest.raises(TypeError, match="a partial must hold real numbers"):
            total.add(np.ones((4, 4), complex), np.ones(4))
        total.add(np.ones((4, 4)), np.ones(4))
        with pytest.raises(ValueError, match="m must be the positive number of rows"):
            total.finish(0)
        total.close()
    with pytest.raises(ValueError, match="n must be at least 1"):
        sums.DeviceSum(lane, 0)  # was a raw INVALID_BUFFER_SIZE


# Logistic regression (chapters 1-4) --------------------------------------------------

J, K, ITERATIONS = 256, 8, 50


@pytest.fixture(scope="module")
def trained(ctx_queue):
    """A function: weights trained on the device (tree.cl, 16 work-items) for a problem."""
    ctx, queue = ctx_queue
    knl = lr.build(ctx, queue.device, "tree", J, K, 16)

    def train(prob, w0=None):
        return lr.Trainer(ctx, queue, prob).train(knl, 16, w0=w0)[0]
    return train


@pytest.mark.parametrize("convert", [lambda X: X.astype(np.float64), np.asfortranarray],
                         ids=["float64", "fortran"])
def test_training_converts_float64_and_fortran_order_x(trained, convert):
    X, y = lr.two_classes(J, K, seed=3)
    X = convert(X)
    prob = lr.Problem(J, K, ITERATIONS, X, y, lr.learning_rate(J))
    assert prob.X.dtype == np.float32 and prob.X.flags.c_contiguous
    ref = lr.train(X, y, prob.rate, ITERATIONS)   # float64, from the unconverted X
    lr.check(trained(prob), ref)
    prob.X = convert(prob.X)   # changed after the problem was made: the Trainer converts too
    lr.check(trained(prob), ref)


def test_training_checks_w0_labels_and_shapes(ctx_queue, trained):
    X, y = lr.two_classes(J, K, seed=4)
    prob = lr.Problem(J, K, ITERATIONS, X, y, lr.learning_rate(J))
    trained(prob, w0=np.full(K, 5.0))   # leaves weights that a short w0 would keep
    with pytest.raises(ValueError, match=r"w0 must have shape \(8\), not \(3,\)"):
        trained(prob, w0=[1.0, 2.0, 3.0])
    w0 = np.linspace(-0.1, 0.1, K)
    lr.check(trained(prob, w0=w0), lr.train(X, y, prob.rate, ITERATIONS, w0=w0))
    with pytest.raises(ValueError, match=r"w0 must have shape \(8\)"):
        lr.train(X, y, prob.rate, 2, w0=np.zeros(3))
    with pytest.raises(ValueError, match="labels must be 0 or 1, found 2"):
        lr.Problem(J, K, 1, X, np.where(y > 0, 2.0, 0.0), 0.01)
    with pytest.raises(ValueError, match="labels must be 0 or 1"):
        lr.train(X, y + 1, 0.01, 1)
    with pytest.raises(ValueError, match=r"X must have shape \(256 x 4\)"):
        lr.Problem(J, 4, 1, X, y, 0.01)
    with pytest.raises(ValueError, match=r"labels must have shape \(256\)"):
        lr.Problem(J, K, 1, X, y[:-1], 0.01)
    with pytest.raises(ValueError, match="X must be finite"):
        lr.Problem(J, K, 1, np.where(X > 2, np.nan, X), y, 0.01)
    with pytest.raises(TypeError, match="X must hold real numbers"):
        lr.Problem(J, K, 1, X.astype(complex), y, 0.01)
    with pytest.raises(ValueError, match="iterations must be at least 1"):
        lr.Problem(J, K, 0, X, y, 0.01)
    with pytest.raises(ValueError, match="rate must be a finite positive step size"):
        lr.Problem(J, K, 1, X, y, np.nan)
    with pytest.raises(ValueError, match=r"w must have shape \(8\)"):
        lr.log_likelihood(X, y, np.zeros(3))
    ctx, queue = ctx_queue
    with pytest.raises(ValueError, match="knl was built for J=256, K=8 and 16 work-items"):
        lr.Trainer(ctx, queue, prob).train(lr.build(ctx, queue.device, "tree", J, K, 16), 8)
    with pytest.raises(ValueError, match="unknown step 'trees'; use one of"):
        lr.build(ctx, queue.device, "trees", J, K, 16)


def test_unknown_scale_names_the_valid_ones():
    with pytest.raises(ValueError, match="unknown scale 'medium'; use one of 'full', 'small'"):
        lr.problem("medium")
    with pytest.raises(TypeError, match="iterations must be an integer"):
        lr.problem("small", iterations=2.5)
