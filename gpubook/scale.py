"""Problem sizes that fit the device: `small` on CPUs and in tests, `full` on GPUs."""
import os

import pyopencl as cl

SCALES = ("small", "full")


def scale(device):
    """The scale for this device; GPUBOOK_SCALE=small|full overrides the choice."""
    forced = os.environ.get("GPUBOOK_SCALE", "").strip().lower()
    if forced:
        if forced not in SCALES:
            raise ValueError(f"GPUBOOK_SCALE={forced!r}; use one of {', '.join(SCALES)}")
        return forced
    return "full" if device.type & cl.device_type.GPU else "small"
