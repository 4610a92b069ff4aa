"""The device limits that chapters compare against (measured in chapter 0)."""
import numpy as np
import pyopencl as cl

from .kernels import kernel
from .records import recorded_limits
from .scale import scale
from .timing import time_events


def copy_gbs(ctx, queue, device):
    """Copy bandwidth in GB/s (read + write): chapter 0's recorded figure for this
    device, else a quick measurement with chapter 0's float4 copy kernel."""
    recorded = recorded_limits(device)
    if recorded is not None:
        return recorded["copy_gbs"]
    n = 2**26 if scale(device) == "full" else 2**22
    mf = cl.mem_flags
    src = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.ones(n, np.float32))
    dst = cl.Buffer(ctx, mf.WRITE_ONLY, 4 * n)
    copy = kernel(ctx, "device/copy.cl", "copy", {"TYPE": "float4"})
    t = time_events(lambda: copy(queue, (n // 4,), None, src, dst), repeats=10)
    return 8 * n / t.median / 1e9
