"""Chapter 10, where Dask's time goes beyond the devices' own: the cost of
moving one partial sum between processes (by Dask, or through a file as the
spill path does), of a worker's add of two partials, and of an empty task, each
measured alone in the running cluster; and the bound they set on the
covariance through Dask, the threads' time plus the tree of sums' moves and
adds one after the other.
"""
import os
import time

import numpy as np
from distributed import wait

from . import lanes
from .cluster import _nothing
from .store import save_rows


def _partial(n, dtype):
    """A task: an n x n partial of `dtype`, made on this worker."""
    return np.ones((n, n), dtype)


def _corner(a):
    return float(a[-1, -1])


def _add_two(n, repeats=3):
    """A task: the median seconds of one float64 add of two float32 partials on this worker."""
    parts = [(np.ones((n, n), np.float32), np.zeros(n)) for _ in range(2)]
    times = []
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        lanes.add_sums(parts)
        times.append(time.perf_counter() - t0)
    return float(np.median(times[1:]))


def _file_move(path, n, dtype, repeats=3):
    """Seconds to write an n x n partial as a .npy file (save_rows) and read it
    back whole: how the spill path moves a partial from one process to another."""
    a = np.ones((n, n), dtype)
    times = []
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        save_rows(path, a)
        np.array(np.load(path, mmap_mode="r"))
        times.append(time.perf_counter() - t0)
    return float(np.median(times[1:]))


def _round_trip(client, worker, repeats):
    """Median seconds of one empty task on `worker`, from submission to result."""
    times = []
    for i in range(repeats + 1):
        t0 = time.perf_counter()
        client.submit(_nothing, i, workers=[worker], pure=False).result()
        times.append(time.perf_counter() - t0)
    return float(np.median(times[1:]))


def move_costs(client, n, folder, repeats=3):
    """What moving and adding the partial sums costs in this cluster, each part
    measured alone (seconds, medians of `repeats`):
    'to_driver' and 'to_worker': one n x n float64 partial sent by Dask from a
    worker to the driver, or to another worker (serialise, send, deserialise;
    the second without the round trip of an empty task); 'file32' and 'file64':
    a float32 or float64 partial written to a file in `folder` and read back
    whole (the spill path's move); 'add': a worker's float64 add of two float32
    partials; 'task': an empty task's round trip."""
    workers = sorted(client.scheduler_info()["workers"])
    a, b = workers[0], workers[-1]
    task = _round_trip(client, b, repeats)
    made = client.submit(_partial, n, np.float64, workers=[a], pure=False)
    wait(made)
    to_driver, to_worker = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        client.gather(made, direct=False)
        to_driver.append(time.perf_counter() - t0)
        again = client.submit(_partial, n, np.float64, workers=[a], pure=False)
        wait(again)
        t0 = time.perf_counter()
        client.submit(_corner, again, workers=[b], pure=False).result()
        to_worker.append(max(0.0, time.perf_counter() - t0 - task))
        again.release()
    made.release()
    path = os.path.join(folder, "move-probe.npy")
    try:
        files = {f"file{8 * np.dtype(t).itemsize}": _file_move(path, n, t, repeats)
                 for t in (np.float32, np.float64)}
    finally:
        if os.path.exists(path):
            os.remove(path)
    return {"to_driver": float(np.median(to_driver)), "to_worker": float(np.median(to_worker)),
            "add": client.submit(_add_two, n, workers=[a], pure=False).result(), "task": task, **files}


def tree_levels(tasks, fan_in=2):
    """The levels of add_parts tasks tree_sum makes for `tasks` partials, and how
    many partials reach the driver."""
    level, depth = tasks, 0
    while level > fan_in:
        level, depth = -(-level // fan_in), depth + 1
    return depth, level


def bound_seconds(threads_s, costs, tasks, spill=True, fan_in=2):
    """A lower bound of the covariance through Dask: the threads' time on the
    same devices, plus, one after the other, each level of the tree of sums
    (a partial moved in and added) and the last partials moved to the driver,
    with the moves of `costs` (move_costs) the way the run moves them."""
    depth, top = tree_levels(tasks, fan_in)
    first = costs["file32"] if spill else costs["to_worker"] / 2     # row tasks return float32 partials
    later = costs["file64"] if spill else costs["to_worker"]
    levels = [first] + [later] * (depth - 1) if depth else []
    last = (costs["file64"] if spill else costs["to_driver"]) if depth else first
    return threads_s + sum(levels) + depth * costs["add"] + last
