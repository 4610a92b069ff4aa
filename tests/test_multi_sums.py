"""Chapter 10's host sum of the partials (multi.sums.Sum) against float64, in
full and over the lower triangle, added one after the other or from several
threads at once; and the streamed covariance when one device fails mid-run (an
out-of-memory error, a failing build): the other device takes its blocks and
the result is unchanged. On PoCL: two contexts on the one CPU device."""
import threading

import numpy as np
import pyopencl as cl
import pytest

from gpubook import kernels, stream as oc, xtx as cv
from gpubook.chapters import multi
from gpubook.chapters.multi import sums
from test_multi import data, lanes  # noqa: F401 (the same two lanes and data)

TILE = cv.shape(64, 4, 4, 16)
TOL = 1e-4


def _parts(n, count, seed=1):
    rng = np.random.default_rng(seed)
    parts = []
    for _ in range(count):
        s = rng.standard_normal((n, n)).astype(np.float32)
        parts.append((s + s.T, rng.standard_normal(n)))
    return parts


def _want(parts, m):
    d = sum(col for _, col in parts) / m
    return sum(s.astype(np.float64) for s, _ in parts) / m - np.outer(d, d)


@pytest.mark.parametrize("triangle", [False, True])
@pytest.mark.parametrize("threads", [1, 3])
def test_sum_matches_float64(triangle, threads):
    n, m = 131, 1000
    parts = _parts(n, 3)
    total = sums.Sum(n, threads, triangle)
    for s, col in parts:
        total.add(s, col)
    c = total.finish(m)
    assert np.allclose(c, _want(parts, m), rtol=0, atol=1e-12)
    assert np.array_equal(c, c.T)
    assert [label for label, *_ in total.spans] == ["add"] * 3 + ["finish"]
    total.start()  # a second sum into the same matrix forgets the first
    total.add(*parts[0])
    assert np.allclose(total.finish(m), _want(parts[:1], m), rtol=0, atol=1e-12)
    total.close()


def test_adds_from_several_threads_at_once():
    n, m = 200, 500
    parts = _parts(n, 4, seed=2)
    total = sums.Sum(n, 4, triangle=True)
    barrier = threading.Barrier(len(parts))

    def one(k):
        barrier.wait()
        total.add(*parts[k])

    multi.in_threads(one, len(parts))
    assert np.allclose(total.finish(m), _want(parts, m), rtol=0, atol=1e-12)
    total.close()


def test_sequential_adds_give_the_same_bits_every_time():
    parts = _parts(97, 3, seed=4)
    first = multi.combine(parts, 100, threads=3).copy()
    assert np.array_equal(multi.combine(parts, 100, threads=2), first)


def test_one_pass_over_every_partial_equals_adding_them_one_by_one():
    n, m = 150, 700
    parts = _parts(n, 3, seed=5)
    for triangle in (False, True):
        total = sums.Sum(n, 3, triangle)
        total.add(*parts[0])
        c = total.add_all(parts[1:], m).copy()  # one added before, two in the pass that finishes
        assert np.allclose(c, _want(parts, m), rtol=0, atol=1e-12)
        total.start()
        assert np.array_equal(total.add_all(parts, m), multi.combine(parts, m, threads=3))
        total.close()


def test_time_options_tries_every_thread_count_and_the_triangle_at_the_best():
    found = sums.time_options(_parts(64, 2), 100, repeats=1, counts=[1, 2])
    assert set(found) >= {(1, False), (2, False)} and sum(tri for _, tri in found) == 1
    assert sums.thread_counts(6) == [1, 2, 4, 6]


def test_bands_cover_every_row_once():
    for n, threads in ((1, 4), (7, 64), (4096, 16), (4096, 64)):
        b = sums.bands(n, threads)
        assert b[0][0] == 0 and b[-1][1] == n and all(x[1] == y[0] for x, y in zip(b, b[1:]))


def test_a_partial_of_the_wrong_shape_is_refused():
    total = sums.Sum(10, 1)
    with pytest.raises(ValueError, match="shape"):
        total.add(np.zeros((9, 9)), np.zeros(9))
    with pytest.raises(ValueError, match="no partial"):
        total.finish(10)


def _cov(lanes, x, triangle=False):
    tile = cv.runnable_tile(lanes[0].ctx, lanes[0].device, [TILE])  # TILE where the kernel allows it
    return multi.Covariance(lanes, x.shape[1], oc.stream_bytes(x.shape[1], 128), tile, m=len(x),
                            triangle=triangle)


@pytest.mark.parametrize("overlap", [True, False])
@pytest.mark.parametrize("triangle", [False, True])
def test_overlapped_and_later_sums_agree(lanes, data, overlap, triangle):
    x, ref = data
    mc = _cov(lanes, x, triangle)
    c = mc.run(x, 2, overlap=overlap)
    assert cv.error(c, ref) < TOL and np.array_equal(c, c.T)
    assert mc.failed == {} and 0 <= mc.host_seconds <= mc.seconds
    host = [r[1] for r in mc.timeline() if r[0] == "host"]
    assert host == (["float64 add"] * 2 + ["finish"] if overlap else ["float64 add and finish"])


def test_a_device_out_of_memory_mid_run_leaves_the_result_unchanged(lanes, data, monkeypatch):
    x, ref = data
    mc = _cov(lanes, x)
    want = mc.run(x, 2).copy()
    add, calls = mc.streams[1].add, []

    def failing(rows_x):
        calls.append(len(rows_x))
        if len(calls) == 2:  # its second block: one block is already in its lost partial sums
            raise cl.MemoryError("clEnqueueNDRangeKernel failed: OUT_OF_RESOURCES (made to fail)")
        return add(rows_x)

    monkeypatch.setattr(mc.streams[1], "add", failing)
    c = mc.run(x, 2)
    assert list(mc.failed) == [1] and "OUT_OF_RESOURCES" in mc.failed[1]
    assert mc.taken[1] == [] and sorted(mc.taken[0]) == multi.tapered(len(x), mc.rows, 2)
    # unchanged but for the float32 rounding of another split of the blocks
    assert cv.error(c, ref) < TOL and cv.error(c, want) < 1e-5
    assert {r[0] for r in mc.timeline()} == {"GPU 0 copy", "GPU 0 compute", "host"}


def test_a_failing_build_on_one_device_leaves_the_result_unchanged(lanes, data, monkeypatch):
    x, ref = data
    mc = _cov(lanes, x)
    broken_ctx, launch_tiles = lanes[1].ctx, oc.launch_tiles

    def tiles(queue, *args, **kw):
        if queue.context == broken_ctx:  # the compiler of this device rejects the kernel
            kernels.build(queue.context, "tiles/register_tiles.cl", {"TM": "}"})
        return launch_tiles(queue, *args, **kw)

    monkeypatch.setattr(oc, "launch_tiles", tiles)
    c = mc.run(x, 2)
    assert list(mc.failed) == [1] and "KernelBuildError" in mc.failed[1]
    assert cv.error(c, ref) < TOL
    multi.check_rows(mc.taken[0], len(x))


def test_every_device_failing_is_an_error_naming_them(lanes, data, monkeypatch):
    x, _ = data
    mc = _cov(lanes, x)
    for stream in mc.streams:
        monkeypatch.setattr(stream, "add", lambda rows_x: (_ for _ in ()).throw(cl.MemoryError("no memory")))
    with pytest.raises(RuntimeError, match="every device failed.*no memory"):
        mc.run(x, 2)


def test_the_sum_on_a_device_matches_float64(lanes):
    n, m = 131, 1000
    parts = _parts(n, 3)
    total = sums.DeviceSum(lanes[0], n)
    for s, col in parts:
        total.add(s, col)
    s, col = total.total()  # unscaled, before the finish scales it in place
    assert np.allclose(s, sum(p.astype(np.float64) for p, _ in parts), rtol=0, atol=1e-9)
    c = total.finish(m)
    assert np.allclose(c, _want(parts, m), rtol=0, atol=1e-12) and c.dtype == np.float64
    total.start()  # a new sum forgets the last, and all at once equals one by one
    assert np.array_equal(total.add_all(parts, m), c)
    assert [label for label, *_ in total.spans] == ["add", "finish on the device"]
    with pytest.raises(ValueError, match="shape"):
        total.add(np.zeros((9, 9), np.float32), np.zeros(9))
    total.close()


@pytest.mark.parametrize("overlap", [True, False])
def test_the_covariance_summed_on_a_device_matches(lanes, data, overlap):
    x, ref = data
    mc = _cov(lanes, x)
    mc.threads = "device"
    c = mc.run(x, 2, overlap=overlap)
    assert isinstance(mc.sum, sums.DeviceSum) and cv.error(c, ref) < TOL and np.array_equal(c, c.T)
    mc.threads = 1  # back to the host: the same result within float64 rounding
    assert np.allclose(mc.run(x, 2), c, rtol=0, atol=1e-12 * np.abs(c).max())


def test_time_options_with_lanes_times_the_device_sum(lanes):
    found = sums.time_options(_parts(64, 3), 100, repeats=1, counts=[1], lanes=lanes)
    assert set(found) == {(1, False), (1, True), ("device", False)} and all(v > 0 for v in found.values())


@pytest.mark.parametrize("n", [1, 5])
def test_partials_kernel_at_tiny_sizes(n):
    # kernels/multi/partials.cl on one device at sizes no work-group divides
    # (tools/check_kernels.py runs this under Oclgrind: case multi-partials)
    m, parts = 7, _parts(n, 2, seed=n)
    total = sums.DeviceSum(multi.Lane(multi.devices()[0]), n, out=np.empty((n, n)))
    total.add_all(parts)
    assert np.allclose(total.total()[0], sum(s.astype(np.float64) for s, _ in parts), rtol=0, atol=1e-12)
    assert np.allclose(total.finish(m), _want(parts, m), rtol=0, atol=1e-12)
    total.close()
