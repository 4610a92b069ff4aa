"""Chapter 10's first job: the streamed covariance of gpubook.stream with its row
blocks shared between devices (partial sums against one common shift, added on
the host in float64), the transfers that bound it, and its resources.
"""
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl as cl

from ... import launch
from ...kernels import kernel
from ...stream import Stream, blocks, check_host_rows, undefined_columns
from ...timeline import spans
from ...xtx import ROW_PAD, round_up
from .lanes import THREADS, Work, in_threads, check_rows
from .sums import DeviceSum, Sum


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


def tapered(m, rows, ends, parts=4):
    """The (first row, rows) blocks of `blocks(m, rows)`, with `ends` blocks at
    each end cut into `parts` pieces (multiples of ROW_PAD rows). A device's first
    copy keeps its kernels waiting, and its last kernels run after every copy: a
    smaller block at each end shortens both, the pipeline's fill and its drain.
    Too few blocks to taper (no more than 2 * ends): the blocks as they are."""
    whole = blocks(m, rows)
    if len(whole) <= 2 * ends:
        return whole
    step = round_up(-(-rows // parts), ROW_PAD)

    def cut(block):
        i0, n = block
        return [(i, min(step, i0 + n - i)) for i in range(i0, i0 + n, step)]

    return ([p for b in whole[:ends] for p in cut(b)] + whole[ends:-ends]
            + [p for b in whole[-ends:] for p in cut(b)])


class Covariance:
    """Chapter 6's streamed covariance over several devices: one `Stream` per
    device, row blocks taken from a shared queue, partial sums against one shift
    added in float64 on the host (`sums.Sum`) over `threads` host threads, or
    on the first device (`sums.DeviceSum`, threads="device"): all
    in one pass after the last device (overlap=False), or each as soon as its
    device is done (overlap=True). The queue's first and last blocks are cut in
    four (`tapered`, one block per device at each end)."""

    def __init__(self, lanes, n, budget, tile, m=None, triangle=False, threads=None, overlap=False):
        self.lanes, self.n, self.triangle, self.threads = lanes, n, triangle, threads or THREADS
        self.overlap = overlap
        self.streams = [Stream(lane.ctx, lane.device, n, budget, tile, m) for lane in lanes]
        self.rows = self.streams[0].rows
        self.sum = None  # the host's float64 sum, its matrix reused from run to run

    @property
    def out(self):
        return None if self.sum is None else self.sum.out

    def _total(self):
        if self.sum is None or (self.sum.triangle, self.sum.threads) != (self.triangle, self.threads):
            out = self.out
            if self.sum is not None:
                self.sum.close()
            self.sum = (DeviceSum(self.lanes[0], self.n) if self.threads == "device"
                        else Sum(self.n, self.threads, self.triangle, out))
        self.sum.start()
        return self.sum

    def run(self, x, count=None, read=None, overlap=None):
        """C (float64, in an array the next run reuses) of the m x n float32
        host array x on the first `count` devices. `read(device index, first row, rows, slot)` may supply the blocks
        instead of slices of x (x then gives only the shape and the shift).
        A device that fails (a build, an out-of-memory error) gives its blocks
        back to the queue and the others take them; `failed` says which and why.
        Afterwards: `seconds` (wall time from start to C on the host),
        `host_seconds` (from the last device's read-back to C: the serial part),
        `taken` (the blocks each device took), `timeline()`."""
        if read is None:
            m, n = check_host_rows(x, self.n).shape  # before any thread: a bad x is no device's failure
        elif not isinstance(x, np.ndarray) or x.dtype != np.float32 or x.ndim != 2 or x.shape[1] != self.n \
                or not len(x):
            raise ValueError(f"x: expected float32 data of at least one row of {self.n} columns, "
                             f"got {getattr(x, 'dtype', type(x).__name__)} {np.shape(x)}")
        m, n = x.shape
        count = len(self.lanes) if count is None else count
        if not 1 <= count <= len(self.lanes):
            raise ValueError(f"count must be 1 to {len(self.lanes)}, not {count}")
        work = Work(tapered(m, self.rows, count))
        shift = np.array(x[0], np.float32)
        overlap = self.overlap if overlap is None else overlap
        total, self.failed, done, pending = self._total(), {}, {}, []
        t0 = time.perf_counter_ns()

        def drive(k):
            stream = self.streams[k]
            try:
                stream.begin(shift)
                if read is None:
                    def rows_of(i0, rows, slot):
                        return x[i0:i0 + rows]
                else:
                    def rows_of(i0, rows, slot):
                        return read(k, i0, rows, slot)
                stream_blocks(stream, work, k, rows_of)
                s, col = stream.totals()
            # any failure of this device: the others take its blocks
            except Exception as err:  # noqa: BLE001
                work.give_back(k)
                self.failed[k] = f"{type(err).__name__}: {err}"
                return None
            if stream.count == 0:  # the others took every block: nothing to add
                return None
            done[k] = stream.readback_ns
            if not overlap:
                return k, s, col
            total.add(s, col, "float64 add")
            return None

        alive = list(range(count))
        while True:
            pending = [(p[1], p[2]) for p in in_threads(lambda i: drive(alive[i]), len(alive)) if p]
            alive = [k for k in alive if k not in self.failed]
            if not work.left():
                break
            if not alive:
                raise RuntimeError("every device failed: " + "; ".join(f"{self.lanes[k].name} ({k}): {why}"
                                                                        for k, why in self.failed.items()))
            total.add_all(pending, label="float64 add")  # a device failed: its blocks need another round
        last = max(done.values())
        c = total.add_all(pending, m, label="float64 add") if not overlap else total.finish(m)
        undefined_columns(c, np.sum(total.cols, axis=0))  # NaN for a feature with a NaN or Inf, as NumPy
        end = time.perf_counter_ns()
        self.seconds, self.host_seconds = (end - t0) * 1e-9, (end - last) * 1e-9
        self.taken, self.count, self._clock, self._done = work.by_worker(count), count, (t0, last, end), set(done)
        check_rows([b for bs in self.taken for b in bs], m)
        return c

    def shares(self):
        """The rows each device took in the last run, in units of one full block
        (fractional where a device took some of `tapered`'s cut end blocks)."""
        return [sum(rows for _, rows in taken) / self.rows for taken in self.taken]

    def timeline(self):
        """The last run as (lane, label, start ms, end ms) rows for
        gpubook.timeline.plot_timeline: a copy lane and a compute lane per
        device, moved onto the host's clock (each device's clock is anchored at
        its last read-back, whose end its thread saw a moment later), and the
        host's float64 adds and finish."""
        t0 = self._clock[0]
        lanes, offsets = {}, {}
        for k in sorted(self._done):
            stream, tag = self.streams[k], f"GPU {k}" if self.count > 1 else "GPU"
            offset = stream.readback_ns - stream.readback.profile.end
            for lane, items in ((f"{tag} copy", stream.copies), (f"{tag} compute", stream.kernels)):
                lanes[lane], offsets[lane] = items, offset
        rows = spans(lanes, offsets, t0)
        return rows + [("host", label, (s - t0) * 1e-6, (e - t0) * 1e-6) for label, s, e in self.sum.spans]


def h2d_together(lanes, host, count, repeats=3, tries=3):
    """Host→device GB/s with the first `count` devices copying at once, each its
    own slice of the page-locked array `host` (`repeats` times): all the bytes
    over the wall time from the first start to the last end (host clock), the
    best of `tries` (a bound takes the rate the copies can reach, not a slow
    moment of the host's)."""
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

    walls = []
    for _ in range(tries):
        times = in_threads(copy, count)
        walls.append(max(e for _, e in times) - min(s for s, _ in times))
    return count * repeats * size / min(walls)


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
    from ... import xtx as cv
    from ...records import device_slug, load_results

    recorded = load_results("06_covariance").get(device_slug(device), {}).get("data", {}).get("best_tile")
    return cv.runnable_tile(ctx, device, ([recorded] if recorded else []) + [cv.shape(128, 8, 8, 16, 2, 0)])


def resource_rows(lane, tile, subsets=None):
    """(label, kernel, local size) of the kernels this chapter times on one lane, for
    gpubook.resource_table: the covariance block's three (at the local sizes that
    covariance.launch_col_sums, launch_centre and launch_tiles ask for) and, given
    a Subsets, its subset_best for every k."""
    from ... import tiles

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
    from ...records import load_results

    found = []
    for entry in load_results("10_multi_gpu", root).values():
        data = entry["data"]
        g = int(data.get("devices", 1))
        if g > 1:
            cov, sub = data["covariance"], data["subsets"]["seconds"]
            found.append((entry["device"], g, cov["1"]["seconds"] / cov[str(g)]["seconds"], sub["1"] / sub[str(g)]))
    return found
