"""Helpers shared by every chapter of the book.

Chapters import from here so that the notebooks stay about ideas:
device choice, kernel building, event timing and sweeps, problem scale,
plots and recorded results.
"""
import warnings as _warnings

import pyopencl as _cl

# PyOpenCL warns, with no detail, that a build left a log unless PYOPENCL_COMPILER_OUTPUT=1
# is set; NVIDIA's compiler leaves one on success for pyopencl.array's own reductions and
# for the probes, and the warning stood in the stored pages. With that variable set, the
# logs themselves still show.
_warnings.filterwarnings("ignore", message="Non-empty compiler output encountered",
                         category=_cl.CompilerWarning)
from .device import (DeviceChoiceError, chapter_needs_fp64, check_work_group, choose_device, device_kind,
                     device_summary, has_fp64, list_devices, make_queue, open_device, pinned_empty,
                     require_fp64)
from . import counters, launch
from .claims import claim
from .host import host_baseline
from .kernels import KernelBuildError, build, kernel, show_diff, show_kernel
from .launch import LaunchError
from .loopcap import LoopCapError, loop_cap, note as loop_cap_note
from .limits import copy_gbs, fp32_gflops, fp64_gflops, h2d_gbs
from .plot import new_figure, plot_sweep, plot_time_bars
from .records import device_slug, load_results, other_devices, record, recorded_limits
from .resources import arch_limits, kernel_resources, occupancy, ptx_lines, resource_table
from .scale import scale
from .show import answer, counted, folded, glue, markdown_table, show_code
from .tiles import TileError, label as tile_label
from .timing import Timing, event_seconds, stats, sweep, table, time_events
from .capture import arm_from_environment as _arm_capture

_arm_capture()   # GPUBOOK_CAPTURE set (tools/run_notebooks.py --capture): keep the launches

__all__ = [
    "DeviceChoiceError", "chapter_needs_fp64", "check_work_group", "choose_device", "device_kind",
    "device_summary", "has_fp64", "list_devices", "make_queue", "open_device", "pinned_empty",
    "require_fp64",
    "KernelBuildError", "build", "kernel", "show_diff", "show_kernel", "LaunchError", "launch",
    "loop_cap", "loop_cap_note",
    "copy_gbs", "fp32_gflops", "fp64_gflops", "h2d_gbs",
    "new_figure", "plot_sweep", "plot_time_bars", "TileError", "tile_label",
    "device_slug", "load_results", "other_devices", "record", "recorded_limits",
    "arch_limits", "kernel_resources", "occupancy", "ptx_lines", "resource_table",
    "scale", "answer", "counted", "folded", "glue", "markdown_table", "show_code", "host_baseline", "claim",
    "Timing", "event_seconds", "stats", "sweep", "table", "time_events",
]
