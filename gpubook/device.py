"""Choosing an OpenCL device without ever prompting, and describing it."""
import os

import numpy as np
import pyopencl as cl

from . import launch, loopcap
from .launch import reported

INSTALL_HINT = (
    "No OpenCL platform was found. Install a CPU OpenCL driver with "
    "`pip install pocl-binary-distribution` (it is in requirements.txt), "
    "or your GPU vendor's OpenCL driver."
)


class DeviceChoiceError(RuntimeError):
    """No usable OpenCL device, or PYOPENCL_CTX names none of them."""


def list_devices():
    """Every (platform index, device index, platform, device) on this machine."""
    try:
        platforms = cl.get_platforms()
    except cl.Error as err:  # the ICD loader reports "no platforms" as an error
        raise DeviceChoiceError(INSTALL_HINT) from err
    found = []
    for p_index, platform in enumerate(platforms):
        try:
            devices = platform.get_devices()
        except cl.Error:
            devices = []
        for d_index, device in enumerate(devices):
            found.append((p_index, d_index, platform, device))
    if not found:
        raise DeviceChoiceError(INSTALL_HINT)
    return found


def _matches(part, index, name):
    part = part.strip()
    if part == "":
        return index == 0
    if part.isdigit():
        return int(part) == index
    return part.lower() in name.lower()


def _describe(found):
    return "\n".join(f"  {p}:{d}  {plat.name.strip()} | {dev.name.strip()}"
                     for p, d, plat, dev in found)


def choose_device(spec=None):
    """The device named by PYOPENCL_CTX, else the first GPU, else the first
    device, skipping devices whose compiler cannot build a trivial kernel.

    PYOPENCL_CTX follows PyOpenCL's form "platform:device", where each part is
    an index or a piece of the name ("0", "0:1", "nvidia", "cuda:0").
    """
    found = list_devices()
    spec = os.environ.get("PYOPENCL_CTX") if spec is None else spec
    if spec:
        plat_part, _, dev_part = spec.partition(":")
        p_indices = sorted({p for p, _, plat, _ in found if _matches(plat_part, p, plat.name)})
        for p in p_indices:
            on_platform = [(d, dev) for q, d, _, dev in found if q == p]
            for d, dev in on_platform:
                if _matches(dev_part, d, dev.name):
                    return dev
        raise DeviceChoiceError(
            f"PYOPENCL_CTX={spec!r} matches no OpenCL device. Devices found "
            f"(use 'platform:device'):\n{_describe(found)}")
    gpus = [dev for _, _, _, dev in found if dev.type & cl.device_type.GPU]
    others = [dev for _, _, _, dev in found if not dev.type & cl.device_type.GPU]
    failures = []
    for dev in gpus + others:
        log = compiler_failure(dev)
        if log is None:
            return dev
        failures.append(f"  {dev.name.strip()} ({dev.platform.name.strip()}): {log}")
    raise DeviceChoiceError(
        "no OpenCL device here can compile a kernel:\n" + "\n".join(failures) +
        "\nA CPU that the bundled PoCL's LLVM does not know (e.g. 'unknown target CPU generic' on a "
        "new AMD EPYC) needs your distribution's PoCL, e.g. `apt-get install pocl-opencl-icd`.")


_compiles = {}


def compiler_failure(device):
    """None when the device's OpenCL compiler builds a trivial kernel, else the
    last error line of its complaint (checked once per device)."""
    key = device.int_ptr
    if key not in _compiles:
        try:
            ctx = cl.Context([device])
            cl.Program(ctx, "__kernel void probe(__global int *a) { a[0] = 1; }").build()
            _compiles[key] = None
        except cl.Error as err:
            lines = [ln.strip() for ln in str(err).splitlines() if "error" in ln.lower()]
            _compiles[key] = (lines[-1] if lines else str(err).splitlines()[0])[:200]
    return _compiles[key]


def make_queue(device=None):
    """A context and a profiling command queue on the chosen device. A device that
    stops kernel loops early (gpubook.loopcap, probed once) gets a line saying so."""
    device = choose_device() if device is None else device
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    loopcap.announce(device)
    return ctx, queue


def open_device(spec=None):
    """How the chapters after chapter 0 start: the chosen device (PYOPENCL_CTX,
    else the first GPU), a context and profiling queue on it, the problem scale
    for it and its name, as (device, ctx, queue, scale, name)."""
    from .scale import scale

    device = choose_device(spec)
    ctx, queue = make_queue(device)
    return device, ctx, queue, scale(device), device.name.strip()


def has_fp64(device):
    return bool(device.double_fp_config) or "cl_khr_fp64" in device.extensions


def device_kind(device):
    """'GPU', 'CPU' or 'accelerator'."""
    if device.type & cl.device_type.GPU:
        return "GPU"
    if device.type & cl.device_type.CPU:
        return "CPU"
    return "accelerator"


NOT_REPORTED = "not reported"


def compute_units(device):
    """The device's compute units, 1 when it reports none (work sized by it still runs)."""
    return reported(device, "max_compute_units") or 1


def cycle_ns(device):
    """Nanoseconds per clock cycle at the device's maximum clock (NaN where no clock is reported)."""
    mhz = reported(device, "max_clock_frequency")
    return 1e3 / mhz if mhz else float("nan")


def _shown(value, scale=1, digits=None):
    """A property for a table: scaled, or "not reported" where the runtime gives none."""
    if value is None:
        return NOT_REPORTED
    return round(value / scale, digits) if digits is not None else value // scale


def device_summary(device):
    """The facts about a device that later chapters rely on, as (field, value) rows
    ("not reported" where the runtime gives 0 or nothing)."""
    r = lambda name: reported(device, name)  # noqa: E731
    return [
        ("name", device.name.strip()),
        ("type", device_kind(device)),
        ("vendor", device.vendor.strip()),
        ("driver", device.driver_version.strip()),
        ("OpenCL", device.version.strip()),
        ("compute units", _shown(r("max_compute_units"))),
        ("max clock (MHz)", _shown(r("max_clock_frequency"))),
        ("global memory (GiB)", _shown(r("global_mem_size"), 2**30, 1)),
        ("max allocation (GiB)", _shown(r("max_mem_alloc_size"), 2**30, 1)),
        ("local memory (KiB)", _shown(r("local_mem_size"), 1024)),
        ("max work-group size", _shown(r("max_work_group_size"))),
        ("preferred float vector width", _shown(r("preferred_vector_width_float"))),
        ("fp64", "yes" if has_fp64(device) else "no"),
    ]


def default_work_group(device, largest=256):
    """The largest power of two up to `largest` that the device allows."""
    return launch.largest(device, largest)


def check_work_group(device, size, local_bytes=0):
    """Raise a clear error (a ValueError) when the device cannot run a work-group
    of `size` work-items with `local_bytes` of local memory."""
    launch.check(device, size, local_bytes)


def require_fp64(device):
    if not has_fp64(device):
        raise ValueError(fp64_missing(device))


def fp64_missing(device):
    return f"{device.name.strip()} has no fp64 support (cl_khr_fp64)"


def chapter_needs_fp64(device):
    """A chapter that computes in double precision calls this first: on a device
    without fp64 it prints why and every later cell of the notebook does nothing."""
    from .show import end_chapter

    if not has_fp64(device):
        end_chapter(fp64_missing(device))


def pinned_empty(ctx, queue, shape, dtype=np.float32):
    """A host array in page-locked memory (a mapped ALLOC_HOST_PTR buffer): the
    memory a GPU's copy engine reads at full speed. Release with `.base.release(queue)`."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, nbytes)
    arr, _ = cl.enqueue_map_buffer(queue, buf, cl.map_flags.READ | cl.map_flags.WRITE, 0, shape, dtype)
    return arr
