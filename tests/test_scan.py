"""Chapter 7's scans and fitness on the local OpenCL device: odd sizes, one
element, several blocks and tiles, and the fitness against NumPy with ties."""
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


def test_fitness_is_auc_minus_a_half_and_ties_go_to_the_lower_index():
    scores, labels = sc.make_population(20, 300)
    ref = sc.fitness_reference(scores, labels)
    assert ref.shape == (20,) and np.all(np.abs(ref) <= 0.5)
    for s, f in zip(scores, ref):
        assert f == pytest.approx(sc.auc(s, labels) - 0.5, abs=1e-12)
    # all scores tied: the order is the index order
    tied = np.zeros(4)
    assert sc.fitness_reference(tied, np.array([1, 0, 1, 0])) == pytest.approx(
        sc.fitness_reference(-np.arange(4.0), np.array([1, 0, 1, 0])))
    assert sc.fitness_reference(np.array([3.0, 2, 1, 0]), np.array([1, 1, 0, 0])) == pytest.approx(0.5)
    assert sc.fitness_reference(np.array([0.0, 1, 2, 3]), np.array([1, 1, 0, 0])) == pytest.approx(-0.5)


@pytest.mark.parametrize("scores, labels, message", [
    ([0.1, np.nan], [1, 0], "NaN"), ([0.1, 0.2], [1, 1], "all 2 examples are positive"),
    ([0.1], [0], "all 1 examples are negative"), ([0.1, 0.2], [1, 0, 1], "labels")])
def test_bad_input_is_refused(scores, labels, message):
    with pytest.raises(ValueError, match=message):
        sc.fitness_reference(np.array(scores), np.array(labels))


@pytest.mark.parametrize("step", sc.LIST_STEPS)
@pytest.mark.parametrize("n", [2, 33, 1000, 5000])
def test_list_fitness_exact(cl_env, step, n):
    device, ctx, queue = cl_env
    y = (np.random.default_rng(n).random(n) < 0.35).astype(np.int32)
    y[:2] = (0, 1)
    buf = cla.to_device(queue, y)
    ref = sc.fitness_reference(-np.arange(n, dtype=np.float64), y)
    for wg in {gb.launch.largest(device, w) for w in (32, 128)}:   # what a small device runs
        assert sc.ListFitness(ctx, queue, step, wg=wg, items=4).fitness(buf, n) == pytest.approx(ref, abs=1e-12)


def test_list_fitness_refuses_one_class_and_bad_work_groups(cl_env):
    _, ctx, queue = cl_env
    buf = cla.to_device(queue, np.ones(10, np.int32))
    with pytest.raises(ValueError, match="one class"):
        sc.ListFitness(ctx, queue, "1_hillis_steele").fitness(buf, 10)
    with pytest.raises(ValueError, match="not a power of two"):
        sc.ListFitness(ctx, queue, "2_work_efficient", wg=48)
    with pytest.raises(ValueError, match="unknown step"):
        sc.ListFitness(ctx, queue, "3_fast")


def _scans_like_numpy(queue, ds, sizes):
    for n in sizes:
        x = np.random.default_rng(n).random(n, dtype=np.float32)
        src, dst = cla.to_device(queue, x), cla.zeros(queue, n, np.float32)
        for _ in range(2):  # a second scan of the same size reuses the status words
            ds.enqueue(src, dst, n)
            ref = np.cumsum(x, dtype=np.float64)
            assert np.max(np.abs(dst.get() - ref)) <= 1e-5 * ref[-1]


@pytest.mark.parametrize("step", sc.DEVICE_STEPS)
@pytest.mark.parametrize("stage", [False, True])
def test_device_scan_odd_sizes_one_element_many_tiles(cl_env, step, stage):
    device, ctx, queue = cl_env
    wg = gb.launch.largest(device, 64)
    ds = sc.DeviceScan(ctx, queue, step, wg=wg, items=8, stage=stage)   # tiles of 512 at 64
    _scans_like_numpy(queue, ds, (1, 3, 511, 512, 513, 40_000))


@pytest.mark.parametrize("step", sc.DEVICE_STEPS)
def test_loads_as_they_come_scan_the_same(cl_env, step):
    """loads_first=False (each float4 stored into local memory as it comes, the
    experiment of gpubook.chapters.scan.phases) scans as the default build does."""
    device, ctx, queue = cl_env
    wg = gb.launch.largest(device, 64)
    ds = sc.DeviceScan(ctx, queue, step, wg=wg, items=8, loads_first=False)
    assert ds.options["loads_first"] is False
    _scans_like_numpy(queue, ds, (1, 513, 9_999))


def test_device_scan_refuses_bad_shapes(cl_env):
    device, ctx, queue = cl_env
    with pytest.raises(ValueError, match="multiple of 4"):
        sc.DeviceScan(ctx, queue, "4_single_pass", items=6)
    with pytest.raises(ValueError, match="look-back window"):
        sc.DeviceScan(ctx, queue, "4_single_pass", wg=gb.launch.largest(device, 32), look=64)
    with pytest.raises(ValueError, match="n: expected 0 to 4,294,967,295, got -1"):
        sc.DeviceScan(ctx, queue, "4_single_pass").enqueue(None, None, -1)


@pytest.mark.parametrize("shortcut", [False, True])
@pytest.mark.parametrize("n", [2, 100, 256, 700])
def test_population_matches_numpy_with_ties(cl_env, shortcut, n):
    _, ctx, queue = cl_env
    scores, labels = sc.make_population(17, n, levels=8)   # many ties
    scores[0, :2] = (-0.0, 0.0)                            # -0 and +0 are a tie too
    pop = sc.Population(ctx, queue, n, shortcut, wg=gb.launch.largest(queue.device, 64))
    got = pop.fitness(scores, labels)
    assert np.max(np.abs(got - sc.fitness_reference(scores, labels))) <= 1e-6


def test_population_refuses_what_has_no_fitness(cl_env):
    _, ctx, queue = cl_env
    with pytest.raises(ValueError, match="n = 1"):
        sc.Population(ctx, queue, 1, True)
    pop = sc.Population(ctx, queue, 4, True)
    with pytest.raises(ValueError, match="NaN"):
        pop.fitness(np.array([[0.1, np.nan, 0.3, 0.4]], np.float32), np.array([1, 0, 0, 1]))
    with pytest.raises(ValueError, match="built for n = 4"):
        pop.fitness(np.zeros((2, 5), np.float32), np.array([1, 0, 0, 1, 0]))


@pytest.mark.parametrize("labels, shown", [([2, 0], "2"), ([0.5, 1, 0], "0.5"), ([-1, 1, 3, 0], "-1, 3")])
def test_labels_other_than_0_and_1_are_refused(labels, shown):
    from gpubook.chapters import scan
    with pytest.raises(ValueError, match=f"labels must be 0 \\(negative\\) or 1 \\(positive\\); found {shown} "):
        scan.fitness_reference(np.linspace(0.1, 0.9, len(labels)), labels)


def test_scan_shapes_fit_the_device():
    from types import SimpleNamespace
    from gpubook.chapters import scan
    small = SimpleNamespace(name="llvmpipe", max_work_group_size=1024, local_mem_size=32768)  # Mesa's llvmpipe
    shapes, skipped = scan.scan_shapes(small, ((128, 32), (256, 16), (512, 16), (256, 8)))
    assert shapes == [(128, 32), (256, 16), (256, 8)]  # 512 x 16 needs 38,164 bytes
    assert skipped == [((512, 16), "38,164 bytes of local memory requested; llvmpipe has 32,768")]
    assert scan.scan_local_bytes(512, 16) == 38164
    assert scan.scan_shapes(SimpleNamespace(name="d", max_work_group_size=256, local_mem_size=65536),
                            ((128, 32), (512, 16)))[0] == [(128, 32)]


def test_tile_shapes_fill_each_work_group_size_s_local_memory():
    """The shapes come from the device's limits: at each work-group size, the most
    items per work-item whose staged tile fits its local memory."""
    from types import SimpleNamespace
    from gpubook.chapters import scan
    h200 = SimpleNamespace(name="H200", max_work_group_size=1024, local_mem_size=49152)
    assert scan.tile_shapes(h200) == ([(128, 32), (256, 32), (512, 16), (1024, 8)], [])
    llvmpipe = SimpleNamespace(name="llvmpipe", max_work_group_size=1024, local_mem_size=32768)
    shapes, skipped = scan.tile_shapes(llvmpipe)
    assert shapes == [(128, 32), (256, 16), (512, 8)]
    assert skipped == [((1024, 8), "42,260 bytes of local memory requested; llvmpipe has 32,768")]
    for wg, items in shapes:                  # the most that fit: twice the items would not
        assert scan.scan_local_bytes(wg, items) <= 32768 < scan.scan_local_bytes(wg, 2 * items)
    tiny = SimpleNamespace(name="tiny", max_work_group_size=64, local_mem_size=65536)
    assert scan.tile_shapes(tiny)[0] == [(64, 32)]
    for sizes, items in (((), (8,)), ((128,), ()), ((0,), (8,)), ((128,), (0,))):
        with pytest.raises(ValueError, match="tile_shapes needs"):
            scan.tile_shapes(h200, sizes, items)


def test_scan_shapes_stand_in_when_none_fits():
    """A device of 64 work-items per group runs none of the chapter's shapes: the
    largest work-group that fits stands in, with the first shape's ITEMS."""
    from types import SimpleNamespace
    from gpubook.chapters import scan
    tiny = SimpleNamespace(name="tiny", max_work_group_size=64, local_mem_size=65536)
    shapes, skipped = scan.scan_shapes(tiny, ((128, 32), (256, 16)))
    assert shapes == [(64, 32)]
    assert [s for s, _ in skipped] == [(128, 32), (256, 16)]
    assert "work-group size 128 exceeds this device's maximum 64 (tiny)" in skipped[0][1]


def test_warp_shuffle_scan_is_gated_on_nvidia_with_a_reason(cl_env):
    device, ctx, queue = cl_env
    why = sc.shuffle_unavailable(device, 256)
    if "NVIDIA" in device.platform.name.upper():
        assert why is None and "multiple of 32" in sc.shuffle_unavailable(device, 48)
        scan = sc.DeviceScan(ctx, queue, "4_single_pass", wg=64, items=16, shuffle=True)
        x = np.random.default_rng(1).random(100_003, dtype=np.float32)
        src = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=x)
        dst = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, x.nbytes)
        scan.enqueue(src, dst, x.size, np.float32)
        got = np.empty_like(x)
        cl.enqueue_copy(queue, got, dst)
        ref = np.cumsum(x, dtype=np.float64)
        assert np.max(np.abs(got - ref)) / ref[-1] < 1e-5
    else:
        assert "inline NVIDIA PTX" in why and device.platform.name.strip() in why
        with pytest.raises(sc.ShuffleUnavailable, match="inline NVIDIA PTX"):
            sc.DeviceScan(ctx, queue, "4_single_pass", items=16, shuffle=True)
        with pytest.raises(sc.ShuffleUnavailable, match="inline NVIDIA PTX"):
            sc.ListFitness(ctx, queue, "2_work_efficient", shuffle=True)
