"""Chapter 10's store: a `.npy` file of float32 rows on a file system every
worker sees, written and read by row range with several threads, and the rows a
worker reads once into pinned memory and keeps (`Held`).
"""
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ...device import pinned_empty


READERS = 8  # threads per device reading the store into pinned memory, at least


def readers(devices):
    """Reader threads per device: the host's cores shared between its devices."""
    return max(READERS, (os.cpu_count() or 1) // devices)


def _offset(path, x):
    """Where the data start in the .npy file at `path` if it already holds an
    array of x's shape and dtype; else None."""
    try:
        old = np.load(path, mmap_mode="r")
    except (OSError, ValueError):
        return None
    same = old.shape == x.shape and old.dtype == x.dtype and old.flags.c_contiguous
    return old.offset if same else None


def save_rows(path, x, threads=READERS):
    """Write the 2-D array x as a .npy file, bands of rows in parallel. A file
    that already holds an array of the same shape and dtype is written over in
    place: reusing its pages is quicker than allocating a new file's."""
    offset = _offset(path, x)
    if offset is None:
        out = np.lib.format.open_memmap(path, mode="w+", dtype=x.dtype, shape=x.shape)
        offset = out.offset
        del out
    band = max(1, x.shape[0] // (4 * threads))
    fd = os.open(path, os.O_WRONLY)
    try:
        def write(i0):
            data = memoryview(np.ascontiguousarray(x[i0:i0 + band])).cast("B")
            at, done = offset + i0 * x.shape[1] * x.itemsize, 0
            while done < len(data):  # a write may take less than it was given
                done += os.pwrite(fd, data[done:], at + done)
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(write, range(0, x.shape[0], band)))
    finally:
        os.close(fd)
    return path


class RowFile:
    """Rows of a .npy store, read with plain positioned reads (no memory
    mapping, so no page faults) into a caller's buffer, in parallel pieces."""

    def __init__(self, path, n=None):
        try:
            mm = np.load(path, mmap_mode="r")
        except (OSError, ValueError) as err:
            raise ValueError(f"{path} is not a readable .npy file: {err}") from None
        if mm.ndim != 2 or mm.dtype != np.float32 or not mm.flags.c_contiguous or (n is not None and mm.shape[1] != n):
            want = f"n = {n} columns" if n is not None else "2-D rows"
            raise ValueError(f"{path} holds {mm.dtype} data of shape {mm.shape}; expected C-ordered "
                             f"float32 rows with {want}")
        self.path, self.shape, self.offset = path, mm.shape, mm.offset
        self.first = np.array(mm[0]) if mm.shape[0] else None  # the first observation: the shift
        del mm
        self.fd = os.open(path, os.O_RDONLY)

    def close(self):
        os.close(self.fd)

    def read(self, i0, out, pool, piece=8 << 20):
        """Fill `out` (rows x n float32, C-contiguous) with rows i0, i0 + 1, ..."""
        rows, n = out.shape
        if n != self.shape[1] or i0 < 0 or i0 + rows > self.shape[0]:
            raise ValueError(f"rows {i0}..{i0 + rows - 1} of {n} columns are not in {self.path} {self.shape}")
        buf, start = memoryview(out).cast("B"), self.offset + 4 * i0 * n

        def fill(a):
            b = min(a + piece, len(buf))
            while a < b:
                got = os.preadv(self.fd, [buf[a:b]], start + a)
                if got == 0:
                    raise OSError(f"{self.path} ended early")
                a += got

        list(pool.map(fill, range(0, len(buf), piece)))
        return out


@dataclass
class HeldRows:
    """Rows first, first + 1, ... of a store, kept in a worker's pinned memory."""
    first: int
    x: np.ndarray

    def __sizeof__(self):  # what Dask counts for this result: the rows, so it never ships them lightly
        return self.x.nbytes


class StoreReader:
    """For the threads path: read(device index, first row, rows, slot) fills
    that device's pinned staging slot from the store, as a Dask task does."""

    def __init__(self, lanes, path, n, rows):
        self.files = [RowFile(path, n) for _ in lanes]
        self.staging = [pinned_empty(lane.ctx, lane.queue, (2, rows, n)) for lane in lanes]
        self.pools = [ThreadPoolExecutor(readers(len(lanes))) for _ in lanes]

    def __call__(self, k, i0, rows, slot):
        return self.files[k].read(i0, self.staging[k][slot][:rows], self.pools[k])

    def rate(self, blocks=8):
        """GB/s at which every device's reader threads, all at once and with no
        device work, fill their staging from the store: the store path's own bound."""
        m, n = self.files[0].shape
        rows = min(self.staging[0].shape[1], m)
        count = max(1, min(blocks, m // rows))

        def take(k):                             # device k's blocks, spread over the store
            for b in range(count):
                self(k, (k * count + b) * rows % (m - rows + 1), rows, b % 2)

        take(0)                                  # the reader threads start once, outside the timing
        with ThreadPoolExecutor(len(self.files)) as drivers:
            t0 = time.perf_counter()
            list(drivers.map(take, range(len(self.files))))
            seconds = time.perf_counter() - t0
        return len(self.files) * count * rows * n * 4 / seconds / 1e9

    def close(self):
        for f, pool in zip(self.files, self.pools):
            f.close()
            pool.shutdown()
