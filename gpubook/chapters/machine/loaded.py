"""The latency of a load under load, for Little's law (kernels/machine/loaded_latency.cl).

The pointer chase times one load with one warp on the device: memory's queues are
empty. A kernel that streams at the full read rate keeps them full, and each of its
loads waits longer. Here the read kernel's own loads are timed from inside, with the
SM's cycle counter, once with every compute unit reading (the device at its read
rate) and once with one work-group alone; the same code and the same addresses, so
the difference is the queueing. Only NVIDIA's OpenCL reads the counter (inline PTX);
elsewhere `measure` says why and the page keeps the chase's latency.
"""
import numpy as np
import pyopencl as cl

from ... import clock
from ...kernels import KernelBuildError, kernel
from ...timing import time_events
from .probes import Reader, largest_working_set

TIMED, SKIP = 16, 8    # the loads each work-group's first work-item times, after SKIP


class TimedReader(Reader):
    """The read kernel's buffer, shape and check, with loaded_latency.cl's timed loads."""

    def __init__(self, ctx, queue, device, top, scale):
        super().__init__(ctx, queue, device, top, scale, blocked=False)
        self.timed = kernel(ctx, "machine/loaded_latency.cl", "loaded_latency",
                            {"NV_PTX": int(clock.why_not(device) is None),
                             "TIMED": TIMED, "SKIP": SKIP})
        self.groups = self.total // self.local
        self.stamps = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, 8 * self.groups)
        self.sink = cl.LocalMemory(4)

    def launch_timed(self, nbytes, items=None):
        """One launch over `items` work-items (all of the read kernel's by default)."""
        items = self.total if items is None else items
        reads = self.reads if items == self.total else SKIP + TIMED + 8
        self.last = (items, reads)
        return self.timed(self.queue, (items,), (self.local,), self.src, self.partial,
                          self.stamps, self.sink, np.uint32(nbytes // 16 - 1),
                          np.uint32(reads))

    def cycles_per_load(self):
        """Per work-group of the last launch, the mean cycles of one timed load."""
        groups = self.last[0] // self.local
        got = np.empty(self.groups, np.uint64)
        cl.enqueue_copy(self.queue, got, self.stamps)
        return got[:groups].astype(float) / TIMED

    def check_timed(self, nbytes):
        """The last launch's sum against NumPy's over the same elements."""
        items, reads = self.last
        if items == self.total:
            return self.check(nbytes)
        got = np.empty(items, np.float32)
        cl.enqueue_copy(self.queue, got, self.partial)
        idx = (np.arange(items)[:, None] + np.arange(reads)[None, :] * items) & (nbytes // 16 - 1)
        want = self.host.reshape(-1, 4)[idx.ravel()].sum(dtype=np.float64)
        if got.sum(dtype=np.float64) != want:
            raise RuntimeError(f"the timed read summed {got.sum(dtype=np.float64)}; "
                               f"NumPy says {want}")


def measure(ctx, queue, device, scale, ghz=None, repeats=5):
    """The read kernel's loads timed from inside: a dict of the latency in ns under
    load (every compute unit reading) and alone (one work-group), their 20-80% bands
    over work-groups, the loaded launch's read rate (GB/s) and the clock used; or
    {"why_not": reason} where the device has no counter OpenCL C can read."""
    why = clock.why_not(device)
    if why:
        return {"why_not": why}
    ghz = ghz or clock.measure(ctx, queue, device).ghz
    top = largest_working_set(device, scale)
    try:
        return _timed(ctx, queue, device, scale, top, ghz, repeats)
    except (cl.Error, KernelBuildError) as err:   # the driver refused it: say so
        return {"why_not": f"the timed read kernel did not build or run here: "
                           f"{str(err).splitlines()[0][:160]}"}


def _timed(ctx, queue, device, scale, top, ghz, repeats):
    reader = TimedReader(ctx, queue, device, top, scale)
    if reader.reads < 2 * (SKIP + TIMED):
        return {"why_not": f"each work-item reads only {reader.reads} times at this "
                           f"scale, too few to time {TIMED} loads while the rest stream"}
    out = {"ghz": ghz, "timed_loads": TIMED, "work_groups": reader.groups}
    for name, items in (("loaded", None), ("alone", reader.local)):
        t = time_events(lambda: reader.launch_timed(top, items), repeats=repeats)
        reader.check_timed(top)
        ns = reader.cycles_per_load() / ghz
        if not (ns > 0).all():
            return {"why_not": "the SM cycle counter did not advance over a load"}
        q20, med, q80 = np.quantile(ns, [0.2, 0.5, 0.8])
        out.update({f"{name}_ns": float(med), f"{name}_ns_lo": float(q20),
                    f"{name}_ns_hi": float(q80)})
        if items is None:
            out["loaded_gbs"] = reader.bytes_per_launch() / t.median / 1e9
    return out
