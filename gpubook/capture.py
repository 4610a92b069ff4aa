"""Capture a chapter's kernel launches, to replay them where a profiler sees them.

NVIDIA's profilers do not see OpenCL kernels. With GPUBOOK_CAPTURE=<folder> set,
every launch of a kernel built through `gpubook.kernels` passes through `arm`'s
hooks; for each kernel label (`path:name[defines]`, as the records' resources
name it) the largest launch is kept on disk: the program's source and options,
the kernel's name, the global and local sizes, and each argument (a buffer's
bytes as they were just before the launch, a number, or a local-memory size).
`gpubook.replay` later builds the same launch twice, through OpenCL and through
the CUDA driver from the same PTX, and `tools/counters.py` profiles the latter.

Capturing costs a queue.finish() and a read of every buffer at each launch that
is larger than the kernel's largest so far, so a capture run is not a timed run.
"""
import contextlib
import json
import os
import pathlib

import numpy as np
import pyopencl as cl

from . import kernels

MAX_BYTES = int(os.environ.get("GPUBOOK_CAPTURE_MAX_BYTES", 2 << 30))
MAX_KERNELS = int(os.environ.get("GPUBOOK_CAPTURE_MAX_KERNELS", 60))   # per notebook


class Capture:
    """Keeps, per kernel label, the largest launch seen, in `folder`/<n>/."""

    def __init__(self, folder):
        self.folder = pathlib.Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.args = {}       # kernel int_ptr -> its arguments as last set
        self.sizes = {}      # label -> (work-items, bytes) of the launch kept
        self.skipped = {}    # label -> why it was not kept
        self._next = len(list(self.folder.glob("*/launch.json")))

    def set_args(self, kern, args):
        self.args[kern.int_ptr] = list(args)

    def set_arg(self, kern, index, value):
        held = self.args.setdefault(kern.int_ptr, [])
        held.extend([None] * (index + 1 - len(held)))
        held[index] = value

    def launch(self, queue, kern, global_size, local_size):
        """Called just before the launch is enqueued."""
        built = kernels.source_of(kern.program)
        if built is None:
            return
        label = kernels.label(built[0], built[2], kern.function_name)
        if "TRACE=" in label:      # a figure's traced variant, at a tiny size
            return
        if label not in self.sizes and len(self.sizes) >= MAX_KERNELS:
            self.skipped[label] = f"the capture keeps {MAX_KERNELS} kernels a notebook"
            return
        args = self.args.get(kern.int_ptr, [])
        nbytes = sum(a.size for a in args if isinstance(a, cl.Buffer))
        items = int(np.prod(global_size))
        if (items, nbytes) <= self.sizes.get(label, (-1, -1)):
            return
        why = self._why_not(args, local_size, nbytes)
        if why:
            self.skipped[label] = why
            return
        self.sizes[label] = (items, nbytes)
        self.skipped.pop(label, None)
        self._save(queue, kern, label, built, global_size, local_size, args)

    @staticmethod
    def _why_not(args, local_size, nbytes):
        if local_size is None:
            return "launched without a local size (the driver chose it)"
        if any(a is None for a in args):
            return "an argument was set where the capture could not see it"
        if nbytes > MAX_BYTES:
            return f"its buffers hold {nbytes / 2**30:.1f} GiB, over the capture's limit"
        return None

    def _save(self, queue, kern, label, built, global_size, local_size, args):
        here = self._slot(label)
        here.mkdir(parents=True, exist_ok=True)
        queue.finish()
        described = []
        for i, a in enumerate(args):
            if isinstance(a, cl.Buffer):
                data = np.empty(a.size, np.uint8)
                cl.enqueue_copy(queue, data, a)
                np.save(here / f"arg{i}.npy", data)
                described.append({"kind": "buffer", "file": f"arg{i}.npy", "nbytes": a.size})
            elif isinstance(a, cl.LocalMemory):
                described.append({"kind": "local", "nbytes": int(a.size)})
            else:
                value = np.asarray(a)
                if value.dtype.fields or value.shape:
                    described.append({"kind": "bytes", "hex": value.tobytes().hex()})
                else:
                    described.append({"kind": "scalar", "dtype": value.dtype.str,
                                      "value": value.item()})
        (here / "source.cl").write_text(built[1])
        spec = {"label": label, "kernel": kern.function_name, "options": built[2],
                "global": [int(g) for g in global_size],
                "local": [int(s) for s in local_size], "args": described,
                "notebook": os.environ.get("GPUBOOK_NOTEBOOK", "")}
        (here / "launch.json").write_text(json.dumps(spec, indent=1) + "\n")

    def _slot(self, label):
        for spec in self.folder.glob("*/launch.json"):
            if json.loads(spec.read_text())["label"] == label:
                return spec.parent
        self._next += 1
        return self.folder / f"{self._next:03d}"

    def write_skipped(self):
        (self.folder / "skipped.json").write_text(json.dumps(self.skipped, indent=1) + "\n")


_active = None
_ORIGINAL = {}


def _install(capture):
    """Route pyopencl's launches through `capture` (None restores pyopencl's own)."""
    global _active
    if not _ORIGINAL:
        _ORIGINAL.update(call=cl.Kernel.__call__, set_args=cl.Kernel.set_args,
                         set_arg=cl.Kernel.set_arg, enqueue=cl.enqueue_nd_range_kernel)
    _active = capture
    if capture is None:
        cl.Kernel.__call__, cl.Kernel.set_args = _ORIGINAL["call"], _ORIGINAL["set_args"]
        cl.Kernel.set_arg = _ORIGINAL["set_arg"]
        cl.enqueue_nd_range_kernel = _ORIGINAL["enqueue"]
        return
    call, set_args, set_arg = _ORIGINAL["call"], _ORIGINAL["set_args"], _ORIGINAL["set_arg"]
    enqueue = _ORIGINAL["enqueue"]

    def kernel_call(self, queue, global_size, local_size, *args, **kwargs):
        capture.set_args(self, args)
        capture.launch(queue, self, global_size, local_size)
        return call(self, queue, global_size, local_size, *args, **kwargs)

    def kernel_set_args(self, *args):
        capture.set_args(self, args)
        return set_args(self, *args)

    def kernel_set_arg(self, index, value):
        capture.set_arg(self, index, value)
        return set_arg(self, index, value)

    def enqueue_nd_range(queue, kern, global_size, local_size, *args, **kwargs):
        capture.launch(queue, kern, global_size, local_size)
        return enqueue(queue, kern, global_size, local_size, *args, **kwargs)

    cl.Kernel.__call__, cl.Kernel.set_args = kernel_call, kernel_set_args
    cl.Kernel.set_arg, cl.enqueue_nd_range_kernel = kernel_set_arg, enqueue_nd_range


def arm(folder):
    """Route every kernel launch of this process through a Capture into `folder`
    (idempotent); what it could not keep is written to skipped.json at exit."""
    if _active is not None:
        return _active
    capture = Capture(folder)
    _install(capture)
    import atexit

    atexit.register(capture.write_skipped)
    return capture


@contextlib.contextmanager
def recording(folder):
    """A Capture into `folder` for the launches inside the block only."""
    previous = _active
    capture = Capture(folder)
    _install(capture)
    try:
        yield capture
    finally:
        _install(previous)
        capture.write_skipped()


def arm_from_environment():
    """Arm when GPUBOOK_CAPTURE names a folder (tools/run_notebooks.py --capture)."""
    folder = os.environ.get("GPUBOOK_CAPTURE")
    return arm(folder) if folder else None
