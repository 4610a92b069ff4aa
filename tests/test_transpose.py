"""Chapter 5's host helpers and kernels on the local OpenCL device (PoCL in CI)."""
import numpy as np
import pyopencl as cl
import pytest

import gpubook as gb
from gpubook.chapters import logreg
from gpubook.chapters import transpose as tr


@pytest.fixture(scope="module")
def env():
    device = gb.choose_device()
    ctx, queue = gb.make_queue(device)
    return device, ctx, queue


@pytest.fixture(scope="module")
def small(env):
    """A size that divides neither the work-group size nor 4: 1001 examples of 37 features."""
    device, ctx, queue = env
    X, y = logreg.two_classes(1001, 37, seed=5)
    lr = tr.Logreg(ctx, queue, device, tr.padded(37, tr.FEATURE_MULTIPLE))
    buf = lr.alloc(tr.padded(1001, tr.EXAMPLE_MULTIPLE))
    lr.upload(buf, X, y)
    return lr, buf, X, y


def test_padded_sizes():
    assert tr.padded(292, tr.FEATURE_MULTIPLE) == 296
    assert tr.padded(1001, tr.EXAMPLE_MULTIPLE) == 1024
    assert tr.padded(1024, tr.EXAMPLE_MULTIPLE) == 1024


def test_pad_zero_fills():
    X = np.ones((5, 3), np.float32)
    Xp, yp = tr.pad(X, np.ones(5, np.float32))
    assert Xp.shape == (64, 8) and yp.shape == (64,)
    assert Xp[:5, :3].sum() == 15 and Xp.sum() == 15 and yp.sum() == 5


def test_pad_rejects_bad_sizes():
    with pytest.raises(ValueError):
        tr.pad(np.ones((100, 3), np.float32), np.ones(100, np.float32), stride=64)
    with pytest.raises(ValueError):
        tr.pad(np.ones((10, 3), np.float32), np.ones(10, np.float32), kp=6)


def test_transposes_exact(small):
    lr, buf, X, y = small
    Xp, _ = tr.pad(X, y, buf.stride, buf.kp)
    for variant in tr.TRANSPOSES:
        lr.queue.finish()
        cl.enqueue_copy(lr.queue, buf.xt, np.zeros(buf.stride * buf.kp, np.float32))
        lr.transpose(variant, buf, buf.stride).wait()
        got = lr.get(buf.xt, buf.stride * buf.kp).reshape(buf.kp, buf.stride)
        assert np.array_equal(got, Xp.T), variant


def test_scores_match_numpy(small):
    lr, buf, X, y = small
    theta = np.random.default_rng(1).standard_normal(X.shape[1]) * 0.1
    ref = logreg.sigmoid(X.astype(np.float64) @ theta) - y
    lr.set_theta(buf, theta)
    for variant in tr.SCORES:
        lr.scores(variant, buf, len(y)).wait()
        got = lr.get(buf.o, buf.stride)[:len(y)]
        assert np.max(np.abs(got - ref)) < 1e-5, variant


def test_gradients_match_numpy(small):
    lr, buf, X, y = small
    theta = np.random.default_rng(2).standard_normal(X.shape[1]) * 0.1
    ref = X.astype(np.float64).T @ (logreg.sigmoid(X.astype(np.float64) @ theta) - y)
    for variant in tr.GRADIENTS:
        lr.set_theta(buf, theta)
        lr.scores("cols", buf, len(y))
        lr.gradient(variant, buf, len(y), rate=-1.0)[-1].wait()   # theta + gradient
        got = lr.get(buf.theta, buf.kp)
        assert np.max(np.abs(got[:X.shape[1]] - theta - ref)) < 1e-4 * np.max(np.abs(ref)), variant
        assert not got[X.shape[1]:].any(), variant                  # padded features stay 0


def test_iterations_match_train(small):
    lr, buf, X, y = small
    rate = 2.0 / len(y)
    ref = logreg.train(X, y, rate, 10)
    for variant in tr.ITERATIONS:
        got = lr.train(variant, buf, len(y), rate, 10)
        assert np.max(np.abs(got[:X.shape[1]] - ref)) < 1e-4 * np.max(np.abs(ref)), variant


def test_numpy_iteration_matches_train():
    X, y = logreg.two_classes(300, 9, seed=1)
    theta = np.zeros(9, np.float32)
    for _ in range(5):
        tr.numpy_iteration(X, y, theta, 0.01)
    np.testing.assert_allclose(theta, logreg.train(X, y, 0.01, 5), rtol=1e-4, atol=1e-6)


def test_synthetic_data_is_padded(env):
    device, ctx, queue = env
    lr = tr.Logreg(ctx, queue, device, 16)
    buf = lr.alloc(128)
    lr.synthetic(buf, 100, 13)
    x = lr.get(buf.x, 128 * 16).reshape(128, 16)
    y = lr.get(buf.y, 128)
    assert np.all(np.abs(x[:100, :13]) < 1.5) and x[:100, :13].std() > 0.3
    assert not x[100:].any() and not x[:, 13:].any()
    assert y[:50].sum() == 0 and y[50:100].sum() == 50 and not y[100:].any()
    xt = lr.get(buf.xt, 128 * 16).reshape(16, 128)
    assert np.array_equal(xt, x.T)


def test_bad_shapes_raise(env, small):
    device, ctx, queue = env
    lr, buf, X, y = small
    with pytest.raises(ValueError):
        tr.Logreg(ctx, queue, device, 30)            # not a multiple of 8
    with pytest.raises(ValueError):
        lr.alloc(1000)                               # not a multiple of 64
    with pytest.raises(ValueError):
        lr.scores("cols", buf, 998)                  # a prefix that is not a multiple of 4
    with pytest.raises(ValueError):
        lr.scores("cols", buf, 5000)                 # more examples than the buffers hold
    with pytest.raises(ValueError):
        tr.examples_that_fit(device, 2**40, 2**20)


def test_examples_that_fit(env):
    device, _, _ = env
    J = tr.examples_that_fit(device, 296, 2**30)
    assert J & (J - 1) == 0 and 4 * J * 296 <= device.max_mem_alloc_size


def test_launch_sizes_cover_the_data_and_name_the_groups(small):
    """sizes() is what the methods enqueue: every global size is a whole number of
    work-groups, and it covers the examples (float4s for the transposed kernels)."""
    lr, buf, X, y = small
    n, L = len(y), lr.local
    for variant, items in {"rows": n, "rows4": n, "cols": -(-n // 4), "feature": lr.kp}.items():
        (g,), (loc,) = lr.sizes(variant, n)
        assert g % loc == 0 and items <= g < items + loc, variant
    assert lr.sizes("groups", n) == ((lr.kp * L,), (L,))
    assert lr.sizes("blocks", n) == ((lr.kp // lr.kb * L, lr.chunks(n)), (L, 1))
    assert lr.sizes("tiled", 128)[1] == (lr.tile, lr.rows)
    rows = dict((label, size) for label, _, size in lr.resource_rows(["cols", "tiled", "feature", "fused"]))
    assert rows == {"cols": L, "tiled": lr.tile * lr.rows, "feature": min(32, L), "fused": L}
    with pytest.raises(ValueError, match="unknown kernel"):
        lr.sizes("diagonal", n)
    assert "not known" not in gb.resource_table(lr.resource_rows(["cols"]), lr.device).split("\n")[2].split("|")[7]
