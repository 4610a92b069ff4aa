"""Chapter 7's entry points on inputs a reader may give them (issue 46): a large
value, a NaN or an Inf in the scan; n beyond the buffers, wrong dtypes and
layouts; labels other than 0 and 1; a device without 64-bit atomics; a kernel
that allows fewer work-items than the device. Each gives NumPy's float64 answer
(at the tolerance stated) or a clear ValueError or TypeError."""
from types import SimpleNamespace

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import gpubook as gb
from gpubook.chapters import scan as sc


@pytest.fixture(scope="module")
def cl_env():
    device, ctx, queue, _, _ = gb.open_device()
    return device, ctx, queue


def device_scan(cl_env, x, step, stage=True):
    """The device's inclusive scan of x, in tiles of 8 floats per work-item."""
    device, ctx, queue = cl_env
    ds = sc.DeviceScan(ctx, queue, step, wg=gb.launch.largest(device, 64), items=8, stage=stage)
    src, dst = cla.to_device(queue, x), cla.empty(queue, x.size, np.float32)
    ds.enqueue(src.data, dst.data, x.size, np.float32)
    return dst.get()


# --- 1. the exclusive prefix without subtraction ------------------------------------------

@pytest.mark.parametrize("step", sc.DEVICE_STEPS)
@pytest.mark.parametrize("stage", [False, True])
@pytest.mark.parametrize("at, value", [(100, 1e9), (0, 1e9), (4999, 1e9), (100, np.nan),
                                       (3000, np.inf), (700, -np.inf)])
def test_a_large_value_nan_or_inf_reaches_only_the_outputs_that_include_it(cl_env, step, stage, at,
                                                                           value):
    """Ones with one odd value at `at`: the outputs before it are exact (at + 1 ones at
    most), those from it on match float64 within 1e-6 relative (float32's rounding of a
    1e9 plus a few thousand ones), NaN and Inf where np.cumsum has them."""
    x = np.ones(5000, np.float32)
    x[at] = value
    got = device_scan(cl_env, x, step, stage)
    ref = np.cumsum(x.astype(np.float64))
    assert np.array_equal(got[:at], ref[:at])
    np.testing.assert_allclose(got[at:], ref[at:], rtol=1e-6)


# --- 2. DeviceScan checks n, dtype and layout before it launches ----------------------------

def test_device_scan_refuses_n_beyond_its_buffers_and_wrong_arrays(cl_env):
    device, ctx, queue = cl_env
    ds = sc.DeviceScan(ctx, queue, sc.DEVICE_STEPS[1])
    src, dst = cla.to_device(queue, np.ones(1000, np.float32)), cla.empty(queue, 500, np.float32)
    with pytest.raises(ValueError, match=r"n = 1,001 is more than src holds \(1,000 float32 items\)"):
        ds.enqueue(src.data, src.data, 1001, np.float32)
    with pytest.raises(ValueError, match=r"n = 600 is more than dst holds \(500 float32 items\)"):
        ds.enqueue(src, dst, 600)
    with pytest.raises(TypeError, match="src: expected float32 items, got a pyopencl array of float64"):
        ds.enqueue(cla.to_device(queue, np.ones(10)), dst, 10)
    with pytest.raises(ValueError, match="src: expected a contiguous pyopencl array"):
        ds.enqueue(src[::2], dst, 10)
    with pytest.raises(ValueError, match="src: expected a contiguous pyopencl array"):
        ds.enqueue(src[10:], dst, 10)   # starts at an offset the kernels do not take
    with pytest.raises(TypeError, match="src: expected a cl.Buffer or a pyopencl array of float32, got ndarray"):
        ds.enqueue(np.ones(10, np.float32), dst, 10)
    with pytest.raises(TypeError, match="n: expected an integer count, got float"):
        ds.enqueue(src, dst, 10.0)
    with pytest.raises(ValueError, match="n: expected 0 to 4,294,967,295, got 4,294,967,296"):
        ds.enqueue(src, dst, 2**32)
    with pytest.raises(ValueError, match=r"items: expected a multiple of 4 \(4 or more\), got 0"):
        sc.DeviceScan(ctx, queue, sc.DEVICE_STEPS[0], items=0)


@pytest.mark.parametrize("step", sc.DEVICE_STEPS)
def test_device_scan_of_nothing_launches_nothing_and_pyopencl_arrays_work(cl_env, step):
    device, ctx, queue = cl_env
    ds = sc.DeviceScan(ctx, queue, step)
    x = np.random.default_rng(3).random(777, dtype=np.float32)
    src, dst = cla.to_device(queue, x), cla.zeros(queue, x.size, np.float32)
    assert ds.enqueue(src, dst, 0) == [] and not dst.get().any()
    ds.enqueue(src, dst, np.int64(x.size))
    ref = np.cumsum(x, dtype=np.float64)
    assert np.max(np.abs(dst.get() - ref)) <= 1e-6 * ref[-1]


# --- 3. the fitness checks its labels, n and scores ---------------------------------------

BAD = np.array([2, 0, 0, 1, 0, 0])


@pytest.mark.parametrize("step", sc.LIST_STEPS)
def test_list_fitness_refuses_what_fitness_reference_refuses(cl_env, step):
    _, ctx, queue = cl_env
    lf = sc.ListFitness(ctx, queue, step)
    with pytest.raises(ValueError, match=r"labels must be 0 \(negative\) or 1 \(positive\); found 2 "):
        sc.fitness_reference(np.linspace(1, 0, 6), BAD)
    message = r"sorted_labels must be 0 \(negative\) or 1 \(positive\); found 2 \(1 of 6 labels\)"
    with pytest.raises(ValueError, match=message):
        lf.fitness(BAD, 6)                                               # NumPy, copied
    with pytest.raises(ValueError, match=message):
        lf.fitness(cla.to_device(queue, BAD.astype(np.int32)), 6)        # on the device
    wraps = np.array([2**32 + 1, 0, 1, 0])                               # 1 as int32
    with pytest.raises(ValueError, match="found 4294967297"):
        lf.fitness(wraps, 4)


@pytest.mark.parametrize("step", sc.LIST_STEPS)
def test_list_fitness_refuses_n_of_0_1_and_beyond_the_buffer(cl_env, step):
    _, ctx, queue = cl_env
    lf = sc.ListFitness(ctx, queue, step)
    labels = np.array([1, 0, 1, 0], np.int32)
    for n in (0, 1):
        with pytest.raises(ValueError, match=f"n = {n}: fewer than 2 examples"):
            lf.fitness(labels, n)
    with pytest.raises(ValueError, match=r"n = 5 is more than sorted_labels holds \(4 int32 items\)"):
        lf.fitness(cla.to_device(queue, labels).data, 5, np.int32)
    with pytest.raises(TypeError, match="sorted_labels: expected int32 items"):
        lf.fitness(cla.to_device(queue, labels.astype(np.int64)), 4)
    # a bare buffer carries no dtype: an int64 one read as int32 would be wrong in silence
    wide = cla.to_device(queue, labels.astype(np.int64)).data
    with pytest.raises(TypeError, match="carries no dtype"):
        lf.fitness(wide, 4)
    with pytest.raises(TypeError, match="expected int32 items, got a buffer of int64"):
        lf.fitness(wide, 4, np.int64)
    ref = sc.fitness_reference(-np.arange(4.0), labels)
    assert lf.fitness(cla.to_device(queue, labels), 4) == pytest.approx(ref, abs=1e-12)


def test_population_checks_scores_and_labels_and_scores_no_models(cl_env):
    _, ctx, queue = cl_env
    pop = sc.Population(ctx, queue, 6, shortcut=False)
    scores = np.linspace(1, 0, 12, dtype=np.float32).reshape(2, 6)
    with pytest.raises(ValueError, match=r"labels must be 0 \(negative\) or 1 \(positive\); found 2 "):
        pop.fitness(scores, BAD)
    nan = scores.copy()
    nan[1, 3] = np.nan
    with pytest.raises(ValueError, match="NaN scores"):
        pop.fitness(nan, np.array([1, 0, 0, 1, 0, 0]))
    with pytest.raises(TypeError, match="scores: expected a NumPy array of float32, got float64"):
        pop.fitness(scores.astype(np.float64), np.array([1, 0, 0, 1, 0, 0]))
    with pytest.raises(ValueError, match=r"scores: built for n = 6, expected models x 6, got shape \(6,\)"):
        pop.fitness(scores[0], np.array([1, 0, 0, 1, 0, 0]))
    assert pop.fitness(scores[:0], np.array([1, 0, 0, 1, 0, 0])).shape == (0,)
    with pytest.raises(TypeError, match="n: expected an integer count"):
        sc.Population(ctx, queue, 6.5, shortcut=True)


# --- 4. the single pass needs 64-bit atomics ----------------------------------------------

def test_single_pass_says_why_it_cannot_run_without_64_bit_atomics(cl_env):
    llvmpipe = SimpleNamespace(name="llvmpipe (LLVM 15.0.6, 256 bits)",
                               extensions="cl_khr_fp16 cl_khr_byte_addressable_store")
    assert sc.single_pass_unavailable(llvmpipe) == (
        "llvmpipe (LLVM 15.0.6, 256 bits) has no cl_khr_int64_base_atomics (64-bit atomics), which the "
        "single pass's look-back needs: the reduce-then-scan runs in its place")
    device, _, _ = cl_env
    if "cl_khr_int64_base_atomics" in device.extensions.split():
        assert sc.single_pass_unavailable(device) is None


def test_single_pass_runs_as_reduce_then_scan_where_it_cannot_run(cl_env, monkeypatch):
    _, ctx, queue = cl_env
    monkeypatch.setattr(sc.steps, "single_pass_unavailable", lambda device: "no 64-bit atomics here")
    ds = sc.DeviceScan(ctx, queue, sc.DEVICE_STEPS[1], look=1)
    assert (ds.step, ds.fallback) == (sc.DEVICE_STEPS[0], "no 64-bit atomics here")
    assert [k.function_name for k in ds.kernels] == ["tile_sums", "scan_sums", "scan_tiles"]
    x = np.random.default_rng(4).random(10_001, dtype=np.float32)
    src, dst = cla.to_device(queue, x), cla.empty(queue, x.size, np.float32)
    ds.enqueue(src, dst, x.size)
    ref = np.cumsum(x, dtype=np.float64)
    assert np.max(np.abs(dst.get() - ref)) <= 1e-5 * ref[-1]
    assert sc.DeviceScan(ctx, queue, sc.DEVICE_STEPS[0]).fallback is None


# --- 5. default work-groups come from the built kernel -------------------------------------

def test_default_work_groups_fit_a_kernel_that_allows_32_work_items(cl_env, monkeypatch):
    """As on Mesa's llvmpipe: the device allows more work-items than its kernels do."""
    device, ctx, queue = cl_env
    real = gb.launch.kernel_max
    monkeypatch.setattr(gb.launch, "kernel_max", lambda kern, dev: min(32, real(kern, dev)))
    scores, labels = sc.make_population(5, 300)
    pop = sc.Population(ctx, queue, 300, shortcut=False)
    assert pop.wg <= 32
    assert np.max(np.abs(pop.fitness(scores, labels) - sc.fitness_reference(scores, labels))) <= 1e-6
    lf = sc.ListFitness(ctx, queue, sc.LIST_STEPS[1], items=4)
    ds = sc.DeviceScan(ctx, queue, sc.DEVICE_STEPS[0])
    assert lf.wg <= 32 and ds.wg <= 32 and ds.tile == 16 * ds.wg
    y = labels[sc.order(scores[0])].astype(np.int32)
    assert lf.fitness(y, 300) == pytest.approx(sc.fitness_reference(scores[0], labels), abs=1e-12)
    if gb.launch.device_max(device) >= 64:
        with pytest.raises(gb.LaunchError, match="exceeds this kernel's maximum"):
            sc.Population(ctx, queue, 300, shortcut=False, wg=64)


@pytest.mark.parametrize("shortcut", [False, True])
def test_population_ties_minus_zero_with_plus_zero(cl_env, shortcut):
    """-0.0 and +0.0 are one score: tied, they go to the lower index. Rounded scores
    (sc.make_population) hold both; Mesa's llvmpipe folded the kernel's old `x + 0.0f`
    to `x` and sorted them apart (fitness off by 7e-4)."""
    _, ctx, queue = cl_env
    scores, labels = sc.make_population(8, 256)
    zeros = scores == 0
    assert np.signbit(scores[zeros]).any() and (~np.signbit(scores[zeros])).any()
    got = sc.Population(ctx, queue, 256, shortcut, wg=32).fitness(scores, labels)
    assert np.max(np.abs(got - sc.fitness_reference(scores, labels))) <= 1e-6
    flipped = np.where(zeros, -scores, scores).astype(np.float32)   # every zero's sign swapped
    assert np.array_equal(sc.Population(ctx, queue, 256, shortcut, wg=32).fitness(flipped, labels),
                          got)


def test_device_scan_refuses_a_bare_buffer_whose_dtype_it_cannot_know(cl_env):
    _, ctx, queue = cl_env
    ds = sc.DeviceScan(ctx, queue, "3_reduce_then_scan")
    x64 = cla.to_device(queue, np.ones(1000))                 # float64
    dst = cla.empty(queue, 2000, np.float32)
    with pytest.raises(TypeError, match="src is a bare cl.Buffer, which carries no dtype"):
        ds.enqueue(x64.data, dst.data, 1000)                  # read as float32, it was wrong
    with pytest.raises(TypeError, match="src: expected float32 items, got a buffer of float64"):
        ds.enqueue(x64.data, dst.data, 1000, np.float64)
