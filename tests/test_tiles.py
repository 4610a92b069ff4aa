"""The typed register-tile kernel (gpubook.tiles) against NumPy float64: float
and double, sizes no tile divides, sizes smaller than a tile, split rows,
offsets and strides, and shapes the device cannot run."""
from types import SimpleNamespace

import numpy as np
import pyopencl as cl
import pytest

import gpubook as gb
from gpubook import tiles


@pytest.fixture(scope="module")
def cl_env():
    device, ctx, queue, _, _ = gb.open_device()
    return device, ctx, queue


def product(cl_env, dtype, shape, rows, m, n, lds=None, offs=(0, 0, 0), chunk=None, alpha=1.0,
            accumulate=False, triangle=False, aligned=False, seed=0):
    """(device result, float64 reference) of C (+)= alpha A'B."""
    _, ctx, queue = cl_env
    lda, ldb, ldc = lds or (m, n, n)
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(offs[0] + rows * lda).astype(dtype)
    b = rng.standard_normal(offs[1] + rows * ldb).astype(dtype)
    chunks = 1 if chunk is None else -(-rows // chunk)
    stride = m * ldc
    c0 = rng.standard_normal(offs[2] + chunks * stride).astype(dtype)
    mf = cl.mem_flags
    bufs = [cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=h) for h in (a, b, c0)]
    tiles.launch(queue, shape, dtype, bufs[0], offs[0], lda, bufs[1], offs[1], ldb, bufs[2], offs[2], ldc, m, n,
                 0, rows, k_chunk=chunk, c_stride=stride, alpha=alpha, accumulate=accumulate,
                 triangle=triangle, aligned=aligned).wait()
    c = np.empty_like(c0)
    cl.enqueue_copy(queue, c, bufs[2])
    am = a[offs[0]:].reshape(rows, lda)[:, :m].astype(np.float64)
    bm = b[offs[1]:].reshape(rows, ldb)[:, :n].astype(np.float64)
    got, ref = [], []
    for h in range(chunks):
        r0, r1 = (0, rows) if chunk is None else (h * chunk, min(rows, (h + 1) * chunk))
        start = offs[2] + h * stride
        before = c0[start:start + stride].reshape(m, ldc)[:, :n].astype(np.float64)
        ref.append(alpha * am[r0:r1].T @ bm[r0:r1] + (before if accumulate else 0))
        got.append(c[start:start + stride].reshape(m, ldc)[:, :n].astype(np.float64))
    return np.array(got), np.array(ref)


def rel(got, ref):
    return np.max(np.abs(got - ref)) / np.max(np.abs(ref))


SMALL = {"TM": 32, "TN": 32, "WM": 4, "WN": 4, "K": 8}


@pytest.mark.parametrize("stages", [1, 2])
@pytest.mark.parametrize("prefetch", [0, 1])
@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-5), (np.float64, 1e-13)])
def test_sizes_no_tile_divides(cl_env, dtype, tol, stages, prefetch):
    if dtype == np.float64 and not gb.has_fp64(cl_env[0]):
        pytest.skip("no fp64 on this device")
    shape = {**SMALL, "STAGES": stages, "PREFETCH": prefetch}
    assert rel(*product(cl_env, dtype, shape, 45, 37, 53)) < tol          # no tile divides
    assert rel(*product(cl_env, dtype, shape, 5, 3, 7)) < tol             # smaller than one tile
    assert rel(*product(cl_env, dtype, shape, 70, 37, 53, lds=(41, 60, 61), offs=(3, 5, 7),
                        alpha=-1.0, accumulate=True)) < tol


def test_rectangular_work_items_and_split_rows(cl_env):
    shape = {"TM": 64, "TN": 32, "WM": 8, "WN": 4, "K": 8, "STAGES": 2}
    got, ref = product(cl_env, np.float32, shape, 100, 70, 33, chunk=32)
    assert got.shape[0] == 4 and rel(got, ref) < 1e-5


def test_aligned_triangle_in_float(cl_env):
    shape = {**SMALL, "STAGES": 2}
    got, ref = product(cl_env, np.float32, shape, 64, 64, 64, triangle=True, aligned=True)
    lower = np.kron(np.tril(np.ones((2, 2))), np.ones((32, 32))).astype(bool)   # the tiles on and below
    assert np.max(np.abs(got[0] - ref[0])[lower]) / np.max(np.abs(ref)) < 1e-5
    with pytest.raises(ValueError, match="multiples"):
        product(cl_env, np.float32, shape, 64, 60, 64, aligned=True)


def test_shapes_the_device_cannot_run_are_refused_with_a_reason():
    tiny = SimpleNamespace(max_work_group_size=64, local_mem_size=4096, name="tiny")
    ok, skipped = tiles.feasible(tiny, [SMALL, {**SMALL, "TM": 64, "TN": 64}, {**SMALL, "K": 32, "STAGES": 2},
                                        {**SMALL, "WM": 3}], np.float32)
    assert ok == [SMALL]
    reasons = [why for _, why in skipped]
    assert "256 work-items" in reasons[0] and "local memory" in reasons[1] and "multiples of 4" in reasons[2]
    assert tiles.unfit(tiny, {**SMALL, "WM": 2, "WN": 2}, np.float64) is not None   # 256 work-items again
    assert tiles.unfit(tiny, {"TM": 16, "TN": 16, "WM": 2, "WN": 2, "K": 4}, np.float64) is None


def test_double_needs_fp64(cl_env, monkeypatch):
    device, ctx, _ = cl_env
    monkeypatch.setattr(tiles, "require_fp64", lambda d: (_ for _ in ()).throw(ValueError("no fp64 support")))
    with pytest.raises(ValueError, match="fp64"):
        tiles.get_kernel(ctx, device, SMALL, np.float64)
