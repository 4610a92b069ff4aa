"""The SM clock under load, read from inside an OpenCL kernel (NVIDIA's inline PTX).

A page that counts cycles needs the clock the SMs ran at, not the data sheet's
maximum: under a full FMA load a GPU may run below its boost clock. On NVIDIA,
kernels/device/sm_clock.cl reads each work-group's SM cycle counter and the GPU's
nanosecond timer (device/nv_clock.cl's reads) around a loop that keeps every SM busy;
their ratio is the clock in GHz. Other devices have no such counters in OpenCL C,
and `measure` says so instead of guessing.
"""
import shutil
import subprocess
import time
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from . import launch
from .device import compute_units
from .kernels import kernel


class ClockUnavailable(RuntimeError):
    """This device's SM clock cannot be read from a kernel; the message says why."""


@dataclass(frozen=True)
class SMClock:
    ghz: float           # median over work-groups of cycles / nanoseconds
    low: float           # 20% and 80% quantiles over work-groups
    high: float
    groups: int          # work-groups that read the clock
    sms: int             # distinct SMs they ran on
    loop_ns: float       # median nanoseconds of one work-group's loop

    def cycles(self, seconds):
        """Cycles at this clock in `seconds`."""
        return seconds * self.ghz * 1e9


def why_not(device):
    """Why this device's SM clock is not read here, or None where it is."""
    if "NVIDIA" not in device.platform.name:
        return (f"{device.name.strip()} has no SM cycle counter that OpenCL C can read "
                "(NVIDIA's inline PTX reads %clock64)")
    return None


def stamps(ctx, queue, device, iters=32768, groups_per_cu=4, nv_ptx=None):
    """Launch the clock kernel over every compute unit; returns (per work-group
    stamps as an array of [cycles, ns, SM, start ns], the chains' outputs)."""
    nv_ptx = why_not(device) is None if nv_ptx is None else nv_ptx
    kern = kernel(ctx, ("device/nv_clock.cl", "device/sm_clock.cl"), "sm_clock",
                  {"ITERS": int(iters), "NV_PTX": int(bool(nv_ptx))})
    local = launch.local_size(kern, device, (256,))
    groups = compute_units(device) * int(groups_per_cu)
    out = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, 4 * groups * local[0])
    marks = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, 8 * 4 * groups)
    a, b = np.float32(0.999), np.float32(0.001)
    kern(queue, (groups * local[0],), local, out, marks, a, b).wait()    # warm-up
    kern(queue, (groups * local[0],), local, out, marks, a, b).wait()
    got = np.empty((groups, 4), np.uint64)
    sums = np.empty(groups * local[0], np.float32)
    cl.enqueue_copy(queue, got, marks)
    cl.enqueue_copy(queue, sums, out)
    return got, sums


def measure(ctx, queue, device, iters=32768, groups_per_cu=4):
    """The SM clock under an FMA load (SMClock), or ClockUnavailable with the reason."""
    why = why_not(device)
    if why:
        raise ClockUnavailable(why)
    got, _ = stamps(ctx, queue, device, iters, groups_per_cu)
    return from_stamps(got, "a loop")


def from_stamps(got, what):
    """SMClock of per work-group stamps [cycles, ns, SM, start ns] (sm_clock.cl's, or a
    kernel's that stamps the same: gpubook.wgmma.Gram(clocks=True)), read over `what`."""
    cycles, ns = got[:, 0].astype(float), got[:, 1].astype(float)
    if not len(ns) or not (ns > 0).all():
        raise ClockUnavailable(f"the GPU's nanosecond timer did not advance over {what}")
    ghz = cycles / ns
    q20, med, q80 = np.quantile(ghz, [0.2, 0.5, 0.8])
    return SMClock(float(med), float(q20), float(q80), len(ghz),
                   len(np.unique(got[:, 2])), float(np.median(ns)))


# FP32 lanes per compute unit (FMA per clock per SM), from NVIDIA's architecture
# whitepapers (Volta, Turing, Ampere GA100 and GA10x, Ada, Hopper), by compute capability
FP32_LANES = {(7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128,
              (9, 0): 128}


def fp32_lanes(device):
    """FP32 FMA lanes of the whole device (compute units x lanes per compute unit),
    or None where the book's table does not know its architecture."""
    try:
        cc = (int(device.compute_capability_major_nv), int(device.compute_capability_minor_nv))
    except Exception:    # not NVIDIA, or the runtime does not say
        return None
    per_cu = FP32_LANES.get(cc)
    return None if per_cu is None else per_cu * int(device.max_compute_units)


def power_capped_us(device):
    """Microseconds this GPU has spent with its clock held down by the driver's power cap
    (nvidia-smi's clocks_event_reasons_counters.sw_power_cap, since the driver loaded),
    or None where that cannot be read: not NVIDIA's device, no nvidia-smi, or no GPU
    of the device's PCI bus and slot in its answer."""
    smi = shutil.which("nvidia-smi")
    if why_not(device) or smi is None:
        return None
    try:
        where = (int(device.pci_bus_id_nv), int(device.pci_slot_id_nv))
        out = subprocess.run([smi, "--query-gpu=pci.bus,pci.device,"
                              "clocks_event_reasons_counters.sw_power_cap",
                              "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=30).stdout
        for line in out.splitlines():
            bus, slot, us = (v.strip() for v in line.split(","))
            if (int(bus, 16), int(slot, 16)) == where:
                return int(us)
    except (cl.Error, AttributeError, ValueError, OSError, subprocess.SubprocessError):
        return None
    return None


def power_window(device):
    """Start a stopwatch beside the power-cap counter; the function returned, called at
    the end, gives (seconds since, seconds nvidia-smi counted at the power cap meanwhile,
    or None where `power_capped_us` reads nothing)."""
    capped, start = power_capped_us(device), time.perf_counter()

    def stop():
        seconds = time.perf_counter() - start
        after = None if capped is None else power_capped_us(device)
        return seconds, None if after is None else (after - capped) * 1e-6
    return stop
