"""Chapter 10's host sum of the devices' partial XᵀX matrices, without a serial
step at the end: `Sum` adds each partial into one float64 matrix in bands of
rows over the host's cores, with no temporary arrays (a band's float32 rows are
cast as they are added), and may take a partial while the other devices are
still working. Optionally over the lower triangle only, mirrored at the finish.

Adds from several device threads may run at once: each band has a lock, and each
add walks the bands from its own starting point so that two adds rarely wait on
one band. Partials added one after the other give the same bits every time.
"""
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl as cl

from ... import launch


def host_threads():
    """The host cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 4


def check_size(n):
    """n as an int of at least 1, or a clear error naming n."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n must be an integer (the matrices are n x n), not {n!r}")
    if n < 1:
        raise ValueError(f"n must be at least 1 (the matrices are n x n), not {n}")
    return int(n)


def check_partial(s, col, n):
    """Raise a clear error unless S is an n x n matrix and col n column sums, of real numbers."""
    for value, name, shape in ((s, "a partial", (n, n)), (col, "its column sums", (n,))):
        if np.shape(value) != shape:
            raise ValueError(f"{name} of shape {np.shape(value)} for a sum of {(n, n)}: expected {shape}")
        if np.asarray(value).dtype.kind not in "biuf":
            raise TypeError(f"{name} must hold real numbers, not {np.asarray(value).dtype}")


def check_rows(m):
    """m, the rows the partials summed over, as a positive number, or a clear error."""
    if isinstance(m, bool) or not isinstance(m, (int, float, np.integer, np.floating)) or not 0 < m < np.inf:
        raise ValueError(f"m must be the positive number of rows summed, not {m!r}")
    return m


def bands(n, threads):
    """(first row, end row) bands of an n x n matrix, one per thread: few and
    large, so that the Python between NumPy's calls (which holds the GIL) stays
    small against the calls' own work, which runs without it."""
    rows = max(1, -(-n // max(1, threads)))
    return [(r0, min(n, r0 + rows)) for r0 in range(0, n, rows)]


class Sum:
    """Σ of n x n partials (S_k, column sums_k) in float64 (or out's dtype), then
    C = S/m - d dᵀ with d = Σ column sums / m. `start()` before a new sum, `add`
    each partial (from any thread, as it arrives), `finish(m)` for C; `spans`
    holds (label, start ns, end ns) of each add and of the finish."""

    def __init__(self, n, threads=None, triangle=False, out=None):
        self.n, self.triangle = check_size(n), triangle
        self.threads = threads or host_threads()
        self.out = np.empty((n, n)) if out is None else out
        if self.out.shape != (n, n):
            raise ValueError(f"out has shape {self.out.shape}, not {(n, n)}")
        self.bands = bands(n, self.threads)
        self.locks = [threading.Lock() for _ in self.bands]
        self._lock, self._local = threading.Lock(), threading.local()
        self.pool = ThreadPoolExecutor(self.threads) if self.threads > 1 else None
        self.start()

    def start(self):
        """Forget the partials added so far."""
        self.fresh = [True] * len(self.bands)
        self.cols, self.spans, self.adds = [], [], 0

    def _cols(self, b):
        return b[1] if self.triangle else self.n  # the lower triangle's columns of a band, or all

    def _map(self, fn, order):
        if self.pool is None:
            for i in order:
                fn(i)
        else:
            list(self.pool.map(fn, order))

    def add(self, s, col, label="add"):
        """Add one partial: S (n x n, any float dtype; when triangle, only the
        lower triangle and the diagonal squares of the bands are read) and its
        column sums."""
        self.add_all([(s, col)], label=label)

    def add_all(self, parts, m=None, label="add"):
        """Add several partials in one pass over each band (a band stays in
        cache while every partial is added to it) and, given m, finish C in the
        same pass: the least memory traffic when the partials are all in."""
        if not parts and m is not None:
            return self.finish(m)
        for s, col in parts:
            check_partial(s, col, self.n)
        if m is not None:
            check_rows(m)
        t0 = time.perf_counter_ns()
        with self._lock:
            first, self.adds = self.adds, self.adds + len(parts)
            self.cols += [np.asarray(col, np.float64) for _, col in parts]
        if m is not None and not self.cols:
            raise ValueError("no partial was added")
        d = None if m is None else np.sum(self.cols, axis=0) / m
        nb = len(self.bands)
        start = first % nb if nb else 0

        def one(i):
            r0, r1 = self.bands[i]
            w = self._cols(self.bands[i])
            with self.locks[i]:
                view = self.out[r0:r1, :w]
                for s, _ in parts:
                    if self.fresh[i]:
                        np.copyto(view, s[r0:r1, :w], casting="same_kind")
                        self.fresh[i] = False
                    else:
                        np.add(view, s[r0:r1, :w], out=view, casting="same_kind")
                if d is not None:
                    self._scale(view, d, r0, r1, w, m)

        self._map(one, [(start + i) % nb for i in range(nb)])
        if m is not None and self.triangle:
            self._map(self._mirror, range(nb))
        self.spans.append((label if m is None else f"{label} and finish", t0, time.perf_counter_ns()))
        return self.out

    def total(self):
        """(Σ S, Σ column sums) so far, unscaled (full matrix unless triangle)."""
        if not self.cols:
            raise ValueError("no partial was added")
        return self.out, np.sum(self.cols, axis=0)

    def _scratch(self, rows, cols):
        buf = getattr(self._local, "buf", None)
        if buf is None or buf.shape[0] < rows or buf.shape[1] < cols:
            buf = self._local.buf = np.empty((rows, max(cols, self.n)), self.out.dtype)
        return buf[:rows, :cols]

    def _scale(self, view, d, r0, r1, w, m):
        view *= 1.0 / m
        outer = self._scratch(r1 - r0, w)
        np.multiply.outer(d[r0:r1], d[:w], out=outer)
        view -= outer

    def _mirror(self, i):
        r0, r1 = self.bands[i]
        self.out[r0:r1, r1:] = self.out[r1:, r0:r1].T
        square = self.out[r0:r1, r0:r1]
        upper = np.triu_indices(r1 - r0, 1)
        square[upper] = square.T[upper]

    def finish(self, m):
        """C = S/m - d dᵀ in place in `out`, full and symmetric; returns it."""
        t0 = time.perf_counter_ns()
        _, cols = self.total()
        d = cols / check_rows(m)

        def scale(i):
            r0, r1 = self.bands[i]
            w = self._cols(self.bands[i])
            self._scale(self.out[r0:r1, :w], d, r0, r1, w, m)

        self._map(scale, range(len(self.bands)))
        if self.triangle:
            self._map(self._mirror, range(len(self.bands)))
        self.spans.append(("finish", t0, time.perf_counter_ns()))
        return self.out

    def close(self):
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None


class DeviceSum:
    """The same sum on one device, in double precision (kernels/multi/partials.cl):
    each partial copied to the device as it comes (float32) and added there,
    C finished there and read back once into page-locked memory. The device
    has its own context, so every partial crosses to it from the host, even
    those of its own lane. Same interface as Sum; `threads` is "device"."""

    threads, triangle = "device", False

    def __init__(self, lane, n, out=None):
        from ...device import pinned_empty, require_fp64
        from ...kernels import kernel

        n = check_size(n)
        require_fp64(lane.device)
        self.n, self.lane = n, lane
        ctx = lane.ctx
        self.queue = cl.CommandQueue(ctx, lane.device)
        mf = cl.mem_flags
        self.acc = cl.Buffer(ctx, mf.READ_WRITE, 8 * n * n)
        self.part = cl.Buffer(ctx, mf.READ_ONLY, 4 * n * n)
        self.d = cl.Buffer(ctx, mf.READ_ONLY, 8 * n)
        self.add_k = kernel(ctx, "multi/partials.cl", "add_partial")
        self.finish_k = kernel(ctx, "multi/partials.cl", "finish")
        self.out = pinned_empty(ctx, self.queue, (n, n), np.float64) if out is None else out
        if self.out.shape != (n, n) or self.out.dtype != np.float64:
            raise ValueError(f"out is {self.out.dtype} {self.out.shape}, not float64 {(n, n)}")
        self._lock = threading.Lock()
        self.start()

    def start(self):
        self.count, self.cols, self.spans = 0, [], []

    def add(self, s, col, label="add"):
        self.add_all([(s, col)], label=label)

    def add_all(self, parts, m=None, label="add"):
        if not parts and m is not None:
            return self.finish(m)
        n, t0 = self.n, time.perf_counter_ns()
        for s, col in parts:
            check_partial(s, col, n)
        if m is not None:
            check_rows(m)
        with self._lock:
            for s, col in parts:
                cl.enqueue_copy(self.queue, self.part, np.ascontiguousarray(s, np.float32))
                launch.enqueue(self.queue, self.add_k, (n * n,), (256,), self.acc, self.part,
                               np.int32(self.count == 0), np.int32(n * n))
                self.count += 1
                self.cols.append(np.asarray(col, np.float64))
            self.queue.finish()
        self.spans.append((label, t0, time.perf_counter_ns()))
        return self.out if m is None else self.finish(m)

    def total(self):
        """(Σ S, Σ column sums) so far, unscaled, read back from the device."""
        if not self.count:
            raise ValueError("no partial was added")
        s = np.empty((self.n, self.n))
        cl.enqueue_copy(self.queue, s, self.acc)
        return s, np.sum(self.cols, axis=0)

    def finish(self, m):
        """C = S/m - d dᵀ on the device, read back into `out`; returns it."""
        if not self.count:
            raise ValueError("no partial was added")
        t0, n = time.perf_counter_ns(), self.n
        d = np.sum(self.cols, axis=0) / check_rows(m)
        cl.enqueue_copy(self.queue, self.d, d)
        launch.enqueue(self.queue, self.finish_k, (n, n), (64, 4), self.acc, self.d, np.float64(1.0 / m),
                       np.int32(n))
        cl.enqueue_copy(self.queue, self.out, self.acc)
        self.spans.append(("finish on the device", t0, time.perf_counter_ns()))
        return self.out

    def close(self):
        for buf in (self.acc, self.part, self.d):
            buf.release()


def thread_counts(cores=None):
    """1, 2, 4, ... up to the host's cores, and the cores themselves."""
    cores = cores or host_threads()
    return sorted({1 << k for k in range(cores.bit_length()) if 1 << k <= cores} | {cores})


def time_options(parts, m, repeats=3, counts=None, lanes=None):
    """{(threads, triangle): median seconds} of the host sum of these partials
    once every one is in, in one pass (Sum.add_all): the whole matrix on each
    of `counts` threads (thread_counts() unless given), then the lower triangle
    on the fastest of those; given `lanes` (multi.Lane) whose first device has
    fp64, also ("device", False): DeviceSum on that device, the partials first
    copied into page-locked memory of the lanes in turn, as a run's read-backs
    leave them. Each way sums into its own matrix, its first touch paid in an
    untimed first pass."""
    n = parts[0][0].shape[0]

    def timed(total):
        times = []
        for _ in range(repeats + 1):
            total.start()
            t0 = time.perf_counter()
            total.add_all(todo, m)
            times.append(time.perf_counter() - t0)
        total.close()
        return float(np.median(times[1:]))

    todo = parts
    found = {(t, False): timed(Sum(n, t, False)) for t in (counts or thread_counts())}
    best = min(found, key=found.get)[0]
    found[(best, True)] = timed(Sum(n, best, True))
    if lanes and lanes[0].device.double_fp_config:
        from ...device import pinned_empty

        pinned = []
        for k, (s, col) in enumerate(parts):
            lane = lanes[k % len(lanes)]
            host = pinned_empty(lane.ctx, lane.queue, s.shape)
            np.copyto(host, s)
            pinned.append((host, lane))
        todo = [(host, col) for (host, _), (_, col) in zip(pinned, parts)]
        total = DeviceSum(lanes[0], n)
        try:
            found[("device", False)] = timed(total)
        finally:
            total.out.base.release(total.queue)
            for host, lane in pinned:
                host.base.release(lane.queue)
    return found
