"""Chapter 6's streamed covariance, its tile pairs, chapter 10's covariance over
devices and chapter 5's uploads on input the property tests found mishandled:
a Fortran-order or float64 block, no rows, no features, and an Inf in a column,
where the shifted formula gave -Inf for some pairs and NumPy gives NaN."""
import numpy as np
import pytest

import gpubook as gb
from gpubook import stream as oc, xtx
from gpubook.chapters import covariance as cv, multi
from gpubook.chapters.transpose import steps as tr

TILE = cv.shape(32, 4, 4, 8, stages=2)


@pytest.fixture(scope="module")
def env():
    device, ctx, queue, _, _ = gb.open_device()
    return device, ctx, queue


def test_an_inf_makes_its_rows_and_columns_nan_as_numpy(env):
    device, ctx, _ = env
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    x[1, 2] = np.inf
    ref = xtx.reference(x)
    lanes = [multi.Lane(device)]
    for c in (oc.Stream(ctx, device, 3, oc.stream_bytes(3, 64), TILE).run(x),
              cv.TilePairs(ctx, device, 3, 0, TILE, width=32, rows=64).run(x),
              multi.Covariance(lanes, 3, oc.stream_bytes(3, 64), TILE, m=4).run(x)):
        assert np.array_equal(np.isnan(c), np.isnan(ref))
        assert np.allclose(c[:2, :2], ref[:2, :2], rtol=1e-5)


def test_bad_host_rows_are_refused_before_any_copy(env):
    device, ctx, _ = env
    x = np.ones((5, 3), np.float32)
    s = oc.Stream(ctx, device, 3, oc.stream_bytes(3, 64), TILE)
    mc = multi.Covariance([multi.Lane(device)], 3, oc.stream_bytes(3, 64), TILE, m=5)
    tp = cv.TilePairs(ctx, device, 3, 0, TILE, width=32, rows=64)
    for run in (s.run, tp.run, mc.run):
        with pytest.raises(ValueError, match="C-contiguous"):
            run(np.asfortranarray(x))
        with pytest.raises(ValueError, match="at least 1 row"):
            run(x[:0])
        with pytest.raises(TypeError, match="float32"):
            run(x.astype(np.float64))
    s.begin(x[0])
    with pytest.raises(TypeError, match="rows_x: expected a NumPy array of float32"):
        s.add(x.astype(np.float64))          # was copied as float32 bytes: a wrong sum
    with pytest.raises(ValueError, match="n must be at least 1"):
        oc.Stream(ctx, device, 0, 10**6, TILE)
    with pytest.raises(TypeError, match="n must be an integer"):
        cv.TilePairs(ctx, device, 2.5, 0, TILE, width=32, rows=64)


def test_chapter5_upload_checks_data_labels_and_weights(env):
    device, ctx, queue = env
    lr = tr.Logreg(ctx, queue, device, 16)
    buf = lr.alloc(64)
    x, y = np.ones((8, 5)), np.array([0, 1] * 4)
    with pytest.raises(TypeError, match="X must hold real numbers"):
        lr.upload(buf, x.astype(complex), y)        # was cast to float32, dropping the imaginary part
    with pytest.raises(ValueError, match="labels must be 0 or 1"):
        lr.upload(buf, x, y * 2)
    with pytest.raises(ValueError, match="X must be finite"):
        lr.upload(buf, np.where(x > 0, np.nan, x), y)
    lr.upload(buf, x, y)
    with pytest.raises(ValueError, match="theta must hold 5 weights"):
        lr.train("fused", buf, 8, 0.1, 2, theta0=np.zeros(3))   # was padded with zeros silently
    with pytest.raises(ValueError, match="rate must be a finite"):
        lr.train("fused", buf, 8, np.nan, 2)
