"""Chapter 3's device-wide sums."""
from .steps import STEPS, DeviceSum  # noqa: F401
from . import figures, steps  # noqa: F401
