"""gpubook.dmma (the FP64 tensor-core product, kernels/tensor/dmma_tiles.cl)
run emulated on PoCL against NumPy float64: offsets, strides, sizes that are
not multiples of the tile or of the mma shape, chunks of rows, the triangle,
alpha and accumulation; and chapter 8's CholeskyQR2 with its products there.
On an NVIDIA GPU the same kernel runs on the tensor cores (the mma layout
itself is checked by tests/test_tensor.py)."""
import numpy as np
import pyopencl as cl
import pytest

from gpubook import dmma
from gpubook.chapters.lsq import cholqr, tsqr

SMALL = {"TM": 16, "TN": 16, "WARPS_M": 2, "WARPS_N": 1, "KC": 4}
EMULATE = True


def run(ctx, queue, a, b, c0, **kw):
    mf = cl.mem_flags
    bufs = [cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(h)) for h in (a, b, c0)]
    dmma.product(queue, kw.pop("shape", SMALL), bufs[0], kw.pop("a_off"), kw.pop("lda"), bufs[1], kw.pop("b_off"),
                 kw.pop("ldb"), bufs[2], kw.pop("c_off"), kw.pop("ldc"), emulate=EMULATE, **kw).wait()
    out = np.empty_like(c0)
    cl.enqueue_copy(queue, out, bufs[2])
    return out


@pytest.mark.parametrize("m, n, rows, chunk", [(37, 21, 29, None), (16, 16, 8, None), (5, 40, 53, 12), (1, 1, 1, None)])
def test_product_matches_numpy(fp64_env, m, n, rows, chunk):
    _, ctx, queue = fp64_env
    rng = np.random.default_rng(m * n + rows)
    lda, ldb, ldc = m + 3, n + 2, n + 1
    a = rng.standard_normal((rows + 2) * lda)
    b = rng.standard_normal((rows + 2) * ldb)
    chunks = 1 if chunk is None else -(-rows // chunk)
    c0 = rng.standard_normal(chunks * (m + 1) * ldc + 5)
    out = run(ctx, queue, a, b, c0, a_off=1, lda=lda, b_off=2, ldb=ldb, c_off=3, ldc=ldc, m=m, n=n, k_begin=1,
              k_end=1 + rows, k_chunk=chunk, c_stride=(m + 1) * ldc, alpha=-0.5, accumulate=True)
    A = a[1:1 + (rows + 1) * lda].reshape(rows + 1, lda)[1:, :m]
    B = b[2:2 + (rows + 1) * ldb].reshape(rows + 1, ldb)[1:, :n]
    expect = c0.copy()
    for h in range(chunks):
        lo, hi = (0, rows) if chunk is None else (h * chunk, min(rows, (h + 1) * chunk))
        block = expect[3 + h * (m + 1) * ldc:][:m * ldc].reshape(m, ldc)
        block[:, :n] += -0.5 * A[lo:hi].T @ B[lo:hi]
    assert np.max(np.abs(out - expect)) <= 1e-13 * max(1.0, np.max(np.abs(expect)))


def test_triangle_writes_only_tiles_on_and_below_the_diagonal(fp64_env):
    _, ctx, queue = fp64_env
    rng = np.random.default_rng(1)
    x = rng.standard_normal((23, 35))
    c0 = np.full(35 * 35, 7.0)
    out = run(ctx, queue, x, x, c0, a_off=0, lda=35, b_off=0, ldb=35, c_off=0, ldc=35, m=35, n=35, k_begin=0,
              k_end=23, triangle=True).reshape(35, 35)
    g = x.T @ x
    low = np.tril_indices(35)
    assert np.max(np.abs(out[low] - g[low])) <= 1e-13 * np.max(np.abs(g))
    assert out[0, 16] == 7.0 and out[0, 34] == 7.0          # tiles above the diagonal untouched


def test_bad_shapes_are_refused(fp64_env):
    _, ctx, queue = fp64_env
    with pytest.raises(ValueError, match="multiple of 8 WARPS_M"):
        dmma.get_kernel(ctx, queue.device, {**SMALL, "TM": 12}, emulate=True)
    with pytest.raises(ValueError, match="square tiles"):
        dmma.get_kernel(ctx, queue.device, {**SMALL, "TM": 32}, triangle=True, emulate=True)


def test_not_nvidia_says_why(fp64_env):
    device, ctx, queue = fp64_env
    from gpubook import tensor
    if tensor.available(device)[0]:
        pytest.skip("this device has the tensor cores")
    with pytest.raises(tensor.TensorCoreError, match="not NVIDIA"):
        dmma.get_kernel(ctx, device, SMALL)


def test_cholesky_qr2_with_its_products_on_the_tensor_core_kernel(fp64_env):
    _, ctx, queue = fp64_env
    rng = np.random.default_rng(5)
    a = rng.standard_normal((203, 21))
    cq = cholqr.CholeskyQR2(ctx, queue, 21, block=8, band=16, mma=True, emulate=EMULATE,
                            gram_shape=SMALL, product_shape=SMALL, update_shape=SMALL)
    r = cq.r_factor(a)
    assert cq.method == "CholeskyQR2"
    assert tsqr.gram_error(r, a) < 1e-12
    ref = np.linalg.qr(a, mode="r")
    assert np.max(np.abs(np.abs(r) - np.abs(ref))) <= 1e-10 * np.max(np.abs(ref))
