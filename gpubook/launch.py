"""Launch shapes from the device: the one place that picks a kernel's local size.

Every enqueue of the package takes its local size from here. A shape is never
assumed: it is read from what the device allows (its work-group maximum, its
maximum per dimension, its local memory) and from what the built kernel allows
(`CL_KERNEL_WORK_GROUP_SIZE`, which register use can bring below the device's
maximum). A limit that the device reports as 0 or not at all is not trusted: the
shape falls back to the other limits, and to one work-item where none is known.
"""
import numpy as np
import pyopencl as cl


class LaunchError(ValueError):
    """No work-group of the needed shape runs on this device."""


def reported(device, name):
    """A device property (`max_clock_frequency`, ...) that the runtime reports as a
    positive number, else None: some runtimes report 0, some raise, for what they
    do not know. Arithmetic with device properties goes through here."""
    return _reported(lambda: getattr(device, name))


def _reported(read):
    """A positive integer the runtime reports, else None (0, missing or an error)."""
    try:
        value = int(read())
    except (cl.Error, AttributeError, TypeError, ValueError):
        return None
    return value if value > 0 else None


def device_max(device):
    """The device's work-group maximum (1 when it reports none)."""
    return reported(device, "max_work_group_size") or 1


def dimension_max(device, dim):
    """The most work-items a work-group may have along dimension `dim`."""
    sizes = _reported_sizes(device)
    return sizes[dim] if dim < len(sizes) and sizes[dim] else device_max(device)


def _reported_sizes(device):
    try:
        return [int(s) if int(s) > 0 else 0 for s in device.max_work_item_sizes]
    except (cl.Error, AttributeError, TypeError, ValueError):
        return []


def local_memory(device):
    """Bytes of local memory a work-group may use (0 when not reported)."""
    return reported(device, "local_mem_size") or 0


def kernel_max(kern, device):
    """The most work-items one work-group of this built kernel may have here.

    NVIDIA's driver under-reports it for a kernel compiled for a fixed work-group
    (reqd_work_group_size): on an H100 (driver 580, 2026-11-25) a kernel compiled for
    1,024 work-items with 56 registers reported 256, and a launch of 1,024 ran. Its
    compiler fits the registers to the declared size, so there the declared size counts."""
    own = _reported(lambda: kern.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device))
    if "NVIDIA" in _platform_name(device):
        own = max(own or 0, _compiled_size(kern, device)) or None
    return min(own, device_max(device)) if own else device_max(device)


def _platform_name(device):
    try:
        return str(device.platform.name)
    except (cl.Error, AttributeError):
        return ""


def _compiled_size(kern, device):
    """The work-items of the kernel's reqd_work_group_size (0 when it declares none)."""
    try:
        sizes = kern.get_work_group_info(cl.kernel_work_group_info.COMPILE_WORK_GROUP_SIZE, device)
        return _product([int(s) for s in sizes])
    except (cl.Error, AttributeError, TypeError, ValueError):
        return 0


def preferred_multiple(kern, device):
    """The work-group size multiple the runtime prefers for this kernel (its warp
    width on a GPU; 1 when not reported)."""
    return _reported(lambda: kern.get_work_group_info(
        cl.kernel_work_group_info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE, device)) or 1


def why_not(device, size, local_bytes=0, kern=None):
    """None when a work-group of `size` work-items using `local_bytes` of local
    memory runs here (and for `kern`, when given), else the reason, in words."""
    name = _name(device)
    limit = kernel_max(kern, device) if kern is not None else device_max(device)
    if size > limit:
        whose = "this kernel's" if kern is not None and limit < device_max(device) else "this device's"
        return f"work-group size {size} exceeds {whose} maximum {limit} ({name})"
    have = local_memory(device)
    if local_bytes and have and local_bytes > have:
        return f"{local_bytes:,} bytes of local memory requested; {name} has {have:,}"
    return None


def _name(device):
    return str(getattr(device, "name", "this device")).strip()


def check(device, size, local_bytes=0, kern=None):
    """Raise LaunchError with the reason when `why_not` gives one."""
    reason = why_not(device, size, local_bytes, kern)
    if reason:
        raise LaunchError(reason)


def largest(device, want=256, local_bytes=lambda size: 0, kern=None, smallest=1):
    """The largest power of two up to `want` that fits the device (and `kern`),
    with `local_bytes(size)` of local memory; LaunchError below `smallest`."""
    size = 1 << max(0, int(want).bit_length() - 1)
    while size >= max(1, smallest):
        if why_not(device, size, local_bytes(size), kern) is None:
            return size
        size //= 2
    raise LaunchError(f"{_name(device)} runs no work-group of {smallest} to {want} work-items: "
                      f"{why_not(device, max(1, smallest), local_bytes(max(1, smallest)), kern)}")


def square_side(device, sides, local_bytes=lambda side: 0, kern=None):
    """The first of `sides` whose side x side work-group (with local_bytes(side))
    fits here; LaunchError naming the last reason when none does."""
    reason = "no side given"
    for side in sides:
        reason = why_not(device, side * side, local_bytes(side), kern)
        if reason is None:
            return side
    raise LaunchError(f"no square work-group of sides {', '.join(map(str, sides))} fits: {reason}")


def fitting(device, sizes, local_bytes=lambda size: 0, kern=None):
    """(the sizes that fit, [(size, reason)] for the others), for a sweep."""
    ok, skipped = [], []
    for size in sizes:
        reason = why_not(device, size, local_bytes(size), kern)
        if reason is None:
            ok.append(size)
        else:
            skipped.append((size, reason))
    return ok, skipped


def local_size(kern, device, want):
    """`want` (a tuple of per-dimension work-items, powers of two) shrunk until it
    fits this kernel on this device: the last dimensions halve first, so the
    first (the one that coalesces) keeps its width longest."""
    shape = [int(w) for w in want]
    limit = kernel_max(kern, device)
    for dim in range(len(shape)):
        while shape[dim] > 1 and shape[dim] > dimension_max(device, dim):
            shape[dim] //= 2
    dim = len(shape) - 1
    while _product(shape) > limit:
        while dim > 0 and shape[dim] == 1:
            dim -= 1
        if shape[dim] == 1:
            break
        shape[dim] //= 2
    if _product(shape) > limit:
        raise LaunchError(f"{_name(device)} runs no work-group of this kernel")
    return tuple(shape)


def _product(shape):
    out = 1
    for s in shape:
        out *= s
    return out


def global_size(counts, local):
    """Each count of work-items rounded up to a multiple of its local size."""
    return tuple(-(-int(c) // int(w)) * int(w) for c, w in zip(counts, local))


def enqueue(queue, kern, counts, want, *args, wait_for=None, bound=None):
    """Launch `kern` over at least `counts` work-items (per dimension) in
    work-groups of `want`, shrunk to fit (the kernel must check its bounds);
    returns the event. bound: a `Bound` that keeps the arguments set."""
    if bound is not None:
        def make():
            local = bound.local_size(kern, queue.device, want)
            return bound(queue, kern, global_size(counts, local), local, *args, wait_for=wait_for)
        return bound.reuse(("enqueue", queue, kern, counts, want, args), wait_for, make)
    local = local_size(kern, queue.device, want)
    return kern(queue, global_size(counts, local), local, *args, wait_for=wait_for)


def call(queue, kern, global_size, local_size, *args, wait_for=None):
    """kern(queue, global_size, local_size, *args): its arguments set, then enqueued."""
    return kern(queue, global_size, local_size, *args, wait_for=wait_for)


class Bound:
    """`call`, with one copy of the kernel per distinct set of arguments, whose
    arguments are set once. Setting an argument is not free: on an H100 (NVIDIA's
    driver 580, 2026-11-27, tools/profile_enqueue.py) a product kernel with 18
    arguments took 220 us of host time per launch when they were set each time, and
    16 us when they were already set. CholeskyQR2 repeats the same ~700 launches
    on every run, so from its second run on it only enqueues, each launch as
    `remember` kept it (`recall`: no Python work per launch). The copies keep
    their arguments (buffers included) alive, so the owner of a Bound should be
    the object whose launches it serves, and no longer lived."""

    def __init__(self):
        self._kernels = {}
        self._shapes = {}
        self._launches = {}      # a caller's own key -> (queue, copy, global size, local size)
        self._last = None
        self.count = 0           # launches made through __call__ (a recalled one is not counted)

    def recall(self, key, wait_for=None):
        """Enqueue again the launch that `remember` kept under `key` (the caller's
        own arguments, queue included: numbers by value, buffers and kernels by
        handle); None where none is kept or the key is not hashable. What it skips
        is host time in Python: on the GPU host (an H200, 2026-11-29) a product of
        chapter 8 took 34.5 us of host time a launch through Products and 12.9 us
        in clEnqueueNDRangeKernel alone."""
        try:
            hit = self._launches.get(key)
        except TypeError:
            return None
        return None if hit is None else cl.enqueue_nd_range_kernel(*hit, wait_for=wait_for)

    def reuse(self, key, wait_for, make):
        """The launch kept under `key`, enqueued again (`recall`); else make() it (a
        launch through this Bound) and keep it (`remember`). Returns its event."""
        event = self.recall(key, wait_for)
        if event is None:
            before = self.count
            event = make()
            self.remember(key, before)
        return event

    def remember(self, key, before):
        """Keep the launch just made under `key`, when exactly one launch went
        through this Bound since its count was `before` (and the key holds no NaN,
        which no later key would equal)."""
        if self.count != before + 1 or _has_nan(key):
            return
        try:
            self._launches[key] = self._last
        except TypeError:
            pass

    def local_size(self, kern, device, want):
        """`local_size`, read from the device and the kernel once per kernel, device
        and wanted shape: its queries are not free (on this repository's PoCL, a
        launch through a Bound took 9.2 us of host time with the shape read each time
        and 5.0 us with it read once). The entry keeps the kernel and the device alive."""
        # a kernel hashes by its handle; a device by its handle where it has one
        key = (kern, getattr(device, "int_ptr", None) or id(device), tuple(want))
        if key not in self._shapes:
            self._shapes[key] = (local_size(kern, device, want), device)
        return self._shapes[key][0]

    @property
    def copies(self):
        """The kernel copies made so far: one per distinct launch."""
        return len(self._kernels)

    def __call__(self, queue, kern, global_size, local_size, *args, wait_for=None):
        key = (id(kern), tuple(global_size), tuple(local_size), tuple(_key(a) for a in args))
        entry = self._kernels.get(key)
        if entry is None:
            copy = cl.Kernel(kern.program, kern.function_name)
            copy.set_args(*args)
            entry = self._kernels[key] = (copy, kern, args)
        self.count += 1
        self._last = (queue, entry[0], tuple(global_size), tuple(local_size))
        return cl.enqueue_nd_range_kernel(queue, entry[0], global_size, local_size, wait_for=wait_for)


def _key(arg):
    """An argument as a key: a buffer (or other object) by identity, held alive by
    the entry; a number by its type and value."""
    if isinstance(arg, np.generic):
        return (arg.dtype.str, arg.item())
    return ("object", id(arg))


def _has_nan(value):
    """True where a number in `value` (nested tuples) is NaN."""
    if isinstance(value, tuple):
        return any(_has_nan(v) for v in value)
    return isinstance(value, (float, np.floating)) and value != value
