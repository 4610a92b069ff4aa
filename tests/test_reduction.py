"""gpubook.chapters.reduction: every step of chapter 3's device-wide sum, on the local device.

Float32 sums are compared with NumPy's float64 sum of the same float32 data.
The data are positive, so the relative error of any summation order is at most
h * 2**-24 for a longest chain of h additions; rounding errors of random sign
make it far smaller in practice. 1e-5 covers every plan used here.
"""
import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import gpubook as gb
from gpubook.chapters.reduction import STEPS, DeviceSum
from gpubook.device import default_work_group

RTOL = 1e-5


@pytest.fixture(scope="module")
def ctx_queue():
    return gb.make_queue()


def to_device(queue, x):
    return cla.to_device(queue, x)


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("n", [1, 3, 64, 255, 256, 257, 4096, 4099, 100_003, 2**20])
def test_every_step_sums_correctly(ctx_queue, step, n):
    ctx, queue = ctx_queue
    x = np.random.default_rng(n).random(n, dtype=np.float32)
    total = DeviceSum(ctx, queue, step, largest=64).sum(to_device(queue, x), n)
    ref = x.sum(dtype=np.float64)
    assert abs(total - ref) <= RTOL * ref


@pytest.mark.parametrize("step", STEPS)
def test_sums_a_prefix_of_a_larger_buffer(ctx_queue, step):
    # Values past n must be ignored (bounds checks, not padding in the buffer).
    ctx, queue = ctx_queue
    x = np.ones(10_000, np.float32)
    x[7_777:] = 1e6
    assert DeviceSum(ctx, queue, step, largest=32).sum(to_device(queue, x), 7_777) == 7_777


@pytest.mark.parametrize("step", ["3_first_add", "5_unrolled"])
@pytest.mark.parametrize("wg", [1, 2, 16, 256])
def test_work_group_sizes(ctx_queue, step, wg):
    ctx, queue = ctx_queue
    n = 12_345
    x = np.random.default_rng(wg).random(n, dtype=np.float32)
    if wg > gb.launch.device_max(queue.device):   # a small device says so (PoCL at 32)
        with pytest.raises(ValueError, match=f"work-group size {wg} exceeds this device's maximum"):
            DeviceSum(ctx, queue, step, work_group=wg)
        return
    total = DeviceSum(ctx, queue, step, work_group=wg, groups_per_cu=3, unroll=3).sum(to_device(queue, x), n)
    assert abs(total - x.sum(dtype=np.float64)) <= RTOL * x.sum(dtype=np.float64)


def test_repeated_sums_reuse_buffers(ctx_queue):
    ctx, queue = ctx_queue
    red = DeviceSum(ctx, queue, "4_multi")
    a, b = np.full(5_000, 2, np.float32), np.full(5_000, 3, np.float32)
    assert red.sum(to_device(queue, a), 5_000) == 10_000
    assert red.sum(to_device(queue, b), 5_000) == 15_000
    assert len(red._scratch) == 1


class FakeDevice:
    max_work_group_size = 1024


def test_plans():
    red = DeviceSum.__new__(DeviceSum)  # only the arithmetic of the plan, no device
    red.work_group, red.max_groups = 256, 10 * 8
    red.step = "1_interleaved"
    assert red.plan(2**20) == [(2**20, 4096), (4096, 16), (16, 1)]
    red.step = "3_first_add"
    assert red.plan(2**20 + 1) == [(2**20 + 1, 2049), (2049, 5), (5, 1)]
    red.step = "5_unrolled"
    assert red.plan(2**28) == [(2**28, 80), (80, 1)]
    assert red.plan(1) == [(1, 1)]
    assert default_work_group(FakeDevice) == 256
    FakeDevice.max_work_group_size = 100
    assert default_work_group(FakeDevice) == 64


def test_bad_shapes_raise_clear_errors(ctx_queue):
    ctx, queue = ctx_queue
    with pytest.raises(ValueError, match="not a power of two"):
        DeviceSum(ctx, queue, "2_sequential", work_group=96)
    too_big = 1 << queue.device.max_work_group_size.bit_length()  # a power of two above the maximum
    with pytest.raises(ValueError, match="exceeds"):
        DeviceSum(ctx, queue, "2_sequential", work_group=too_big)
    with pytest.raises(ValueError, match="unknown step"):
        DeviceSum(ctx, queue, "6_magic")
    red = DeviceSum(ctx, queue, "2_sequential")
    with pytest.raises(ValueError, match="1 to 2"):
        red.plan(0)


class _Capped:
    """A built kernel whose compiler allows only `cap` work-items (as Mesa's
    rusticl reports for some kernels on a device that says 1,024)."""

    def __init__(self, knl, cap):
        self._knl, self._cap = knl, cap

    def get_work_group_info(self, what, device):
        return min(self._cap, self._knl.get_work_group_info(what, device))

    def __call__(self, *args, **kwargs):
        return self._knl(*args, **kwargs)


def test_default_work_group_follows_the_built_kernel(monkeypatch):
    import pyopencl.array as cla
    from gpubook.chapters import reduction as rd
    real = rd.steps.kernel
    monkeypatch.setattr(rd.steps, "kernel", lambda *a, **k: _Capped(real(*a, **k), 8))
    ctx, queue = gb.make_queue()
    x = np.random.default_rng(2).random(10_001).astype(np.float32)
    buf = cla.to_device(queue, x)
    for step in rd.STEPS:
        ds = rd.DeviceSum(ctx, queue, step)
        assert ds.work_group == min(8, gb.device.default_work_group(queue.device))
        assert abs(ds.sum(buf, x.size) - x.sum(dtype=np.float64)) < 1e-4 * x.size
    with pytest.raises(ValueError, match="exceeds what kernels/reduction/1_interleaved.cl allows"):
        rd.DeviceSum(ctx, queue, "1_interleaved", work_group=16)


def test_round_fit_takes_the_groups_below_a_warp():
    """Rounds cost alike below a warp and more from a full warp on: the line
    through the sizes below a warp gives that cost and a positive fixed part,
    where a line through every size would give a negative one."""
    import json
    import pathlib

    from gpubook.chapters.reduction.pages import round_fit

    made = {n: 100e-9 + 80e-9 * np.log2(n) + (1e-9 * n * n if n >= 32 else 0.0)
            for n in (1, 2, 4, 8, 16, 32, 64, 128, 256)}
    slope, besides = round_fit(made)
    assert slope == pytest.approx(80e-9) and besides == pytest.approx(100e-9)
    assert round_fit({1: 1e-7, 2: 2e-7, 64: 9e-7})[0] == pytest.approx(7e-7 / 5)
    path = pathlib.Path(__file__).parent.parent / "results/nvidia-h200/03_reduction.json"
    rest = {int(n): s for n, s in
            json.loads(path.read_text())["data"]["reduction_only_s"].items()}
    slope, besides = round_fit(rest)
    assert slope > 0 and besides > 0
