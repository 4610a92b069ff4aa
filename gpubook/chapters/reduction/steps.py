"""A device-wide float32 sum, pass after pass, with one of chapter 3's kernels.

Every kernel in kernels/reduction/ has the same signature,
``reduce(in, partial, n)``: each work-group sums part of ``in`` and writes one
partial sum. The host repeats passes over the partial sums until one value is
left. Steps 1-3 launch one work-group per WG (or 2*WG) elements; steps 4-5
launch a fixed grid of a few work-groups per compute unit that walks the whole
array, so they need only two passes.
"""
import operator

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ... import launch
from ...device import check_work_group, compute_units, default_work_group
from ...inputs import bare_buffer_items
from ...kernels import kernel

STEPS = ("1_interleaved", "2_sequential", "3_first_add", "4_multi", "5_unrolled")

# Elements one work-item of each step sums in its load phase; None: the step
# walks the array with a fixed grid (grid-stride loop).
_PER_ITEM = {"1_interleaved": 1, "2_sequential": 1, "3_first_add": 2,
             "4_multi": None, "5_unrolled": None}

# A grid-stride pass never uses more work-groups than leave each work-item
# this many elements, so the second pass of a large sum is one work-group.
_MIN_PER_ITEM = 8


class DeviceSum:
    """Sum a float32 buffer on the device with one step's kernel.

    ctx, queue: where to run. step: one of STEPS. work_group: work-items per
    work-group (a power of two that the device and the built kernel allow; a
    clear ValueError names the kernel's maximum otherwise). Without it: the
    largest power of two up to `largest` that both allow. groups_per_cu: grid
    size of the grid-stride steps, in work-groups per compute unit. unroll:
    UNROLL for step 5.
    """

    def __init__(self, ctx, queue, step, work_group=None, groups_per_cu=8, unroll=4, largest=256):
        if step not in STEPS:
            raise ValueError(f"unknown step {step!r}; use one of {', '.join(STEPS)}")
        device = queue.device
        if groups_per_cu < 1 or unroll < 1:
            raise ValueError("groups_per_cu and unroll must be at least 1")
        # Without a size asked for: the largest power of two up to `largest` that
        # both the device and the built kernel allow (a compiler may allow a
        # kernel fewer work-items than the device's maximum: Mesa's rusticl 32).
        if work_group is not None and not isinstance(work_group, (int, np.integer)):
            raise TypeError(f"work_group must be an integer, not {work_group!r}")
        top = default_work_group(device, largest)
        sizes = [int(work_group)] if work_group is not None else \
            [1 << k for k in range(top.bit_length() - 1, -1, -1)]
        for wg in sizes:
            if wg < 1 or wg & (wg - 1):
                raise ValueError(f"work-group size {wg} is not a power of two "
                                 "(the tree halves it every round)")
            check_work_group(device, wg, 4 * wg)
            defines = {"WG": wg}
            if step == "5_unrolled":
                defines["UNROLL"] = int(unroll)
            self.kernel = kernel(ctx, f"reduction/{step}.cl", "reduce", defines)
            kernel_max = launch.kernel_max(self.kernel, device)
            if wg <= kernel_max:
                break
        else:
            raise ValueError(f"work-group size {wg} exceeds what kernels/reduction/{step}.cl "
                             f"allows on {device.name.strip()} ({kernel_max}): ask for a power of two "
                             f"up to {kernel_max}, or leave work_group out")
        self.ctx, self.queue, self.step, self.work_group = ctx, queue, step, wg
        self.max_groups = compute_units(device) * int(groups_per_cu)
        self._scratch = {}

    def groups(self, n):
        """Work-groups of one pass over n values."""
        per_item = _PER_ITEM[self.step]
        if per_item is not None:
            return -(-n // (per_item * self.work_group))
        return max(1, min(self.max_groups, n // (_MIN_PER_ITEM * self.work_group)))

    def plan(self, n):
        """The passes for n values: a list of (values in, work-groups)."""
        if not 1 <= n < 2**32:
            raise ValueError(f"n must be 1 to 2**32 - 1 values, not {n}")
        passes = []
        while True:
            g = self.groups(n)
            passes.append((n, g))
            if g == 1:
                return passes
            n = g

    def _buffers(self, n):
        # Two scratch buffers, used in turn: the first pass's output is the
        # largest; every later pass writes fewer values than the one before.
        if n not in self._scratch:
            sizes = [g for _, g in self.plan(n)][:2] + [1]
            mf = cl.mem_flags
            self._scratch[n] = [cl.Buffer(self.ctx, mf.READ_WRITE, 4 * s) for s in sizes[:2]]
        return self._scratch[n]

    def enqueue(self, src, n=None, dtype=None):
        """Enqueue every pass over the first n floats of `src` (default: all).

        src: a pyopencl.array.Array of float32 (its dtype, order and size are
        checked), or a cl.Buffer with dtype=np.float32 said by the caller: a
        buffer carries no dtype, and a float64 one would be summed as twice as
        many float32 values, so a bare buffer without it is refused. Returns the
        list of the passes' events (for gb.time_events); the sum is then the
        first float of `self.result`.
        """
        src, n = _checked_source(src, n, dtype)
        scratch = self._buffers(n)
        events = []
        for k, (count, groups) in enumerate(self.plan(n)):
            dst = scratch[k % 2]
            events.append(self.kernel(self.queue, (groups * self.work_group,), (self.work_group,),
                                      src, dst, np.uint32(count)))
            src = dst
        self.result = src
        return events

    def sum(self, src, n=None, dtype=None):
        """The sum of the first n floats of `src` (as for `enqueue`), as a Python float."""
        self.enqueue(src, n, dtype)
        out = np.empty(1, np.float32)
        cl.enqueue_copy(self.queue, out, self.result)
        return float(out[0])



def _checked_source(src, n, dtype=None):
    """(the buffer to read, n) for `src` and `n` (and, for a bare cl.Buffer, the
    dtype its caller says it holds), or a clear error before any launch."""
    if isinstance(src, cla.Array):
        if src.dtype != np.float32:
            raise TypeError(f"src holds {src.dtype}; DeviceSum sums float32 (pass src.astype(np.float32))")
        if not src.flags.c_contiguous:
            raise ValueError(f"src must be contiguous, not strided {src.strides} (pass a copy)")
        size, buf = src.size, (src.copy() if src.offset else src).data
    elif isinstance(src, cl.Buffer):
        size, buf = bare_buffer_items(src, "src", np.float32, dtype), src
    else:
        raise TypeError(f"src must be a pyopencl.array.Array or cl.Buffer of float32 on the device, "
                        f"not {type(src).__name__} (copy host data with pyopencl.array.to_device)")
    if n is None:
        n = size
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"n must be an integer count of values, not {n!r}") from None
    if n > size:
        raise ValueError(f"n={n:,} exceeds the {size:,} float32 values in src")
    return buf, n
