"""Tensor cores through inline PTX (gpubook.tensor): the gate says why not on a
device that cannot run them, and the kernels' portable parts (tiling, bounds,
the lower triangle, the 3xTF32 split, the roofs' bookkeeping) run on any
device through the emulated warp product. The PTX itself is checked on the
NVIDIA host by tools/check_tensor.py."""
import numpy as np
import pytest

import gpubook as gb
from gpubook import tensor
from gpubook.chapters import covariance as cv

TINY = {"T": 16, "WARPS_M": 1, "WARPS_N": 1, "KC": 8}


@pytest.fixture(scope="module")
def cl_env():
    device, ctx, queue, _, _ = gb.open_device()
    return device, ctx, queue


def test_the_gate_says_why_in_one_line(cl_env):
    device, ctx, queue = cl_env
    ok, reason = tensor.available(device)
    if "nvidia" in device.platform.name.lower():
        pytest.skip("an NVIDIA platform: tools/check_tensor.py checks the tensor cores there")
    assert ok is False and "\n" not in reason and "NVIDIA" in reason
    with pytest.raises(tensor.TensorCoreError, match="not NVIDIA's OpenCL"):
        tensor.XtX(ctx, queue, "3xtf32")
    with pytest.raises(tensor.TensorCoreError):
        tensor.mma_check(ctx, queue, "tf32")


def test_tf32_rounding_and_split():
    x = np.array([1.0, 1.0 + 2**-11, 1.0 + 2**-10 + 2**-11, -3.0000002, 1e-30, 0.0], np.float32)
    hi, lo = tensor.split_tf32(x)
    assert np.all(hi.view(np.uint32) & 0x1FFF == 0) and np.all(lo.view(np.uint32) & 0x1FFF == 0)
    assert hi[1] == np.float32(1.0 + 2**-10)            # a tie rounds away from zero
    assert tensor.tf32_truncate(x)[1] == 1.0
    x = np.random.default_rng(0).standard_normal(10_000).astype(np.float32)
    hi, lo = tensor.split_tf32(x)
    assert np.max(np.abs((hi.astype(np.float64) - x) / x)) <= 2**-11
    assert np.max(np.abs((hi.astype(np.float64) + lo - x) / x)) <= 2**-21


def test_plain_tf32_misses_the_chapter_tolerance_and_the_split_meets_it():
    """The rounding of the operands alone, summed exactly, on chapter 6's data."""
    d = cv.make_data(4096, 96)
    xc = (d.x - d.x.mean(axis=0)).astype(np.float32)
    ref = cv.reference(d.x) * len(xc)
    raw = cv.error(tensor.xtx_model(xc, "tf32-raw"), ref)
    split = cv.error(tensor.xtx_model(xc, "3xtf32"), ref)
    assert raw > 1e-4 > 1e-6 > split
    assert cv.error(tensor.xtx_model(xc, "tf32"), ref) < raw  # rounding first is better than truncating


@pytest.mark.parametrize("kind", ["tf32", "f64"])
def test_one_warp_check_emulated(cl_env, kind):
    _, ctx, queue = cl_env
    out = tensor.mma_check(ctx, queue, kind, ksteps=3, emulate=True)
    assert out["ok"], out["summary"]
    assert "(emulated)" in out["summary"]


def test_peak_loop_sums_what_the_layout_says(cl_env):
    """Every warp's written sums add up to chains x iters x the sum of A B, with A and B placed
    from the input as the m16n8k8 fragment layout says."""
    _, ctx, queue = cl_env
    chains, iters = 2, 3
    _, flops, sums = tensor.mma_peak(ctx, queue, "tf32", iters=iters, chains=chains, groups=2, repeats=1,
                                     emulate=True)
    warps = len(sums) // tensor.WARP
    assert flops == warps * iters * chains * 2048
    src = (np.random.default_rng(0).standard_normal(192) * 1e-3).astype(np.float32)
    a, b = np.zeros((16, 8)), np.zeros((8, 8))
    for lane in range(32):
        g, t = divmod(lane, 4)
        a[g, t], a[g + 8, t], a[g, t + 4], a[g + 8, t + 4] = src[[lane, lane + 32, lane + 64, lane + 96]]
        b[t, g], b[t + 4, g] = src[[lane + 128, lane + 160]]
    a, b = (tensor.tf32_truncate(m.astype(np.float32)).astype(np.float64) for m in (a, b))
    per_warp = sums.reshape(warps, tensor.WARP).sum(axis=1)
    assert np.allclose(per_warp, chains * iters * np.sum(a @ b), rtol=1e-4)


@pytest.mark.parametrize("m, n", [(203, 45), (8, 16), (1, 3)])
def test_xtx_emulated_on_odd_sizes(cl_env, m, n):
    """Sizes that no tile or MMA shape divides: the lower triangle right, nothing written above it."""
    _, ctx, queue = cl_env
    x = np.random.default_rng(m).standard_normal((m, n)).astype(np.float32)
    ref = x.astype(np.float64).T @ x.astype(np.float64)
    for mode in ("tf32-raw", "3xtf32"):
        s = tensor.XtX(ctx, queue, mode, shape=TINY, emulate=True).product(x)
        assert not np.any(np.triu(s, 1))
        # the kernel adds in float32 what the model adds exactly
        assert tensor.lower_error(s, tensor.xtx_model(x, mode)) < 1e-5
    assert tensor.lower_error(s, ref) < 1e-5  # 3xtf32 keeps float32's accuracy


def test_bad_input_is_refused(cl_env):
    _, ctx, queue = cl_env
    with pytest.raises(ValueError, match="unknown mode"):
        tensor.XtX(ctx, queue, "fp8", emulate=True)
    with pytest.raises(ValueError, match="T must be a multiple"):
        tensor.XtX(ctx, queue, "tf32", shape={"T": 24, "WARPS_M": 1, "WARPS_N": 1, "KC": 8}, emulate=True)
    with pytest.raises(ValueError, match="NaN or infinite"):
        tensor.XtX(ctx, queue, "tf32", shape=TINY, emulate=True).product(np.full((4, 4), np.inf))
    with pytest.raises(ValueError, match="unknown kind"):
        tensor.mma_check(ctx, queue, "bf16", emulate=True)
