"""The latency of a load under load, for Little's law (kernels/machine/loaded_latency.cl).

The pointer chase times one load with one warp on the device: memory's queues are
empty. A kernel that streams keeps them busy, and each of its loads waits longer.
Here the read kernel's own loads are timed from inside, with the SM's cycle counter,
at several launch sizes: from a few work-items per compute unit up to the read
kernel's own launch, and once with one work-group alone. Each size gives a read rate
and the wait of a load. Little's law holds at every size (the bytes in flight are the
wait times the rate); the bytes memory *needs* are those at the knee, the smallest
launch that reads within 10% of the best rate. Past it, more work-items only lengthen
the queues. Only NVIDIA's OpenCL reads the counter (inline PTX); elsewhere `measure`
says why and the page keeps the chase's latency.
"""
import numpy as np
import pyopencl as cl

from ... import clock
from ...device import compute_units
from ...kernels import KernelBuildError, kernel
from ...localmem import pow2_floor
from ...timing import time_events
from .probes import Reader, largest_working_set

TIMED, SKIP = 16, 8    # the loads each work-group's first warp times, after SKIP
KNEE = 0.9             # the knee: the first launch within 10% of the best read rate


class TimedReader(Reader):
    """The read kernel's buffer and check, with loaded_latency.cl's timed loads, at
    launch sizes up to the read kernel's own."""

    def __init__(self, ctx, queue, device, top, scale):
        super().__init__(ctx, queue, device, top, scale, blocked=False)
        self.timed = kernel(ctx, ("device/nv_clock.cl", "machine/loaded_latency.cl"),
                            "loaded_latency",
                            {"NV_PTX": int(clock.why_not(device) is None),
                             "TIMED": TIMED, "SKIP": SKIP})
        self.cus = compute_units(device)
        most = max(self.total // self.local, self.total // 32)
        self.stamps = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, 8 * most)
        self.sink = cl.LocalMemory(4)

    def shapes(self):
        """(global, local) sizes from about 64 work-items per compute unit to the
        read kernel's launch, powers of two, every work-group at least one warp."""
        out, total = [], self.total
        while total >= 32 and (not out or total // self.cus >= 48):
            out.append((total, max(32, min(self.local, pow2_floor(total // self.cus)))))
            total //= 2
        return out[::-1]

    def launch_timed(self, nbytes, total=None, local=None, reads=None):
        """One launch of `total` work-items in groups of `local` (the read kernel's
        shape by default), each reading `reads` times (default: `nbytes` in all)."""
        total, local = total or self.total, local or self.local
        reads = reads or max(1, (self.bytes_per_launch() // 16) // total)
        self.last = (total, local, reads)
        return self.timed(self.queue, (total,), (local,), self.src, self.partial,
                          self.stamps, self.sink, np.uint32(nbytes // 16 - 1),
                          np.uint32(reads))

    def cycles_per_load(self):
        """Per work-group of the last launch, the mean cycles of one timed load."""
        total, local, _ = self.last
        got = np.empty(total // local, np.uint64)
        cl.enqueue_copy(self.queue, got, self.stamps)
        return got.astype(float) / TIMED

    def check_timed(self, nbytes):
        """The last launch's sum against NumPy's over the same elements."""
        total, _, reads = self.last
        got = np.empty(total, np.float32)
        cl.enqueue_copy(self.queue, got, self.partial)
        n4 = nbytes // 16
        if (total * reads) % n4 == 0:    # every element read the same number of times
            want = (total * reads // n4) * self.host[:nbytes // 4].sum(dtype=np.float64)
        else:
            idx = (np.arange(total)[:, None] + np.arange(reads)[None, :] * total) & (n4 - 1)
            want = self.host.reshape(-1, 4)[idx.ravel()].sum(dtype=np.float64)
        if got.sum(dtype=np.float64) != want:
            raise RuntimeError(f"the timed read summed {got.sum(dtype=np.float64)}; "
                               f"NumPy says {want}")


def measure(ctx, queue, device, scale, ghz=None, repeats=5):
    """The read kernel's loads timed from inside: {"alone_ns": a load's wait with one
    work-group on the device, "points": per launch size the work-items per compute
    unit, the read rate (GB/s) and the wait (ns, median over work-groups, with its
    20-80% band), "knee": the point Little's law takes, "full": the read kernel's own
    launch, "ghz"}; or {"why_not": reason} where no counter is read."""
    why = clock.why_not(device)
    if why:
        return {"why_not": why}
    ghz = ghz or clock.measure(ctx, queue, device).ghz
    try:
        return _timed(ctx, queue, device, scale, ghz, repeats)
    except (cl.Error, KernelBuildError) as err:   # the driver refused it: say so
        return {"why_not": f"the timed read kernel did not build or run here: "
                           f"{str(err).splitlines()[0][:160]}"}


def _waits(reader, ghz):
    ns = reader.cycles_per_load() / ghz
    if not (ns > 0).all():
        raise ValueError("the SM cycle counter did not advance over a load")
    q20, med, q80 = np.quantile(ns, [0.2, 0.5, 0.8])
    return {"ns": float(med), "ns_lo": float(q20), "ns_hi": float(q80)}


def _timed(ctx, queue, device, scale, ghz, repeats):
    top = largest_working_set(device, scale)
    reader = TimedReader(ctx, queue, device, top, scale)
    if reader.reads < 2 * (SKIP + TIMED):
        return {"why_not": f"each work-item reads only {reader.reads} times at this "
                           f"scale, too few to time {TIMED} loads while the rest stream"}
    try:
        reader.launch_timed(top, reader.local, reader.local, 2 * (SKIP + TIMED)).wait()
        reader.check_timed(top)
        out = {"ghz": ghz, "timed_loads": TIMED, "alone_ns": _waits(reader, ghz)["ns"]}
        points = []
        for total, local in reader.shapes():
            t = time_events(lambda: reader.launch_timed(top, total, local), repeats=repeats)
            reader.check_timed(top)
            points.append({"items_per_cu": total / reader.cus, "local": local,
                           "gbs": reader.bytes_per_launch() / t.median / 1e9,
                           **_waits(reader, ghz)})
    except ValueError as err:
        return {"why_not": str(err)}
    best = max(p["gbs"] for p in points)
    out.update(points=points, full=points[-1],
               knee=next(p for p in points if p["gbs"] >= KNEE * best))
    return out
