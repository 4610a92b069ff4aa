"""Chapter 10, every GPU of one host: one context and queues per device, one
host thread per device, and work shared through a queue that each thread takes
from when its device is ready for more (work stealing: a faster device simply
comes back sooner).

Two jobs: chapter 6's streamed covariance with its row blocks shared (partial
sums against one common shift, added on the host in float64), and chapter 8's
subset search with its subset ranks shared (each device keeps the best of its
ranks).
"""
import os
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from math import comb

import numpy as np
import pyopencl as cl

from .. import launch
from ..device import choose_device, compiler_failure, list_devices, require_fp64
from ..kernels import kernel
from .outofcore import Stream, blocks
from .subsets import unrank
from ..timeline import spans


def devices(spec=None, count=None):
    """The chosen device (PYOPENCL_CTX, else the first GPU) and every other
    device of its platform and type that compiles a kernel, the chosen one
    first; at most `count` of them."""
    first = choose_device(spec)
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

    def by_worker(self, workers):
        return [[item for w, item in self.taken if w == k] for k in range(workers)]


def in_threads(fn, count):
    """fn(0), ..., fn(count - 1), each in its own thread; their results in order.
    The first error raised in a thread is raised here."""
    if count == 1:
        return [fn(0)]
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(fn, range(count)))


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

THREADS = os.cpu_count() or 4  # host threads for the float64 sums


def _bands(n, parts):
    edges = np.linspace(0, n, parts + 1).astype(int)
    return [(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def _in_bands(n, *passes, threads=None):
    """Run each pass over bands of rows in parallel threads, one pass after the
    other (NumPy releases the GIL in its loops)."""
    threads = threads or THREADS
    bands = _bands(n, 4 * threads)
    with ThreadPoolExecutor(threads) as pool:
        for one in passes:
            list(pool.map(one, bands))


def _sum_rows(parts, r0, r1):
    """Σ over parts of S[r0:r1], in float64."""
    rows = parts[0][0][r0:r1].astype(np.float64)
    for s, _ in parts[1:]:
        rows += s[r0:r1]
    return rows


def add_sums(parts, threads=None):
    """Σ over parts of (S, column sums), in float64."""
    n = parts[0][0].shape[0]
    total = np.empty((n, n))

    def rows(band):
        total[band[0]:band[1]] = _sum_rows(parts, *band)

    _in_bands(n, rows, threads=threads)
    return total, np.sum([c for _, c in parts], axis=0)


def combine(parts, m, out=None, threads=None):
    """C = S/m - d dᵀ (d = column sums / m) from the parts' (S, column sums)
    against one shift, added in float64 a band of rows at a time (a band stays
    in cache) and written to `out` (float64 unless given: reusing an array
    saves the first touch of fresh memory)."""
    n = parts[0][0].shape[0]
    d = np.sum([c for _, c in parts], axis=0) / m
    c = np.empty((n, n)) if out is None else out

    def rows(band):
        r0, r1 = band
        block = _sum_rows(parts, r0, r1)
        block *= 1.0 / m
        block -= np.multiply.outer(d[r0:r1], d)
        c[r0:r1] = block

    _in_bands(n, rows, threads=threads)
    return c


def stream_blocks(stream, work, worker, read):
    """One device thread's loop: take row blocks until none is left, each as soon
    as the device has a slot free for it, and stream it through `stream`.
    read(first row, rows, slot) returns the block as a host array."""
    while True:
        stream.wait_slot()
        item = work.take(worker)
        if item is None:
            return
        i0, rows = item
        stream.add(read(i0, rows, stream.count % 2))


class Covariance:
    """Chapter 6's streamed covariance over several devices: one `Stream` per
    device, row blocks taken from a shared queue, partial sums against one shift
    added on the host in float64."""

    def __init__(self, lanes, n, budget, tile, m=None):
        self.lanes, self.n = lanes, n
        self.streams = [Stream(lane.ctx, lane.device, n, budget, tile, m) for lane in lanes]
        self.rows = self.streams[0].rows
        self.out = None  # C, reused from run to run

    def run(self, x, count=None, read=None):
        """C (float64, in an array the next run reuses) of the m x n float32
        host array x on the first `count` devices. `read(device index, first row, rows, slot)` may supply the blocks
        instead of slices of x (x then gives only the shape and the shift).
        Afterwards: `seconds` (wall time from start to C on the host), `taken`
        (the blocks each device took), `timeline()`."""
        m, n = x.shape
        if n != self.n or x.dtype != np.float32:
            raise ValueError(f"expected float32 data with {self.n} columns, got {x.dtype} {x.shape}")
        count = len(self.lanes) if count is None else count
        if not 1 <= count <= len(self.lanes):
            raise ValueError(f"count must be 1 to {len(self.lanes)}, not {count}")
        work = Work(blocks(m, self.rows))
        shift = np.array(x[0], np.float32)
        t0 = time.perf_counter_ns()

        def drive(k):
            stream = self.streams[k]
            stream.begin(shift)
            stream_blocks(stream, work, k, (lambda i0, rows, slot: x[i0:i0 + rows]) if read is None
                          else (lambda i0, rows, slot: read(k, i0, rows, slot)))
            return stream.totals()

        parts = in_threads(drive, count)
        host_start = time.perf_counter_ns()
        if self.out is None:
            self.out = np.empty((n, n))
        c = combine(parts, m, out=self.out)
        end = time.perf_counter_ns()
        self.seconds, self.host_seconds = (end - t0) * 1e-9, (end - host_start) * 1e-9
        self.taken, self.count, self._clock = work.by_worker(count), count, (t0, host_start, end)
        check_rows([b for bs in self.taken for b in bs], m)
        return c

    def timeline(self):
        """The last run as (lane, label, start ms, end ms) rows for
        gpubook.timeline.plot_timeline: a copy lane and a compute lane per
        device, moved onto the host's clock (each device's clock is anchored at
        its last read-back, whose end its thread saw a moment later), and the
        host's float64 sum."""
        t0, host_start, end = self._clock
        lanes, offsets = {}, {}
        for k in range(self.count):
            stream, tag = self.streams[k], f"GPU {k}" if self.count > 1 else "GPU"
            offset = stream.readback_ns - stream.readback.profile.end
            for lane, items in ((f"{tag} copy", stream.copies), (f"{tag} compute", stream.kernels)):
                lanes[lane], offsets[lane] = items, offset
        rows = spans(lanes, offsets, t0)
        return rows + [("host", "float64 sum", (host_start - t0) * 1e-6, (end - t0) * 1e-6)]


def h2d_together(lanes, host, count, repeats=3):
    """Host→device GB/s with the first `count` devices copying at once, each its
    own slice of the page-locked array `host` (`repeats` times): all the bytes
    over the wall time from the first start to the last end (host clock)."""
    if host.nbytes // count == 0:
        raise ValueError("the host array is too small to give each device a slice")
    flat = host.reshape(-1).view(np.uint8)
    size = flat.size // count
    barrier = threading.Barrier(count)

    def copy(k):
        lane, part = lanes[k], flat[k * size:(k + 1) * size]
        buf = cl.Buffer(lane.ctx, cl.mem_flags.READ_WRITE, size)
        cl.enqueue_copy(lane.queue, buf, part)  # a first copy, untimed
        barrier.wait()
        start = time.perf_counter_ns()
        for _ in range(repeats):
            cl.enqueue_copy(lane.queue, buf, part, is_blocking=False)
        lane.queue.finish()
        end = time.perf_counter_ns()
        buf.release()
        return start, end

    times = in_threads(copy, count)
    wall = max(e for _, e in times) - min(s for s, _ in times)
    return count * repeats * size / wall


# The subset search ------------------------------------------------------------

def subset_problem(m, p, planted, noise=1.0, seed=10):
    """Observations of p candidate regressors and a response built from the
    `planted` candidates: (X'X, X'y, y'y) of [1 X] in float64, and X, y."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, p))
    x[:, 1::2] += 0.5 * x[:, 0::2][:, :p // 2]  # some correlation between neighbours
    y = 2.0 + x[:, list(planted)] @ (1.0 + np.arange(len(planted))) + noise * rng.standard_normal(m)
    xi = np.column_stack([np.ones(m), x])
    return xi.T @ xi, xi.T @ y, float(y @ y), x, y


def _subset_kernel(ctx, device, k, p):
    """subset_best for k of p with the largest work-group (256 down to 32) that
    the built kernel can run on this device."""
    for wg in (256, 128, 64, 32):
        if launch.why_not(device, wg, 16 * wg):
            continue
        knl = kernel(ctx, "lsq/4_subsets.cl", "subset_best", {"K": k, "P": p, "WG": wg})
        if launch.why_not(device, wg, kern=knl) is None:
            return knl, wg
    raise ValueError(f"{device.name.strip()} cannot run subset_best for k = {k} with a work-group "
                     "of 32 or more work-items")


class Subsets:
    """Chapter 8's subset search over several devices: every subset of 1 to
    k_max of p candidates, cut into chunks of ranks that the device threads
    take from a shared queue. Each work-group keeps its best subset, each
    thread the best of its chunks; the host keeps the best of the threads'
    (the smaller rank on a tie, so any split gives the same answer)."""

    def __init__(self, lanes, p, k_max, xtx, xty, yty, chunk=2**24):
        if not 1 <= k_max <= min(p, 8):
            raise ValueError(f"k_max = {k_max} must be 1 to min(p, 8) = {min(p, 8)}")
        if xtx.shape != (p + 1, p + 1) or xty.shape != (p + 1,):
            raise ValueError(f"expected X'X of {p + 1} x {p + 1} and X'y of {p + 1}")
        self.lanes, self.p, self.k_max, self.yty, self.chunk = lanes, p, k_max, float(yty), chunk
        self.count = sum(comb(p, k) for k in range(1, k_max + 1))
        mf = cl.mem_flags
        self.state = []
        for lane in lanes:
            require_fp64(lane.device)
            kernels = {k: _subset_kernel(lane.ctx, lane.device, k, p) for k in range(1, k_max + 1)}
            groups = -(-chunk // min(wg for _, wg in kernels.values()))
            bufs = [cl.Buffer(lane.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(v, np.float64))
                    for v in (xtx, xty)]
            bufs.append({k: cl.Buffer(lane.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.array(  # C(c, i)
                [[comb(c, i) for i in range(k + 1)] for c in range(p + 1)], np.uint64))
                for k in range(1, k_max + 1)})
            out = (cl.Buffer(lane.ctx, mf.READ_WRITE, 8 * groups), cl.Buffer(lane.ctx, mf.READ_WRITE, 8 * groups))
            self.state.append((kernels, bufs, out))

    def items(self):
        """(k, first rank, count) of every chunk."""
        return [(k, first, min(self.chunk, comb(self.p, k) - first))
                for k in range(1, self.k_max + 1) for first in range(0, comb(self.p, k), self.chunk)]

    def _chunk(self, lane, state, item):
        (kernels, (a, b, binom), (rss_buf, rank_buf)), (k, first, count) = state, item
        knl, wg = kernels[k]
        groups = -(-count // wg)
        knl(lane.queue, (groups * wg,), (wg,), a, b, np.float64(self.yty), np.uint64(first), np.uint64(count),
            binom[k], rss_buf, rank_buf)
        rss, rank = np.empty(groups), np.empty(groups, np.uint64)
        cl.enqueue_copy(lane.queue, rss, rss_buf)
        cl.enqueue_copy(lane.queue, rank, rank_buf)
        best = rss.min()
        return best, int(rank[rss == best].min())

    def run(self, count=None):
        """{k: (smallest RSS, its subset of candidate indices)} on the first
        `count` devices; `seconds` and `taken` (chunks per device) afterwards."""
        count = len(self.lanes) if count is None else count
        if not 1 <= count <= len(self.lanes):
            raise ValueError(f"count must be 1 to {len(self.lanes)}, not {count}")
        work = Work(self.items())

        def drive(d):
            best = {}
            while (item := work.take(d)) is not None:
                rss, rank = self._chunk(self.lanes[d], self.state[d], item)
                best[item[0]] = min(best.get(item[0], (np.inf, rank)), (rss, rank))
            return best

        t0 = time.perf_counter()
        found = in_threads(drive, count)
        self.seconds = time.perf_counter() - t0
        self.taken = work.by_worker(count)
        covered = [(k, first, n) for chunks in self.taken for k, first, n in chunks]
        if sorted(covered) != self.items():
            raise AssertionError("the chunks taken are not every chunk exactly once")
        best = {}
        for part in found:
            for k, pair in part.items():
                best[k] = min(best.get(k, pair), pair)
        return {k: (rss, unrank(rank, k, self.p)) for k, (rss, rank) in sorted(best.items())}


# The chapter's setting ----------------------------------------------------------------

def fill_repeated(out, base, threads=8):
    """Fill `out` with copies of `base` one after the other (rows), in parallel:
    the data set `base` several times over has exactly base's covariance."""
    m0 = base.shape[0]
    if out.shape[0] % m0 or out.shape[1:] != base.shape[1:]:
        raise ValueError(f"{out.shape} is not a whole number of copies of {base.shape}")
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda i0: np.copyto(out[i0:i0 + m0], base), range(0, out.shape[0], m0)))
    return out


def best_tile(ctx, device):
    """Chapter 6's fastest register-tile shape for this device (its record), else
    the first fallback whose kernel builds here (covariance.runnable_tile)."""
    from . import covariance as cv
    from ..records import device_slug, load_results

    recorded = load_results("06_covariance").get(device_slug(device), {}).get("data", {}).get("best_tile")
    return cv.runnable_tile(ctx, device, ([recorded] if recorded else []) + [cv.shape(128, 8, 8, 16, 2, 0)])


def resource_rows(lane, tile, subsets=None):
    """(label, kernel, local size) of the kernels this chapter times on one lane, for
    gpubook.resource_table: the covariance block's three (at the local sizes that
    covariance.launch_col_sums, launch_centre and launch_tiles ask for) and, given
    a Subsets, its subset_best for every k."""
    from .. import tiles

    ctx, dev = lane.ctx, lane.device
    sums = kernel(ctx, "covariance/col_sums.cl", "col_sums")
    centre = kernel(ctx, "covariance/centre.cl", "centre")
    product = tiles.launch_kernel(ctx, dev, tile, np.float32, triangle=True, aligned=True)
    rows = [("col_sums", sums, launch.local_size(sums, dev, (64, 1))),
            ("centre", centre, launch.local_size(centre, dev, (64, 4))),
            (f"register_tiles, float ({tiles.label(tile)})", product, tiles.work_items(tile))]
    if subsets is not None:
        kernels = subsets.state[subsets.lanes.index(lane)][0]
        rows += [(f"subset_best, k = {k}", knl, wg) for k, (knl, wg) in sorted(kernels.items())]
    return rows


def recorded_scaling(root=None):
    """[(device group, devices, covariance speed-up, subset speed-up)] of the recorded
    runs of chapter 10 on hosts with more than one device (none yet: [])."""
    from ..records import load_results

    found = []
    for entry in load_results("10_multi_gpu", root).values():
        data = entry["data"]
        g = int(data.get("devices", 1))
        if g > 1:
            cov, sub = data["covariance"], data["subsets"]["seconds"]
            found.append((entry["device"], g, cov["1"]["seconds"] / cov[str(g)]["seconds"], sub["1"] / sub[str(g)]))
    return found


class Group:
    """Several devices as one for gpubook.record: its name says how many."""

    def __init__(self, devs):
        first = devs[0]
        self.name, self.vendor, self.driver_version = describe(devs), first.vendor, first.driver_version
        self.platform = first.platform


def plot_speedup(ax, counts, speedups, bound, title):
    """Speed-up against the number of devices, with the ideal line and the
    speed-up the bounds allow."""
    ax.plot(counts, counts, color="0.6", linestyle=":", label="ideal (× devices)")
    ax.plot(counts, bound, color="C1", linestyle="--", marker="s", label="allowed by the bounds")
    ax.plot(counts, speedups, color="C0", marker="o", label="measured")
    ax.set_xticks(counts)
    ax.set_xlabel("devices used")
    ax.set_ylabel("speed-up over one device (×)")
    ax.set_title(title, fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return ax
