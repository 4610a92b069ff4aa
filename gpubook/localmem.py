"""Local memory's read rate by stride (kernels/machine/local_stride.cl): work-items
read local[(lid * stride + k) % N], so one warp's addresses fall in gcd(stride, 32)
ways into one bank of a 32-bank memory. The machine page draws the curve; chapter 6
bounds its local-memory step by the stride-1 rate.
"""
import numpy as np
import pyopencl as cl

from .device import compute_units
from .kernels import kernel
from .launch import largest, local_memory
from .records import device_slug, load_results
from .timing import time_events

MACHINE = "00_machine"  # the record that holds the measured rate


def recorded_gbs(device, root=None):
    """The stride-1 local read rate (GB/s) in the machine chapter's record for the
    device, or None."""
    entry = load_results(MACHINE, root).get(device_slug(device))
    return None if entry is None else entry["data"].get("local_gbs")


def pow2_floor(n):
    return 1 << (int(n).bit_length() - 1)


# ---------------------------------------------------------------- local memory
class LocalStride:
    """The local-memory stride kernel: N floats in local memory, `reads` loads per work-item."""

    def __init__(self, ctx, queue, device, scale):
        mf = cl.mem_flags
        have = local_memory(device)  # 0 where the device reports none
        self.n = min(2048, pow2_floor(max(1, have // 4)))
        if self.n < 1024:
            raise ValueError(f"{device.name.strip()} reports {have:,} bytes of local memory; "
                             "the stride sweep needs 4 KiB")
        self.kern = kernel(ctx, "machine/local_stride.cl", "local_stride", {"N": self.n})
        self.local = largest(device, 256, local_bytes=lambda size: 4 * self.n, kern=self.kern)
        per_cu = 2048 if scale == "full" else 256
        self.total = max(1, compute_units(device) * per_cu // self.local) * self.local
        self.reads = 2048 if scale == "full" else 512
        self.queue = queue
        self.host = (np.arange(self.n, dtype=np.uint32) % 5).astype(np.float32)
        self.src = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=self.host)
        self.out = cl.Buffer(ctx, mf.WRITE_ONLY, 4 * self.total)

    def launch(self, stride):
        return self.kern(self.queue, (self.total,), (self.local,), self.src, self.out,
                         np.uint32(stride), np.uint32(self.reads))

    def reference(self, stride):
        """NumPy's sum for each work-item of one work-group (float64)."""
        lid = np.arange(self.local)[:, None]
        k = np.arange(self.reads)[None, :]
        return self.host.astype(np.float64)[(lid * stride + k) & (self.n - 1)].sum(axis=1)

    def sums(self):
        """Every work-item's sum from the last launch (float64)."""
        got = np.empty(self.total, np.float32)
        cl.enqueue_copy(self.queue, got, self.out)
        return got.astype(np.float64)

    def check(self, stride):
        want = np.tile(self.reference(stride), self.total // self.local)
        if not np.array_equal(self.sums(), want):
            raise RuntimeError(f"the local-memory kernel read wrong values at stride {stride}")


def bank_ways(stride, banks=32):
    """How many work-items of a 32-wide warp hit one bank of `banks` 4-byte banks
    when they read floats `stride` apart: gcd(stride, banks)."""
    return int(np.gcd(int(stride), banks))


def local_stride_curve(ctx, queue, device, scale, strides=range(1, 33), repeats=5):
    """Records (variant 'local read', stride, GB/s of local loads, slowdown against stride 1)."""
    bench = LocalStride(ctx, queue, device, scale)
    records = []
    for s in strides:
        t = time_events(lambda: bench.launch(s), repeats=repeats)
        bench.check(s)
        rate, lo, hi = t.rate(4 * bench.total * bench.reads / 1e9)
        records.append({"variant": "local read", "stride": int(s), "median_s": t.median,
                        "q20_s": t.q20, "q80_s": t.q80, "rate": rate, "rate_lo": lo, "rate_hi": hi})
    base = records[0]["median_s"]
    for r in records:
        r["slowdown"] = r["median_s"] / base
    return records, bench
