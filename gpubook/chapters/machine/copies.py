"""Chapter 0's copy kernels and Little's law for its device: the steps both of
chapter 0's pages take (the main line and its Going-further page)."""
from ... import resources
from ...device import compute_units
from ...kernels import kernel
from ...launch import largest
from .probes import bytes_in_flight, latency_ns, read_rate, recorded

COPY_TYPES = ("float", "float4")


def copy_kernels(ctx, device, types=COPY_TYPES):
    """The copy kernel built for each element type, and the work-group size every
    copy runs in: the largest power of two up to 256 that the device and every
    built kernel (CL_KERNEL_WORK_GROUP_SIZE) allow."""
    kernels = {t: kernel(ctx, "device/copy.cl", "copy", {"TYPE": t}) for t in types}
    return kernels, min(largest(device, 256, kern=k) for k in kernels.values())


def largest_copy(scale):
    """The floats of the largest copy: both arrays far beyond every cache."""
    return 2**28 if scale == "full" else 2**22


def little(ctx, queue, device):
    """Little's law on this device: the latency and read rate it uses (recorded by
    the machine page, under load where it timed one, else measured now, with where
    each comes from), the architecture's limits (None where unknown) and the bytes in
    flight."""
    rec = recorded(device) or {}
    law = rec.get("little")
    if law:     # the machine page's: under load where it timed one, else the chase's
        lat, lat_from = law["latency_ns"], "the machine chapter's record"
    else:
        lat, lat_from = latency_ns(ctx, queue, device)
    read, read_from = read_rate(ctx, queue, device)
    arch = resources.arch_limits(device)
    resident = arch.max_warps * arch.warp_size if arch else None
    return {"latency_ns": lat, "latency_from": lat_from, "read_gbs": read,
            "read_from": read_from, "arch": arch,
            "little": bytes_in_flight(lat, read, compute_units(device), resident)}
