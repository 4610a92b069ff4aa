"""The machine chapter's host side: the microbenchmarks of the memory hierarchy
(kernels/machine/) and the arithmetic that reads them.

- latency: one work-item follows a random cycle of indices (`Chain`) through a
  buffer, one cache line per step, so every load waits for the one before;
- bandwidth against working-set size: a read kernel that reads the first n bytes
  of a buffer over and over, the same number of bytes per launch for every n;
- local memory: work-items read local[(lid * stride + k) % N], so one warp's
  addresses fall in gcd(stride, 32) ways into the same bank of a 32-bank memory;
- Little's law: the bytes that must be in flight, latency x the read rate
  (gpubook.limits.bytes_in_flight, the one definition both pages use).

Every function checks the result of its kernel (where the chain ends, the sum
read) and raises when it is wrong: a measurement of a wrong result is none.
"""
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from ...curves import human_bytes, middle_level
from ...device import compute_units
from ...localmem import pow2_floor
from ...kernels import kernel
from ...launch import largest, reported
from ...limits import bytes_in_flight, recorded_read_gbs  # noqa: F401 (Little's law, one definition)
from ...peaks import datasheet_value
from ...records import load_results, device_slug
from ...scale import scale as device_scale
from ...loopcap import loop_cap
from ...timing import stats, time_events


def span_seconds(events):
    """Device time from the first event's start to the last one's end."""
    return (events[-1].profile.end - events[0].profile.start) * 1e-9

LINE = 128             # bytes between two links of a chain: one cache line of a GPU's L2
CHAPTER = "00_machine"


def largest_working_set(device, scale):
    """Bytes of the largest buffer the chapter reads: far beyond the caches the
    device reports (1 GiB on a GPU, at least 64 MiB and 4x the reported
    global-memory cache on a CPU), within a quarter of one allocation."""
    want = 2**30 if scale == "full" else max(2**26, 4 * int(device.global_mem_cache_size or 0))
    return min(pow2_floor(want), pow2_floor(device.max_mem_alloc_size // 4))


def working_sets(device, scale, step=4, smallest=2**12):
    """Working-set sizes in bytes from 4 KiB up to `largest_working_set`, a
    factor `step` apart (the largest always included)."""
    top = largest_working_set(device, scale)
    sizes = []
    n = smallest
    while n < top:
        sizes.append(n)
        n *= step
    return sizes + [top]


# ---------------------------------------------------------------- latency
@dataclass
class Chain:
    """A random cycle through a buffer of uint32 words, one link per `LINE`
    bytes: next[order[k]] = order[k + 1], and the last link leads back to the first."""
    next: np.ndarray
    order: np.ndarray

    def after(self, steps, start=0):
        """The word where a walk from order[start] stands after `steps` steps."""
        return int(self.order[(start + steps) % len(self.order)])


def make_chain(nbytes, seed=0, line=LINE):
    """The chain through a buffer of `nbytes`: its lines in a random order, each
    line's first word pointing to the next line's first word."""
    if nbytes < 2 * line or nbytes % line:
        raise ValueError(f"a chain needs a multiple of {line} bytes, at least {2 * line}; got {nbytes}")
    words = line // 4
    order = (np.random.default_rng(seed).permutation(nbytes // line).astype(np.uint32) * np.uint32(words))
    nxt = np.zeros(nbytes // 4, np.uint32)
    nxt[order] = np.roll(order, -1)
    return Chain(nxt, order)


def cycle_length(nxt, start):
    """How many steps a walk from `start` takes to come back to it (the cycle's length)."""
    i, steps = int(nxt[start]), 1
    while i != start:
        i, steps = int(nxt[i]), steps + 1
        if steps > nxt.size:
            raise ValueError("the walk never returns to its start")
    return steps


class ChainWalker:
    """A chain on the device and the chase kernel that walks it; knows where the
    walk must stand after every launch, and checks it."""

    def __init__(self, ctx, queue, chain):
        mf = cl.mem_flags
        self.queue, self.chain, self.walked = queue, chain, 0
        self.next = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=chain.next)
        self.pos = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=chain.order[:1].copy())
        self.kern = kernel(ctx, "machine/chase.cl", "chase")
        # a device that stops loops early (Mesa's llvmpipe) walks in launches of at most
        # its cap: the chain goes on where each launch stopped, so the walk is the same
        self.cap = loop_cap(queue.device, ctx)

    def launch(self, steps):
        """Enqueue `steps` steps of the walk: one launch, or launches of at most the
        device's loop cap; their events (a step's time is their span)."""
        self.walked += steps
        events = []
        while steps > 0 or not events:
            n = steps if self.cap is None else min(steps, self.cap)
            events.append(self.kern(self.queue, (1,), (1,), self.next, self.pos, np.uint32(n)))
            steps -= n
        return events

    def where(self):
        got = np.empty(1, np.uint32)
        cl.enqueue_copy(self.queue, got, self.pos)
        return int(got[0])

    def check(self):
        want = self.chain.after(self.walked)
        got = self.where()
        if got != want:
            raise RuntimeError(f"the pointer chase stands at word {got} after {self.walked} steps; "
                               f"the chain says {want}")


def chase_ns(ctx, queue, nbytes, target_s, warm_steps, repeats=5, seed=0, probe=2**12):
    """Nanoseconds per dependent load in a working set of `nbytes`, with its
    20-80% band: the time of 2*s steps minus that of s steps, over s (the
    launch's fixed cost cancels). s is a power of two chosen from a probe launch
    so that one launch of s steps takes about `target_s` seconds. `warm_steps`
    first walk the chain, so that a working set that fits a cache is in it."""
    walker = ChainWalker(ctx, queue, make_chain(nbytes, seed))
    walker.launch(min(warm_steps, len(walker.chain.order)))[-1].wait()
    per_step = time_events(lambda: walker.launch(probe), repeats=1, warmup=0).median / probe
    steps = min(2**22, max(probe, pow2_floor(target_s / max(per_step, 1e-12))))
    for _ in range(3):  # where the difference drowns in noise (a busy CPU), walk longer
        extra, whole = [], []
        for _ in range(repeats):  # s and 2s steps in turn, so that drift hits both alike
            one = walker.launch(steps)
            one[-1].wait()
            two = walker.launch(2 * steps)
            two[-1].wait()
            extra.append(span_seconds(two) - span_seconds(one))
            whole.append(span_seconds(two) / 2)
        if stats(extra).median > 0 or steps >= 2**22:
            break
        steps = min(2**22, 4 * steps)
    walker.check()
    t = stats(extra)
    per = 1e9 / steps
    if t.median <= 0:
        # still noise: the time of 2s steps per step, an upper bound that keeps the launch's cost
        t = stats(whole)
        return {"bytes": nbytes, "steps": steps, "ns": t.median * per, "ns_lo": t.q20 * per,
                "ns_hi": t.q80 * per, "upper_bound": True}
    return {"bytes": nbytes, "steps": steps, "ns": t.median * per,
            "ns_lo": max(0.0, t.q20 * per), "ns_hi": t.q80 * per}


def latency_curve(ctx, queue, device, scale, sizes=None):
    """Latency records (variant 'pointer chase', bytes, ns with its band) over working sets."""
    target, warm = (4e-3, 2**19) if scale == "full" else (2e-3, 2**17)
    sizes = working_sets(device, scale) if sizes is None else sizes
    return [dict(variant="pointer chase", **chase_ns(ctx, queue, n, target, warm)) for n in sizes]


# ---------------------------------------------------------------- bandwidth
def read_shape(device, scale):
    """(global size, local size) of the read kernel: powers of two, at least 1024
    and fewer than 2048 work-items per compute unit on a GPU (256 to 512 on a CPU)."""
    per_cu = 1024 if scale == "full" else 256
    local = largest(device, 256)
    total = max(local, 1 << (compute_units(device) * per_cu - 1).bit_length())
    return total, local


class Reader:
    """The read kernel over one buffer of `top` bytes of small whole numbers (so
    every sum is exact in float32), and the check of what it read."""

    def __init__(self, ctx, queue, device, top, scale, blocked=None, rotate=False):
        mf = cl.mem_flags
        self.queue = queue
        self.host = (np.arange(top // 4, dtype=np.uint32) % 7).astype(np.float32)
        self.src = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=self.host)
        self.total, self.local = read_shape(device, scale)
        self.blocked = int(bool(device.type & cl.device_type.CPU) if blocked is None else blocked)
        self.rotate = int(bool(rotate) and not self.blocked)  # the GPU order only
        defines = {"BLOCKED": self.blocked, **({"ROTATE": 1} if self.rotate else {})}
        self.kern = kernel(ctx, "machine/read.cl", "read", defines)
        self.reads = max(1, (top // 16) // self.total)  # every launch reads `top` bytes (or more)
        self.partial = cl.Buffer(ctx, mf.WRITE_ONLY, 4 * self.total)

    def bytes_per_launch(self):
        return 16 * self.total * self.reads

    def launch(self, nbytes):
        mask = np.uint32(nbytes // 16 - 1)
        return self.kern(self.queue, (self.total,), (self.local,), self.src, self.partial,
                         mask, np.uint32(self.reads))

    def read_sum(self):
        """The sum of the partial sums of the last launch (float64)."""
        got = np.empty(self.total, np.float32)
        cl.enqueue_copy(self.queue, got, self.partial)
        return got.sum(dtype=np.float64)

    def expected_sum(self, nbytes):
        """NumPy's sum of what one launch over the first `nbytes` reads: each of the
        n/16 float4 elements, total * reads / (n/16) times."""
        return (self.bytes_per_launch() // nbytes) * self.host[:nbytes // 4].sum(dtype=np.float64)

    def check(self, nbytes):
        got, want = self.read_sum(), self.expected_sum(nbytes)
        if got != want:
            raise RuntimeError(f"the read kernel summed {got} over {nbytes} bytes; NumPy says {want}")


ROTATED = "read, work-groups rotated each pass"


def bandwidth_curve(ctx, queue, device, scale, sizes=None, repeats=5, rotate=False):
    """Read bandwidth records (variant 'read', bytes, GB/s with band) over working sets;
    rotate=True: the read kernel built with ROTATE=1 (variant ROTATED), where no compute
    unit keeps re-reading its own part of the set (GPU order only: [] on a CPU device)."""
    sizes = working_sets(device, scale, step=2) if sizes is None else sizes
    reader = Reader(ctx, queue, device, max(sizes), scale, rotate=rotate)
    if rotate and not reader.rotate:
        return []
    if reader.bytes_per_launch() % max(sizes) or any(max(sizes) % n or n < 16 for n in sizes):
        raise ValueError("working sets must be powers of two of at least 16 bytes")
    records = []
    for n in sizes:
        t = time_events(lambda: reader.launch(n), repeats=repeats)
        reader.check(n)
        rate, lo, hi = t.rate(reader.bytes_per_launch() / 1e9)
        records.append({"variant": ROTATED if reader.rotate else "read", "bytes": n, "median_s": t.median, "q20_s": t.q20,
                        "q80_s": t.q80, "rate": rate, "rate_lo": lo, "rate_hi": hi})
    return records


def l1_bounds(wrapped, rotated):
    """(lo, hi): the largest working set at which the wrapped read (each compute unit
    re-reads its own part) ran at least twice the rotated one (only the L2 serves
    that), and the sweep's next set; (None, None) without a rotated sweep. Over the
    compute units, lo bounds one L1's size from below."""
    wrap = {r["bytes"]: r["rate"] for r in wrapped}
    rot = {r["bytes"]: r["rate"] for r in rotated or []}
    sets = sorted(n for n in rot if n in wrap)
    served = [n for n in sets if wrap[n] >= 2 * rot[n]]
    lo = max(served) if served else None
    return lo, next((n for n in sets if lo and n > lo), None)


def hierarchy_levels(f, latency, bandwidth, local_gbs, h2d_gbs, arch=None, rotated=None):
    """(level, size, bandwidth, latency) rows for the hierarchy figure, fastest first,
    from the run's curves (latency and bandwidth records, and the rotated read sweep
    where it ran: then the caches are two rows, the L1s that each compute unit re-reads
    its own part from and the L2 that all of them read) and the device's facts."""
    regs = f"{arch.register_file * 4 // 1024} KiB\nper compute unit" if arch else "not reported"
    small_lat, big_lat = latency[0]["ns"], latency[-1]["ns"]
    best = max(bandwidth, key=lambda r: r["rate"])
    first = f"{small_lat:,.1f} ns at {human_bytes(latency[0]['bytes'])}"
    local_size = ((f"{f['local_cu_kib']} KiB per compute unit,\n" if f.get("local_cu_kib") else "")
                  + f"{f['local_kib']} KiB per work-group")
    # what OpenCL calls the global-memory cache: on NVIDIA 32 KiB per compute unit, a
    # figure the sweeps do not show as any cache's size, so never labelled as measured
    reported = f"OpenCL's global-memory\ncache figure: {human_bytes(f['cache_bytes'])}"
    l2 = f"{human_bytes(f['l2_bytes'])} (data sheet)" if f.get("l2_bytes") else "size not known"
    spread = sorted(r["rate"] for r in rotated or [] if 2**20 <= r["bytes"] <= 2**23)
    # the latency curve's middle level, put in the L2's row where it ends inside the
    # data sheet's L2 (claims.latency_levels checks the same)
    mid = middle_level(latency, "ns")
    level = mid is not None and mid["sets"] >= 2
    in_l2 = (level and f.get("l2_bytes") and mid["after"]
             and mid["hi"] <= f["l2_bytes"] < mid["after"])
    mid_text = (f"{mid['level']:,.0f} ns at\n{human_bytes(mid['lo'])} to {human_bytes(mid['hi'])}"
                if level else "")
    mid_lat = mid_text if in_l2 else "not told apart\nin the latency curve"
    if spread:
        # one L1's size where the sweeps show where the wrapped read's lead ends
        lo, hi = l1_bounds(bandwidth, rotated)
        held = (f"at least {human_bytes(lo / f['compute_units'])} each\n(the two sweeps);\n"
                if lo and hi and f.get("compute_units") else "size not measured;\n")
        caches = [("L1s: each compute unit\nre-reads its own part", held + reported,
                   f"{best['rate']:,.0f} GB/s\nat {human_bytes(best['bytes'])}", first),
                  ("L2: all compute units\nread the whole set", l2,
                   f"{spread[len(spread) // 2]:,.0f} GB/s\nat 1 to 8 MiB", mid_lat)]
    else:
        caches = [("caches", (f"L2 {l2};\n" if f.get("l2_bytes") else "") + reported,
                   f"{best['rate']:,.0f} GB/s\nat {human_bytes(best['bytes'])}",
                   first + (f";\n{mid_text}" if level else ""))]
    return [
        ("registers (private memory)", regs, "not measured", "not measured"),
        ("local memory", local_size, f"{local_gbs:,.0f} GB/s\n(stride 1)", "not measured"),
        *caches,
        ("global memory", f"{f['global_gib']:.0f} GiB", f"{bandwidth[-1]['rate']:,.0f} GB/s read",
         f"{big_lat:,.0f} ns"),
        ("host, over the link", "host memory", f"{h2d_gbs:,.1f} GB/s\nhost to device", "not measured"),
    ]


# ---------------------------------------------------------------- what the device says
def warp(device):
    """(width, the vendor's word for it) as the device reports it: NVIDIA's warp,
    AMD's wavefront, else a CPU's SIMD vector (its native float vector width)."""
    width = reported(device, "warp_size_nv")
    if width:
        return width, "warp"
    width = reported(device, "wavefront_width_amd")
    if width:
        return width, "wavefront"
    return reported(device, "native_vector_width_float") or 1, "SIMD vector"


def facts(device):
    """The device's own numbers that the execution-model figure draws, and beside them
    what the data sheet says where OpenCL's figure is not the one it seems: NVIDIA's
    OpenCL reports as its global-memory cache 32 KiB per compute unit (an L1-sized
    figure), not the L2; its local memory is the 48 KiB cap of one work-group, not the
    compute unit's 228 KiB."""
    from ...resources import arch_limits

    width, word = warp(device)
    arch = arch_limits(device)
    cache = int(device.global_mem_cache_size or 0)
    cus = device.max_compute_units
    return {"platform": device.platform.name.strip(), "device": device.name.strip(),
            "compute_units": device.max_compute_units, "max_group": device.max_work_group_size,
            "warp": width, "warp_word": word, "local_kib": device.local_mem_size // 1024,
            "global_gib": device.global_mem_size / 2**30,
            "cache_bytes": cache,
            "cache_per_cu_bytes": cache // cus if cache and cus and cache % cus == 0 else None,
            "l2_bytes": datasheet_value(device.name, "l2_bytes"),
            "local_cu_kib": arch.local_per_cu // 1024 if arch else None,
            "cacheline": int(device.global_mem_cacheline_size or 0)}


# ---------------------------------------------------------------- records
def recorded(device, root=None):
    """This chapter's record for the device, or None."""
    entry = load_results(CHAPTER, root).get(device_slug(device))
    return None if entry is None else entry["data"]


def read_rate(ctx, queue, device):
    """Device memory's read rate in GB/s (the bytes read only) and where it comes from:
    this page's record for the device, else the read kernel run now at the largest
    working set. The rate Little's law uses on every page."""
    recorded_gbs = recorded_read_gbs(device)
    if recorded_gbs is not None:
        return recorded_gbs, "the machine chapter's record"
    sc = device_scale(device)
    got = bandwidth_curve(ctx, queue, device, sc, sizes=[largest_working_set(device, sc)], repeats=3)
    return got[-1]["rate"], "the read kernel run now"


def latency_ns(ctx, queue, device):
    """Device-memory latency in ns and where it comes from: this chapter's record
    for the device, else a quick pointer chase over the largest working set."""
    rec = recorded(device)
    if rec is not None:
        return rec["latency_ns"], "the machine chapter's record"
    sc = device_scale(device)
    got = chase_ns(ctx, queue, largest_working_set(device, sc), 4e-3 if sc == "full" else 1e-3, warm_steps=0)
    return got["ns"], "a pointer chase run now"
