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


def host_threads():
    """The host cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 4


def bands(n, threads, itemsize=8, cache=1 << 20):
    """(first row, end row) bands of an n x n matrix: at least four per thread,
    each at most `cache` bytes of rows."""
    rows = max(1, min(-(-n // (4 * threads)), cache // max(1, n * itemsize)))
    return [(r0, min(n, r0 + rows)) for r0 in range(0, n, rows)]


class Sum:
    """Σ of n x n partials (S_k, column sums_k) in float64 (or out's dtype), then
    C = S/m - d dᵀ with d = Σ column sums / m. `start()` before a new sum, `add`
    each partial (from any thread, as it arrives), `finish(m)` for C; `spans`
    holds (label, start ns, end ns) of each add and of the finish."""

    def __init__(self, n, threads=None, triangle=False, out=None):
        self.n, self.triangle = n, triangle
        self.threads = threads or host_threads()
        self.out = np.empty((n, n)) if out is None else out
        if self.out.shape != (n, n):
            raise ValueError(f"out has shape {self.out.shape}, not {(n, n)}")
        self.bands = bands(n, self.threads, self.out.itemsize)
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
        if s.shape != (self.n, self.n):
            raise ValueError(f"a partial of shape {s.shape} for a sum of {(self.n, self.n)}")
        t0 = time.perf_counter_ns()
        with self._lock:
            first, self.adds = self.adds, self.adds + 1
            self.cols.append(np.asarray(col, np.float64))
        nb = len(self.bands)
        start = (first * nb) // max(1, self.threads) % nb if nb else 0

        def one(i):
            r0, r1 = self.bands[i]
            w = self._cols(self.bands[i])
            with self.locks[i]:
                view, part = self.out[r0:r1, :w], s[r0:r1, :w]
                if self.fresh[i]:
                    np.copyto(view, part, casting="same_kind")
                    self.fresh[i] = False
                else:
                    np.add(view, part, out=view, casting="same_kind")

        self._map(one, [(start + i) % nb for i in range(nb)])
        self.spans.append((label, t0, time.perf_counter_ns()))

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

    def finish(self, m):
        """C = S/m - d dᵀ in place in `out`, full and symmetric; returns it."""
        t0 = time.perf_counter_ns()
        _, cols = self.total()
        d = cols / m

        def scale(i):
            r0, r1 = self.bands[i]
            w = self._cols(self.bands[i])
            view = self.out[r0:r1, :w]
            view *= 1.0 / m
            outer = self._scratch(r1 - r0, w)
            np.multiply.outer(d[r0:r1], d[:w], out=outer)
            view -= outer

        def mirror(i):
            r0, r1 = self.bands[i]
            self.out[r0:r1, r1:] = self.out[r1:, r0:r1].T
            square = self.out[r0:r1, r0:r1]
            upper = np.triu_indices(r1 - r0, 1)
            square[upper] = square.T[upper]

        order = list(range(len(self.bands)))
        self._map(scale, order)
        if self.triangle:
            self._map(mirror, order)
        self.spans.append(("finish", t0, time.perf_counter_ns()))
        return self.out

    def close(self):
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None


WAYS = {"one core": {"threads": 1}, "all cores": {}, "all cores, lower triangle": {"triangle": True}}


def time_options(parts, m, repeats=3, threads=None):
    """{way: median seconds} of the host sum of these partials once every one
    is in (the serial part when the sum waits for the last device), for each of
    WAYS; every way into its own reused matrix, its first touch paid untimed."""
    n = parts[0][0].shape[0]
    found = {}
    for way, kw in WAYS.items():
        total = Sum(n, kw.get("threads", threads), kw.get("triangle", False))
        times = []
        for _ in range(repeats + 1):
            total.start()
            t0 = time.perf_counter()
            for s, col in parts:
                total.add(s, col)
            total.finish(m)
            times.append(time.perf_counter() - t0)
        total.close()
        found[way] = float(np.median(times[1:]))
    return found
