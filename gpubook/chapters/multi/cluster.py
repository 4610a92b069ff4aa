"""Chapter 10, the same work over Dask: one worker process per device, on one
host (a LocalCluster) or on many (a scheduler's address).

- `OpenCLWorker`, a worker plugin, opens the worker's device once, when the
  worker starts, and keeps it (context, queues, streams, pinned staging) for
  the worker's lifetime, so no task pays for a context.
- The data are a store the tasks read themselves: a `.npy` file of float32 rows
  on a file system every worker sees. The driver sends each task a row range,
  never the rows. `Held` has the workers read their ranges once into pinned
  memory and keep them (Dask's persist), for work that passes over them again.
- Each task streams its rows through its worker's device and returns partial
  sums against the common shift; the partials are added as a tree of tasks, in
  float64, and the driver checks that every row was counted exactly once.
- Tasks ask for the resource GPU=1, so a worker started with `--resources
  GPU=1` runs one at a time on its device.
"""
import logging
import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from distributed import Client, LocalCluster, get_worker, wait
from distributed.diagnostics.plugin import WorkerPlugin

from . import lanes
from ...device import DeviceChoiceError, choose_device, pinned_empty
from ...stream import Stream, blocks, plan_rows
from .covariance import stream_blocks
from .store import READERS, HeldRows, RowFile, readers, save_rows

GPU = {"GPU": 1}


_device = None  # this worker process's device, opened by OpenCLWorker


# The store ------------------------------------------------------------------------


# The worker's device ---------------------------------------------------------------

def _index(name):
    """The number a worker's name ends with (LocalCluster names workers 0, 1, ...)."""
    tail = str(name)[len(str(name).rstrip("0123456789")):]
    return int(tail) if tail else 0


class WorkerDevice:
    """What a worker keeps for its lifetime: its device, a context and queues,
    streams with their pinned staging, open store files, reader threads."""

    def __init__(self, spec=None, threads_read=READERS):
        device = choose_device(spec)
        self.lane, self.name = lanes.Lane(device), device.name.strip()
        self.streams, self.files = {}, {}
        self.pool = ThreadPoolExecutor(threads_read)

    def stream(self, n, budget, tile):
        key = (n, budget, tuple(sorted(tile.items())))
        if key not in self.streams:
            stream = Stream(self.lane.ctx, self.lane.device, n, budget, tile)
            staging = pinned_empty(self.lane.ctx, self.lane.queue, (2, stream.rows, n))
            self.streams[key] = (stream, staging)
        return self.streams[key]

    def file(self, path, n):
        if path not in self.files:
            self.files[path] = RowFile(path, n)
        return self.files[path]


class OpenCLWorker(WorkerPlugin):
    """Opens a worker's OpenCL device when the worker starts. With `specs`
    (PYOPENCL_CTX strings), worker i takes specs[i % len(specs)]; without, the
    worker's own PYOPENCL_CTX (or its first GPU) decides."""

    name = "gpubook-opencl"

    def __init__(self, specs=None, threads_read=READERS):
        self.specs, self.threads_read = (list(specs) if specs else None), threads_read

    def setup(self, worker):
        global _device
        spec = self.specs[_index(worker.name) % len(self.specs)] if self.specs else None
        try:
            _device = WorkerDevice(spec, self.threads_read)
        except DeviceChoiceError as err:
            raise DeviceChoiceError(f"worker {worker.name} ({worker.address}) has no usable OpenCL device: "
                                    f"{err}") from None


def worker_device():
    if _device is None:
        raise RuntimeError("this Dask worker has no OpenCL device: register gpubook.cluster.OpenCLWorker "
                           "(gpubook.cluster.start does)")
    return _device


def _device_name():
    return worker_device().name


# Starting -------------------------------------------------------------------------

def start(address=None, workers=None, spec=None, timeout=10, threads=2):
    """A Dask client with the OpenCL plugin on every worker.

    address: a running scheduler ("tcp://host:8786"), whose workers were started
    with `--resources GPU=1`; None starts a LocalCluster of one worker process
    per device of this host (or `workers` processes sharing them). A scheduler
    that does not answer within `timeout` seconds is an error."""
    if address is not None:
        try:
            client = Client(address, timeout=timeout)
        except (OSError, TimeoutError) as err:
            raise ConnectionError(
                f"no Dask scheduler answered at {address} within {timeout} s ({type(err).__name__}). "
                f"Start one with 'dask scheduler', and on each GPU host one 'dask worker {address} "
                "--resources GPU=1 --nthreads 2' per GPU, with PYOPENCL_CTX naming that GPU") from None
        specs, threads_read = None, READERS
    else:
        devs = lanes.devices(spec)
        specs = lanes.specs(devs)
        threads_read = readers(workers or len(devs))
        cluster = LocalCluster(n_workers=workers or len(devs), threads_per_worker=threads, processes=True,
                               resources=GPU, dashboard_address=":0", silence_logs=logging.ERROR)
        client = Client(cluster, timeout=timeout)
    try:
        client.register_plugin(OpenCLWorker(specs, threads_read))
        client.wait_for_workers(1, timeout=timeout)
    except Exception:
        stop(client)
        raise
    return client


def stop(client):
    cluster = client.cluster
    client.close()
    if cluster is not None:
        cluster.close()


def devices(client):
    """{worker address: its OpenCL device's name}."""
    return client.run(_device_name)


# The covariance as tasks ------------------------------------------------------------

@dataclass
class Part:
    """Partial sums of some rows: S (an array, or the path of a .npy file that
    holds it on the shared store), the column sums, the (first row, rows)
    ranges counted, and (worker, what, start, end) spans."""
    s: object
    col: np.ndarray
    ranges: list
    spans: list = field(default_factory=list)


def _keep(array, spill):
    """The array itself, or with `spill` (a .npy path on the shared store) that
    path, once the array is written there: a path is all Dask then moves."""
    return array if spill is None else save_rows(spill, array)


def _array(s):
    return np.load(s, mmap_mode="r") if isinstance(s, str) else s


def covariance_part(path, first, rows, shift, budget, tile, fail_marker=None, spill=None, held=None):
    """A task: the partial sums of rows first..first+rows-1 of the store at
    `path`, streamed through this worker's device, from the store or, with
    `held` (a HeldRows this worker keeps), from its pinned memory. With
    `fail_marker` (a path) the first attempt kills its own process half way,
    to show recovery."""
    dev, t0 = worker_device(), time.time()
    n = len(shift)
    store = dev.file(path, n)
    stream, staging = dev.stream(n, budget, tile)
    stream.begin(shift)
    work = lanes.Work([(first + i0, r) for i0, r in blocks(rows, stream.rows)])

    def read(i0, r, slot):
        if fail_marker and stream.count == 1 and not os.path.exists(fail_marker):
            open(fail_marker, "w").close()
            os._exit(17)  # the worker dies holding a half-summed task
        if held is not None:
            return held.x[i0 - held.first:i0 - held.first + r]
        return store.read(i0, staging[slot][:r], dev.pool)

    stream_blocks(stream, work, 0, read)
    s, col = stream.totals(copy=spill is None)
    return Part(_keep(s, spill), col, [(first, rows)], [(get_worker().name, "rows", t0, time.time())])


def _merged(parts, what, t0, s, col=None):
    spans = [span for p in parts for span in p.spans] + [(get_worker().name, what, t0, time.time())]
    return Part(s, col, [r for p in parts for r in p.ranges], spans)


def add_parts(*parts, spill=None):
    """A task: the float64 sum of partial sums."""
    t0 = time.time()
    s, col = lanes.add_sums([(_array(p.s), p.col) for p in parts])
    return _merged(parts, "sum", t0, _keep(s, spill), col)


def _spill(folder, name):
    return None if folder is None else os.path.join(folder, f"{name}.npy")


def tree_sum(client, futures, spill=None, fan_in=2):
    """Reduce futures of Parts as a tree of add_parts tasks in a fixed order,
    so that the result does not depend on which task finished first, until at
    most `fan_in` are left: the driver adds those and finishes C. With `spill`
    (a folder), node j of level d writes its sums to sum-d-j.npy there."""
    level, depth = list(futures), 0
    while len(level) > fan_in:
        depth += 1
        level = [client.submit(add_parts, *level[i:i + fan_in], spill=_spill(spill, f"sum-{depth}-{i // fan_in}"),
                               pure=False) if len(level[i:i + fan_in]) > 1 else level[i]
                 for i in range(0, len(level), fan_in)]
    return level


def _ranges(path, tasks):
    """The store's (rows, columns, first row), and its rows cut into `tasks` (first, rows) ranges."""
    probe = RowFile(path)
    probe.close()
    m, n = probe.shape
    if not 1 <= tasks <= m:
        raise ValueError(f"tasks must be 1 to m = {m:,}, not {tasks}")
    edges = np.linspace(0, m, tasks + 1).astype(int)
    return (m, n, probe.first), [(int(a), int(b - a)) for a, b in zip(edges[:-1], edges[1:])]


def covariance(client, path, tasks, budget, tile, fail_marker=None, spill=True, held=None, fan_in=2):
    """C (float64) of the store at `path` over the cluster: `tasks` row ranges,
    each a task with GPU=1, their partials summed in float64 as a tree, the
    last sums and C = S/m - d dᵀ on the driver, as the threads path does. With
    `spill` the partial sums travel as files in a folder beside the store, and
    Dask moves only their paths; without, Dask sends the arrays. `spill` may
    name a folder of the caller's, kept from call to call so that its files are
    written over in place, one call at a time. With `held`
    (a `Held(client, path, tasks)`), each task runs on the worker that holds its
    rows and streams them from there. Returns (C, a Part with every range
    counted and every task's span); raises if any row was lost or counted twice.
    `fan_in`: partials per add_parts task, and at most that many reach the
    driver (fan_in >= tasks: the driver adds every task's partial itself)."""
    if fan_in < 2:
        raise ValueError(f"fan_in is at least 2, not {fan_in}")
    (m, n, shift), ranges = _ranges(path, tasks)
    plan_rows(budget, n)  # a budget too small for one block is refused here, not on every worker
    if held is not None and (held.path, held.ranges) != (path, ranges):
        raise ValueError(f"the held rows are {len(held.ranges)} ranges of {held.path}, not {tasks} of {path}")
    where = held.where() if held is not None else [dict(resources=GPU)] * tasks
    own = spill is True
    folder = (tempfile.mkdtemp(prefix="gpubook-parts-", dir=os.path.dirname(os.path.abspath(path))) if own
              else spill or None)
    try:
        t0 = time.time()
        parts = [client.submit(covariance_part, path, a, r, shift, budget, tile, fail_marker,
                               _spill(folder, f"part-{i}"), held.futures[i] if held is not None else None,
                               pure=False, **where[i])
                 for i, (a, r) in enumerate(ranges)]
        top = client.gather(tree_sum(client, parts, folder, fan_in))
        t1 = time.time()
        c = lanes.combine([(_array(p.s), p.col) for p in top], m)
        root = Part(c, None, [r for p in top for r in p.ranges], [span for p in top for span in p.spans])
        root.spans += [("driver", "waiting for the tasks", t0, t1), ("driver", "float64 sum", t1, time.time())]
    finally:
        if own:
            shutil.rmtree(folder, ignore_errors=True)
    lanes.check_rows(root.ranges, m)
    return root.s, root


def _nothing(i):
    return i


def task_overhead(client, tasks=100):
    """Seconds one worker spends per task that does nothing, in throughput: the wall
    time of `tasks` empty GPU=1 tasks submitted at once (their round trips overlap),
    times the workers, over the tasks."""
    workers = len(client.scheduler_info()["workers"])
    t0 = time.perf_counter()
    client.gather(client.map(_nothing, range(tasks), resources=GPU, pure=False))
    return (time.perf_counter() - t0) * workers / tasks


class Held:
    """The store's rows in `tasks` ranges, each read once by a GPU=1 task into
    its worker's pinned memory and kept there: Dask's `persist`, so that
    `covariance(..., held=...)` streams rows from memory, as the threads path
    does. A worker lost takes its ranges with it; Dask reads them again from
    the store, on whichever worker runs the task that needs them."""

    def __init__(self, client, path, tasks):
        _, self.ranges = _ranges(path, tasks)
        self.path, self.client = path, client
        workers = sorted(client.scheduler_info()["workers"])
        t0 = time.perf_counter()
        self.futures = [client.submit(load_rows, path, a, r, workers=[workers[i % len(workers)]],
                                      allow_other_workers=True, resources=GPU, pure=False)
                        for i, (a, r) in enumerate(self.ranges)]
        wait(self.futures)
        self.seconds = time.perf_counter() - t0
        for f in self.futures:
            if f.status == "error":  # a load that failed raises here; result() would fetch the rows
                raise f.exception()

    def where(self):
        """submit()'s placement of each range's task: the worker that holds its
        rows, or any worker with a GPU if that one is gone."""
        has = self.client.who_has(self.futures)
        return [dict(workers=list(has[f.key]), allow_other_workers=True, resources=GPU) if has.get(f.key)
                else dict(resources=GPU) for f in self.futures]

    def release(self):
        for f in self.futures:
            f.release()
        self.futures = []


def load_rows(path, first, rows):
    """A task: rows first..first+rows-1 of the store, read into pinned memory
    of this worker's device. The worker keeps the result for as long as the
    driver holds its future."""
    dev = worker_device()
    store = dev.file(path, None)
    x = pinned_empty(dev.lane.ctx, dev.lane.queue, (rows, store.shape[1]))
    return HeldRows(first, store.read(first, x, dev.pool))

