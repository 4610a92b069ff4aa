"""Chapter 10, every GPU of one host: one context and queues per device, one
host thread per device, and work shared through a queue that each thread takes
from when its device is ready for more (work stealing: a faster device simply
comes back sooner).

Two jobs: chapter 6's streamed covariance with its row blocks shared (partial
sums against one common shift, added on the host in float64), and chapter 8's
subset search with its subset ranks shared (each device keeps the best of its
ranks).
"""
import threading
import warnings
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import pyopencl as cl

from ...device import choose_device, compiler_failure, list_devices
from .sums import Sum, host_threads


def devices(spec=None, count=None):
    """The chosen device (PYOPENCL_CTX, else the first GPU) and every other
    device of its platform and type that compiles a kernel, the chosen one
    first; at most `count` of them."""
    first = choose_device(spec)
    with warnings.catch_warnings():  # the probe build's log on success is chatter, not news
        warnings.simplefilter("ignore", cl.CompilerWarning)
        others = [d for d in first.platform.get_devices()
                  if d.type == first.type and d.int_ptr != first.int_ptr and compiler_failure(d) is None]
    found = [first] + others
    if count is not None:
        if count < 1:
            raise ValueError(f"need at least one device, not {count}")
        found = found[:count]
    return found


def specs(devs):
    """PYOPENCL_CTX strings ('platform:device' indices) that pick each device."""
    index = {dev.int_ptr: f"{p}:{d}" for p, d, _, dev in list_devices()}
    return [index[dev.int_ptr] for dev in devs]


def describe(devs):
    """'NVIDIA H200' for one, '2 × NVIDIA H200' for two of a kind, or the names
    joined when the devices differ."""
    names = [d.name.strip() for d in devs]
    if len(names) == 1:
        return names[0]
    return f"{len(names)} × {names[0]}" if len(set(names)) == 1 else " + ".join(names)


class Lane:
    """One device: its context and a profiling queue."""

    def __init__(self, device):
        self.device, self.name = device, device.name.strip()
        self.ctx = cl.Context([device])
        self.queue = cl.CommandQueue(self.ctx, device, properties=cl.command_queue_properties.PROFILING_ENABLE)


class Work:
    """A shared queue of work items. `take(worker)` hands out the next item, or
    None when none is left, and logs who took what."""

    def __init__(self, items):
        self._items, self._lock, self.taken = deque(items), threading.Lock(), []

    def take(self, worker):
        with self._lock:
            if not self._items:
                return None
            item = self._items.popleft()
            self.taken.append((worker, item))
            return item

    def give_back(self, worker):
        """Put every item `worker` took back at the front of the queue (its device
        failed and its partial sums are lost) and drop them from the log."""
        with self._lock:
            mine = [item for w, item in self.taken if w == worker]
            self.taken = [(w, item) for w, item in self.taken if w != worker]
            self._items.extendleft(reversed(mine))
            return mine

    def left(self):
        with self._lock:
            return len(self._items)

    def by_worker(self, workers):
        return [[item for w, item in self.taken if w == k] for k in range(workers)]


_pools = {}  # count -> a pool of that many threads, kept: no thread start-up per run
_pools_lock = threading.Lock()


def in_threads(fn, count):
    """fn(0), ..., fn(count - 1), each in its own thread (of a pool of `count`
    threads kept from call to call, so that a run pays no thread start-up);
    their results in order. The first error raised in a thread is raised here.
    Calls from several threads at once (a pool's own, too) each get a new pool."""
    if count == 1:
        return [fn(0)]
    with _pools_lock:
        pool = _pools.pop(count, None) or ThreadPoolExecutor(count)
    try:
        return list(pool.map(fn, range(count)))
    finally:
        with _pools_lock:
            if count in _pools:
                pool.shutdown(wait=False)
            else:
                _pools[count] = pool


def check_rows(ranges, m):
    """Raise unless the (first row, row count) ranges cover rows 0..m-1 exactly once."""
    covered = sorted(ranges)
    end = 0
    for i0, rows in covered:
        if i0 != end:
            what = "repeated" if i0 < end else "missing"
            raise AssertionError(f"rows {min(i0, end):,} to {max(i0, end) - 1:,} are {what}")
        end = i0 + rows
    if end != m:
        raise AssertionError(f"rows {end:,} to {m - 1:,} are missing" if end < m else
                             f"{end - m:,} rows beyond the data's {m:,} were counted")


# The covariance -------------------------------------------------------------

THREADS = host_threads()  # host threads for the float64 sums


def add_sums(parts, threads=None):
    """Σ over parts of (S, column sums), in float64, added in the parts' order."""
    total = Sum(parts[0][0].shape[0], threads)
    try:
        total.add_all(parts)
        return total.total()
    finally:
        total.close()


def combine(parts, m, out=None, threads=None):
    """C = S/m - d dᵀ (d = column sums / m) from the parts' (S, column sums)
    against one shift, added in float64 in one pass over bands of rows on the host's cores
    (gpubook.chapters.multi.sums.Sum) and written to `out` (float64 unless given:
    reusing an array saves the first touch of fresh memory)."""
    total = Sum(parts[0][0].shape[0], threads, out=out)
    try:
        return total.add_all(parts, m)
    finally:
        total.close()


# The subset search ------------------------------------------------------------


# The chapter's setting ----------------------------------------------------------------


class Group:
    """Several devices as one for gpubook.record: its name says how many."""

    def __init__(self, devs):
        first = devs[0]
        self.name, self.vendor, self.driver_version = describe(devs), first.vendor, first.driver_version
        self.platform = first.platform

