"""Tracing a kernel's accesses on the device, for the figures of ideas.

A kernel that can be traced carries `#ifdef TRACE` blocks; its ordinary build
(no TRACE) is untouched. `run` builds it with `-DTRACE=1`, prepends PREAMBLE
(the tracing macros: joined in Python, never `#include`d), appends one buffer
to the kernel's arguments and returns what every work-item recorded.

What a kernel writes, in three guarded places::

    __kernel void k(__global const float *x, const int n
    #ifdef TRACE
                    , __global int *trace          // last argument, named `trace`
    #endif
                    )
    {
    #ifdef TRACE
        TRACE_START;                               // once, before the first record
    #endif
        ...
    #ifdef TRACE
        TRACE_AT(k, j * KP + k);                   // (step, index) of one access
    #endif
        s += x[j * KP + k];

Each TRACE_AT writes one row: the work-item's global, local and work-group ids
(linear over the dimensions), its own event number, and the two values the
kernel passes: `step` (a round, a loop counter, 0...) and `index` (the element
it accesses, in the units of the pointer it uses). A work-item keeps at most
`events` rows; `Trace.counts` says how many it tried to write, so a cut trace
is never mistaken for a whole one (`Trace.truncated`).

Tracing is for pictures of small launches only: `run` refuses more than
MAX_ITEMS work-items or MAX_EVENTS rows per work-item, and it returns no events
to time (it is never on a timed path).
"""
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from . import launch
from .kernels import build

MAX_ITEMS = 4096          # work-items per traced launch
MAX_EVENTS = 1024         # rows kept per work-item
MAX_ROWS = 1 << 20        # work-items x rows in all (24 MiB of trace)
FIELDS = ("item", "local", "group", "seq", "step", "index")

PREAMBLE = r"""
// gpubook.trace: prepended to a kernel's source when it is built with -DTRACE=1.
// The trace buffer: TRACE_ITEMS counts (one per work-item), then TRACE_EVENTS
// rows of 6 ints per work-item: item, local, group, seq, step, index.
inline int trace_item(void)
{
    return (int)((get_global_id(2) * get_global_size(1) + get_global_id(1)) * get_global_size(0)
                 + get_global_id(0));
}
inline int trace_local(void)
{
    return (int)((get_local_id(2) * get_local_size(1) + get_local_id(1)) * get_local_size(0)
                 + get_local_id(0));
}
inline int trace_group(void)
{
    return (int)((get_group_id(2) * get_num_groups(1) + get_group_id(1)) * get_num_groups(0)
                 + get_group_id(0));
}
#define TRACE_START int trace_n_ = 0
#define TRACE_AT(step, index) do {                                                    \
        const int ti_ = trace_item();                                                 \
        if (trace_n_ < TRACE_EVENTS) {                                                \
            __global int *r_ = trace + TRACE_ITEMS                                    \
                               + ((size_t)ti_ * TRACE_EVENTS + trace_n_) * 6;         \
            r_[0] = ti_; r_[1] = trace_local(); r_[2] = trace_group();                \
            r_[3] = trace_n_; r_[4] = (int)(step); r_[5] = (int)(index);              \
        }                                                                             \
        trace[ti_] = ++trace_n_;                                                      \
    } while (0)
"""


class TraceSizeError(ValueError):
    """A traced launch larger than tracing allows (it is for small pictures only)."""


@dataclass
class Trace:
    """What the work-items of one traced launch recorded, one row per access,
    ordered by work-item and then by event number.

    item, local, group: the global, local and work-group id (linear) of the
    work-item that made the access; seq: its event number; step, index: the
    values the kernel passed to TRACE_AT. counts: events each work-item made,
    also those past the cap of `events` rows.
    """
    item: np.ndarray
    local: np.ndarray
    group: np.ndarray
    seq: np.ndarray
    step: np.ndarray
    index: np.ndarray
    counts: np.ndarray
    global_size: tuple
    local_size: tuple
    events: int

    @property
    def truncated(self):
        """True when some work-item made more accesses than were kept."""
        return bool((self.counts > self.events).any())

    def __len__(self):
        return len(self.item)

    def select(self, mask=None, **equal):
        """The rows where `mask` holds and every field named in `equal` has that
        value, e.g. `trace.select(step=0, group=0)`."""
        keep = np.ones(len(self), bool) if mask is None else np.asarray(mask, bool)
        for field, value in equal.items():
            if field not in FIELDS:
                raise ValueError(f"no field {field!r} in a trace; fields: {', '.join(FIELDS)}")
            keep = keep & (getattr(self, field) == value)
        return Trace(*(getattr(self, f)[keep] for f in FIELDS), self.counts, self.global_size,
                     self.local_size, self.events)


def _shape(size, what):
    size = (size,) if np.isscalar(size) else tuple(size)
    if not 1 <= len(size) <= 3 or any(int(s) < 1 for s in size):
        raise ValueError(f"{what} must be 1 to 3 positive sizes, not {size}")
    return tuple(int(s) for s in size)


def check_size(global_size, local_size, events):
    """Refuse a launch too large to trace; returns the number of work-items."""
    gsize, lsize = _shape(global_size, "global size"), _shape(local_size, "local size")
    if len(gsize) != len(lsize) or any(g % l for g, l in zip(gsize, lsize)):
        raise ValueError(f"local size {lsize} must have as many dimensions as global size "
                         f"{gsize} and divide it")
    items = int(np.prod(gsize))
    if items > MAX_ITEMS:
        raise TraceSizeError(f"tracing runs only at small sizes: {items} work-items asked for, "
                             f"at most {MAX_ITEMS}. Trace a smaller launch; time the real one "
                             "with the untraced kernel.")
    if not 1 <= events <= MAX_EVENTS or items * events > MAX_ROWS:
        raise TraceSizeError(f"tracing keeps 1 to {MAX_EVENTS} accesses per work-item and at most "
                             f"{MAX_ROWS} in all: {events} per work-item x {items} work-items asked for")
    return items


def run(ctx, queue, path, name, global_size, local_size, args, defines=None, events=16):
    """Run kernel `name` of kernels/<path>, built with -DTRACE=1 and `defines`,
    once over (global_size, local_size), and return its Trace.

    args: the kernel's own arguments, in order; a NumPy array (not a scalar)
    is copied to a new device buffer, anything else (buffers, np.int32(...))
    is passed as it is. The trace buffer is added as the last argument.
    events: rows kept per work-item.
    """
    items = check_size(global_size, local_size, events)
    gsize, lsize = _shape(global_size, "global size"), _shape(local_size, "local size")
    defines = {**(defines or {}), "TRACE": 1, "TRACE_ITEMS": items, "TRACE_EVENTS": events}
    knl = cl.Kernel(build(ctx, path, defines, preamble=PREAMBLE), name)
    # a trace shows one work-group shape: a device that cannot run it says so clearly
    launch.check(queue.device, int(np.prod(lsize)), kern=knl)
    mf = cl.mem_flags
    host = np.full(items + items * events * len(FIELDS), -1, np.int32)
    host[:items] = 0
    buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=host)
    device_args = [cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(a))
                   if isinstance(a, np.ndarray) and a.ndim > 0 else a for a in args]
    knl(queue, gsize, lsize, *device_args, buf)
    cl.enqueue_copy(queue, host, buf)
    queue.finish()
    counts = host[:items].copy()
    rows = host[items:].reshape(items * events, len(FIELDS))
    rows = rows[rows[:, 0] >= 0]
    cols = [rows[:, i].copy() for i in range(len(FIELDS))]
    return Trace(*cols, counts=counts, global_size=gsize, local_size=lsize, events=events)
