"""Chapter 10 on PoCL: the covariance and the subset search shared between two
device threads (two contexts on the one CPU device), and the same covariance
over a Dask LocalCluster of two worker processes sharing that device: the
split and the sums, a worker killed half way, and the refusals."""
import os
import time

import numpy as np
import pytest

from gpubook import stream as oc, subsets as su, xtx as cv
from gpubook.chapters import multi
from gpubook.chapters.multi import cluster, store as rowstore

TILE = cv.shape(64, 4, 4, 16)
TOL = 1e-4


@pytest.fixture(scope="module")
def lanes():
    device = multi.devices()[0]
    return [multi.Lane(device), multi.Lane(device)]


@pytest.fixture(scope="module")
def data():
    d = cv.make_data(1_500, 72, seed=3)
    return d.x, cv.reference(d.x)


def test_check_rows_finds_gaps_repeats_and_extras():
    multi.check_rows([(5, 5), (0, 5)], 10)
    with pytest.raises(AssertionError, match="missing"):
        multi.check_rows([(0, 4), (5, 5)], 10)
    with pytest.raises(AssertionError, match="repeated"):
        multi.check_rows([(0, 6), (5, 5)], 10)
    with pytest.raises(AssertionError, match="beyond"):
        multi.check_rows([(0, 12)], 10)


def test_work_hands_out_every_item_once():
    work = multi.Work(range(100))
    taken = multi.in_threads(lambda k: [item for item in iter(lambda: work.take(k), None)], 4)
    assert sorted(i for t in taken for i in t) == list(range(100))


@pytest.mark.parametrize("count", [1, 2])
def test_covariance_split_over_devices(lanes, data, count):
    x, ref = data
    mc = multi.Covariance(lanes, x.shape[1], oc.stream_bytes(x.shape[1], 128), TILE, m=len(x))
    c = mc.run(x, count)
    assert cv.error(c, ref) < TOL
    assert np.array_equal(c, c.T)
    taken = [b for blocks in mc.taken for b in blocks]
    assert sorted(taken) == multi.tapered(len(x), mc.rows, count)  # every block once
    assert len(mc.taken) == count
    assert sum(mc.shares()) == pytest.approx(len(x) / mc.rows)
    rows = mc.timeline()
    assert {r[0] for r in rows} >= {"host"} and all(e >= s for *_, s, e in rows)


@pytest.mark.parametrize("m, rows, ends", [(4096, 512, 1), (4096, 512, 3), (5000, 1000, 1), (2048, 256, 4),
                                           (300, 128, 1)])
def test_tapered_blocks_cover_every_row_once_with_small_ends(m, rows, ends):
    pieces = multi.tapered(m, rows, ends)
    multi.check_rows(pieces, m)
    whole = oc.blocks(m, rows)
    if len(whole) <= 2 * ends:
        assert pieces == whole
    else:
        assert max(r for _, r in pieces[:ends]) < rows and max(r for _, r in pieces[-ends:]) < rows


def test_combine_and_add_sums_equal_float64_sums():
    rng = np.random.default_rng(1)
    n, m = 130, 1000
    parts = []
    for _ in range(3):
        s = rng.standard_normal((n, n)).astype(np.float32)
        s = s + s.T
        parts.append((s, rng.standard_normal(n)))
    c = multi.combine(parts, m, threads=3)
    d = sum(col for _, col in parts) / m
    want = sum(s.astype(np.float64) for s, _ in parts) / m - np.outer(d, d)
    assert np.allclose(c, want, rtol=0, atol=1e-12)
    total, col = multi.add_sums(parts, threads=2)
    assert np.array_equal(total, sum(s.astype(np.float64) for s, _ in parts))
    c32 = multi.combine([(total, col)], m, out=np.empty((n, n), np.float32))
    assert c32.dtype == np.float32 and np.allclose(c32, want, rtol=0, atol=1e-6)


def test_covariance_refuses_a_bad_count(lanes, data):
    x, _ = data
    mc = multi.Covariance(lanes, x.shape[1], oc.stream_bytes(x.shape[1], 128), TILE, m=len(x))
    with pytest.raises(ValueError, match="count must be 1 to 2"):
        mc.run(x, 3)


def test_subsets_split_gives_the_same_answer(lanes):
    p, planted = 12, (2, 5, 9)
    xtx, xty, yty, _, _ = multi.subset_problem(500, p, planted)
    search = multi.Subsets(lanes, p, 4, xtx, xty, yty, chunk=64)
    one, two = search.run(1), search.run(2)
    assert one == two and one[3][1] == planted
    assert sorted(c for t in search.taken for c in t) == search.items()
    for k in range(1, 5):
        all_rss, subs = su.subsets_numpy(xtx, xty, yty, k)
        g = int(np.argmin(all_rss))
        assert tuple(subs[g]) == one[k][1]
        assert abs(all_rss[g] - one[k][0]) <= 1e-9 * yty


def test_subsets_refuse_bad_sizes(lanes):
    xtx, xty, yty, _, _ = multi.subset_problem(100, 6, (1,))
    with pytest.raises(ValueError, match="k_max"):
        multi.Subsets(lanes, 6, 7, xtx, xty, yty)
    with pytest.raises(ValueError, match="expected X'X"):
        multi.Subsets(lanes, 7, 2, xtx, xty, yty)


def test_h2d_together_is_a_rate(lanes, data):
    x, _ = data
    assert multi.h2d_together(lanes, x, 2, repeats=1) > 0


# The store and Dask ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def store(tmp_path_factory, data):
    x, _ = data
    return rowstore.save_rows(str(tmp_path_factory.mktemp("store") / "x.npy"), x)


def test_store_reads_the_rows_back(store, data):
    x, _ = data
    f = rowstore.RowFile(store, x.shape[1])
    out = np.empty((37, x.shape[1]), np.float32)
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(3) as pool:
        f.read(100, out, pool, piece=1000)
    f.close()
    assert np.array_equal(out, x[100:137]) and np.array_equal(f.first, x[0])


def test_threads_reading_the_store_match_and_its_rate_is_measured(lanes, store, data):
    x, ref = data
    mc = multi.Covariance(lanes, x.shape[1], oc.stream_bytes(x.shape[1], 128), TILE, m=len(x))
    read = rowstore.StoreReader(lanes, store, x.shape[1], mc.rows)
    try:
        assert cv.error(mc.run(x, 2, read=read), ref) < TOL
        assert 0 < read.rate(blocks=3) < float("inf")
    finally:
        read.close()


def test_store_refuses_the_wrong_shape_or_type(tmp_path, store, data):
    x, _ = data
    with pytest.raises(ValueError, match="expected C-ordered float32 rows with n = 73 columns"):
        rowstore.RowFile(store, 73)
    np.save(tmp_path / "d.npy", x.astype(np.float64))
    with pytest.raises(ValueError, match="float64"):
        rowstore.RowFile(str(tmp_path / "d.npy"))
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    with pytest.raises(ValueError, match="not a readable .npy"):
        rowstore.RowFile(str(tmp_path / "junk.npy"))


@pytest.fixture(scope="module")
def client():
    c = cluster.start(workers=2)
    yield c
    cluster.stop(c)


def test_dask_covariance_matches_the_threads(client, store, data, lanes):
    x, ref = data
    budget = oc.stream_bytes(x.shape[1], 128)
    assert len(cluster.devices(client)) == 2
    c, root = cluster.covariance(client, store, 5, budget, TILE)
    assert cv.error(c, ref) < TOL
    assert sorted(root.ranges) == sorted(set(root.ranges)) and sum(r for _, r in root.ranges) == len(x)
    threads = multi.Covariance(lanes, x.shape[1], budget, TILE, m=len(x)).run(x)
    assert np.max(np.abs(c - threads)) <= 1e-6 * np.max(np.abs(ref))
    assert {w for w, what, *_ in root.spans if what == "rows"} <= {0, 1}
    c_comm, _ = cluster.covariance(client, store, 5, budget, TILE, spill=False)
    assert np.array_equal(c, c_comm)  # the same tree of sums, whichever way the partials travel
    assert not [p for p in os.listdir(os.path.dirname(store)) if p.startswith("gpubook-parts-")]


def test_dask_recovers_a_killed_worker_exactly(client, store, data, tmp_path):
    x, ref = data
    budget = oc.stream_bytes(x.shape[1], 128)
    c, root = cluster.covariance(client, store, 4, budget, TILE)
    marker = str(tmp_path / "killed")
    c_fail, root_fail = cluster.covariance(client, store, 4, budget, TILE, fail_marker=marker)
    assert os.path.exists(marker)  # a worker did die
    assert np.array_equal(c, c_fail)
    assert sorted(root_fail.ranges) == sorted(root.ranges)
    multi.check_rows(root_fail.ranges, len(x))
    client.wait_for_workers(2, timeout=30)


def test_save_rows_writes_over_a_file_of_the_same_shape_in_place(tmp_path):
    path = str(tmp_path / "s.npy")
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    rowstore.save_rows(path, a)
    inode = os.stat(path).st_ino
    rowstore.save_rows(path, a[::-1].copy())
    assert os.stat(path).st_ino == inode and np.array_equal(np.load(path), a[::-1])
    rowstore.save_rows(path, a[:2])  # another shape: a new file
    assert np.array_equal(np.load(path), a[:2])
    rowstore.save_rows(path, a.astype(np.float64))
    assert np.load(path).dtype == np.float64


def test_a_spill_folder_of_the_caller_s_is_kept_and_reused(client, store, data, tmp_path):
    x, _ = data
    budget = oc.stream_bytes(x.shape[1], 128)
    c, _ = cluster.covariance(client, store, 5, budget, TILE)
    folder = tmp_path / "parts"
    folder.mkdir()
    for tasks in (5, 5, 3):
        c2, root = cluster.covariance(client, store, tasks, budget, TILE, spill=str(folder))
        multi.check_rows(root.ranges, len(x))
    assert {f"part-{i}.npy" for i in range(5)} | {"sum-1-0.npy", "sum-1-1.npy"} <= set(os.listdir(folder))
    c5, _ = cluster.covariance(client, store, 5, budget, TILE, spill=str(folder))
    assert np.array_equal(c, c5)  # files written over in place hold the new sums


def test_rows_held_by_the_workers_give_the_store_s_result(client, store, data):
    x, ref = data
    budget = oc.stream_bytes(x.shape[1], 128)
    c, _ = cluster.covariance(client, store, 4, budget, TILE)
    held = cluster.Held(client, store, 4)
    try:
        holders = [w for ws in client.who_has(held.futures).values() for w in ws]
        assert len(set(holders)) == 2 and len(holders) == 4  # spread over both workers, each range once
        c_held, root = cluster.covariance(client, store, 4, budget, TILE, held=held)
        assert np.array_equal(c, c_held)  # the same rows, blocks and tree of sums
        multi.check_rows(root.ranges, len(x))
        with pytest.raises(ValueError, match="the held rows are 4 ranges"):
            cluster.covariance(client, store, 3, budget, TILE, held=held)
    finally:
        held.release()


def test_rows_held_by_a_killed_worker_are_read_again(client, store, data, tmp_path):
    x, _ = data
    budget = oc.stream_bytes(x.shape[1], 128)
    c, _ = cluster.covariance(client, store, 4, budget, TILE)
    held = cluster.Held(client, store, 4)
    marker = str(tmp_path / "killed")
    try:
        c_fail, root = cluster.covariance(client, store, 4, budget, TILE, fail_marker=marker, held=held)
    finally:
        held.release()
    assert os.path.exists(marker)
    assert np.array_equal(c, c_fail)
    multi.check_rows(root.ranges, len(x))
    client.wait_for_workers(2, timeout=30)


def test_dask_refuses_bad_input(client, store, data):
    x, _ = data
    with pytest.raises(ValueError, match="cannot hold one block"):
        cluster.covariance(client, store, 2, oc.stream_bytes(x.shape[1], 0), TILE)
    with pytest.raises(ValueError, match="tasks must be"):
        cluster.covariance(client, store, 0, oc.stream_bytes(x.shape[1], 128), TILE)


def test_an_unanswered_scheduler_fails_within_its_timeout():
    t0 = time.perf_counter()
    with pytest.raises(ConnectionError, match="no Dask scheduler answered at tcp://127.0.0.1:9 within 2 s"):
        cluster.start("tcp://127.0.0.1:9", timeout=2)
    assert time.perf_counter() - t0 < 10


def test_a_worker_without_a_device_is_refused():
    from distributed import Client, LocalCluster
    import logging
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0",
                      silence_logs=logging.CRITICAL) as lc, Client(lc) as c:
        with pytest.raises(Exception, match="has no usable OpenCL device.*matches no OpenCL device"):
            c.register_plugin(cluster.OpenCLWorker(["no-such-device"]))


def test_a_task_on_a_worker_without_the_plugin_says_so():
    cluster._device, saved = None, cluster._device
    try:
        with pytest.raises(RuntimeError, match="no OpenCL device"):
            cluster.worker_device()
    finally:
        cluster._device = saved


def test_best_tile_builds_here_or_names_every_reason(lanes, monkeypatch):
    from gpubook import tiles

    lane = lanes[0]
    shape = multi.best_tile(lane.ctx, lane.device)
    assert tiles.get_kernel(lane.ctx, lane.device, shape, np.float32, triangle=True) is not None

    def too_few(ctx, device, shape, *args, **kw):
        raise tiles.TileError(f"{tiles.label(shape)}: the built kernel allows 32 work-items")

    monkeypatch.setattr(tiles, "get_kernel", too_few)
    with pytest.raises(tiles.TileError, match="can run none") as err:
        multi.best_tile(lane.ctx, lane.device)
    assert str(err.value).count("allows 32 work-items") == len(cv.SWEEP)


def test_recorded_scaling_reads_only_hosts_with_several_devices(tmp_path, lanes):
    import json

    assert multi.recorded_scaling(tmp_path) == []
    for slug, g in (("one-gpu", 1), ("four-gpus", 4)):
        (tmp_path / slug).mkdir()
        data = {"devices": g, "covariance": {str(k): {"seconds": 1.0 / k ** 0.5} for k in range(1, g + 1)},
                "subsets": {"seconds": {str(k): 1.0 / k for k in range(1, g + 1)}}}
        (tmp_path / slug / "10_multi_gpu.json").write_text(json.dumps({"device": slug, "data": data}))
    assert multi.recorded_scaling(tmp_path) == [("four-gpus", 4, pytest.approx(2.0), pytest.approx(4.0))]
    rows = multi.resource_rows(lanes[0], multi.best_tile(lanes[0].ctx, lanes[0].device))
    assert [kern.function_name for _, kern, _ in rows] == ["col_sums", "centre", "register_tiles"]


def test_move_costs_are_measured_and_set_a_bound(client, tmp_path):
    from gpubook.chapters.multi import overhead

    costs = overhead.move_costs(client, 64, str(tmp_path), repeats=1)
    assert set(costs) == {"to_driver", "to_worker", "file32", "file64", "add", "task"}
    assert all(0 <= v < 30 for v in costs.values()) and costs["task"] > 0
    assert not list(tmp_path.iterdir())  # the probe file is removed
    assert overhead.tree_levels(1) == (0, 1) and overhead.tree_levels(2) == (0, 2)
    assert overhead.tree_levels(4) == (1, 2) and overhead.tree_levels(5) == (2, 2)
    fake = dict(file32=1.0, file64=2.0, to_driver=4.0, to_worker=8.0, add=16.0, task=0.0)
    assert overhead.bound_seconds(100.0, fake, 2) == 101.0          # one file read by the driver
    assert overhead.bound_seconds(100.0, fake, 4) == 100 + 1 + 16 + 2
    assert overhead.bound_seconds(100.0, fake, 8) == 100 + 1 + 2 + 2 * 16 + 2
    assert overhead.bound_seconds(100.0, fake, 4, spill=False) == 100 + 4 + 16 + 4


def test_a_fan_in_of_every_task_leaves_the_driver_all_partials(client, store, data):
    x, ref = data
    budget = oc.stream_bytes(x.shape[1], 128)
    c, root = cluster.covariance(client, store, 5, budget, TILE, fan_in=5)
    assert cv.error(c, ref) < TOL and not [s for s in root.spans if s[1] == "sum"]  # no tree
    c2, root2 = cluster.covariance(client, store, 5, budget, TILE, fan_in=2)
    assert len([s for s in root2.spans if s[1] == "sum"]) == 3 and np.allclose(c, c2, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="fan_in"):
        cluster.covariance(client, store, 5, budget, TILE, fan_in=1)
