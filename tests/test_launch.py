"""Launch shapes come from the device (gpubook.launch), never from a literal."""
import ast
import math
import pathlib
from types import SimpleNamespace

import nbformat
import numpy as np
import pyopencl as cl
import pytest

import gpubook as gb
from gpubook import launch

ROOT = pathlib.Path(__file__).resolve().parent.parent


class CappedKernel:
    """A built kernel's work-group info, as a runtime that caps it reports it."""

    def __init__(self, most, multiple=0):
        self.most, self.multiple = most, multiple

    def get_work_group_info(self, what, device):
        if what == cl.kernel_work_group_info.WORK_GROUP_SIZE:
            return self.most
        if what == cl.kernel_work_group_info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE:
            return self.multiple
        raise cl.LogicError("not reported")


def stub_device(most=1024, per_dim=(1024, 1024, 64), local=49152, **extra):
    fields = dict(name="stub GPU", max_work_group_size=most, max_work_item_sizes=list(per_dim),
                  local_mem_size=local, max_compute_units=132, max_clock_frequency=1980,
                  global_mem_size=2**34, max_mem_alloc_size=2**32, preferred_vector_width_float=1,
                  vendor="stub", driver_version="1", version="OpenCL 3.0", type=cl.device_type.GPU,
                  double_fp_config=0, extensions="")
    fields.update(extra)
    return SimpleNamespace(**fields)


@pytest.mark.parametrize("most, want, expected", [
    (1024, (64, 4), (64, 4)),     # fits: unchanged
    (64, (64, 4), (64, 1)),       # the second dimension halves first: the first keeps coalescing
    (32, (64, 4), (32, 1)),
    (64, (16, 16), (16, 4)),
    (256, (256,), (256,)),
    (64, (256,), (64,)),
    (1, (16, 16), (1, 1)),
])
def test_local_size_shrinks_to_the_kernel(most, want, expected):
    assert launch.local_size(CappedKernel(most), stub_device(), want) == expected


def test_local_size_respects_each_dimension():
    dev = stub_device(most=1024, per_dim=(1024, 2, 1))
    assert launch.local_size(CappedKernel(1024), dev, (64, 4)) == (64, 2)


def test_kernel_limit_below_the_device():
    dev = stub_device(most=1024)
    assert launch.kernel_max(CappedKernel(384), dev) == 384
    assert launch.local_size(CappedKernel(384), dev, (256, 4)) == (256, 1)
    assert "exceeds this kernel's maximum 384" in launch.why_not(dev, 512, kern=CappedKernel(384))


def test_unreported_limits_are_not_trusted():
    """A kernel or device that reports 0 falls back to the other limits; nothing raises."""
    dev = stub_device(most=0, per_dim=(0, 0, 0), local=0, max_compute_units=0, max_clock_frequency=0)
    assert launch.device_max(dev) == 1
    assert launch.kernel_max(CappedKernel(0), stub_device(most=256)) == 256
    assert launch.preferred_multiple(CappedKernel(0), dev) == 1
    assert launch.local_size(CappedKernel(0), dev, (64, 4)) == (1, 1)
    assert launch.why_not(dev, 1, local_bytes=10**9) is None  # no local size reported: not refused


def test_largest_and_fitting_say_why():
    dev = stub_device(most=64, local=4096)
    assert launch.largest(dev, 256) == 64
    assert launch.largest(dev, 256, local_bytes=lambda n: 128 * n) == 32  # 32 x 128 B = 4 KiB
    ok, skipped = launch.fitting(dev, (32, 64, 128))
    assert ok == [32, 64] and skipped == [(128, "work-group size 128 exceeds this device's maximum 64 (stub GPU)")]
    with pytest.raises(launch.LaunchError, match="runs no work-group of 32 to 256"):
        launch.largest(dev, 256, smallest=32, local_bytes=lambda n: 10**6)
    assert launch.square_side(dev, (16, 8, 4)) == 8
    with pytest.raises(launch.LaunchError, match="no square work-group"):
        launch.square_side(stub_device(most=8), (16, 8))


def test_global_size_rounds_up_to_the_local_size():
    assert launch.global_size((100, 7), (64, 4)) == (128, 8)
    assert launch.global_size((128,), (64,)) == (128,)


def test_enqueue_on_pocl_shrinks_and_computes():
    """A real launch through the chooser: the kernel's own limit decides, the result is exact."""
    ctx, queue = gb.make_queue()
    src = "__kernel void idx(__global int *o, const int n) { int i = get_global_id(0); if (i < n) o[i] = i; }"
    kern = cl.Kernel(cl.Program(ctx, src).build(), "idx")
    n = 1000
    out = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, 4 * n)
    launch.enqueue(queue, kern, (n,), (4096,), out, np.int32(n)).wait()
    got = np.empty(n, np.int32)
    cl.enqueue_copy(queue, got, out)
    assert (got == np.arange(n)).all()
    assert launch.local_size(kern, queue.device, (4096,))[0] <= launch.kernel_max(kern, queue.device)


def test_a_bound_recalls_a_kept_launch_and_keeps_only_what_it_launched():
    """Bound.recall/remember (launch.enqueue with a bound): the same launch again is
    enqueued from what was kept (no new launch through the Bound) and computes the
    same; other arguments make their own launch; a NaN or an unhashable argument is
    never kept; nothing is kept where no launch went through the Bound."""
    ctx, queue = gb.make_queue()
    src = ("__kernel void fill(__global float *o, const int n, const float v) "
           "{ int i = get_global_id(0); if (i < n) o[i] = v + i; }")
    kern = cl.Kernel(cl.Program(ctx, src).build(), "fill")
    out, got = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * 100), np.empty(100, np.float32)
    bound = launch.Bound()

    def run(n, v):
        launch.enqueue(queue, kern, (n,), (32,), out, np.int32(n), np.float32(v), bound=bound).wait()
        cl.enqueue_copy(queue, got, out)
        return got[:n].copy()

    assert np.array_equal(run(100, 1.0), 1 + np.arange(100))
    made = bound.count
    cl.enqueue_fill_buffer(queue, out, np.float32(0), 0, 400).wait()
    assert np.array_equal(run(100, 1.0), 1 + np.arange(100)) and bound.count == made
    assert np.array_equal(run(50, 2.0), 2 + np.arange(50)) and bound.count == made + 1
    assert np.isnan(run(10, np.nan)).all() and np.isnan(run(10, np.nan)).all()
    assert bound.count == made + 3                    # NaN: launched anew each time
    assert bound.recall([out]) is None                # a list is no key
    bound.remember("nothing launched", bound.count)
    assert bound.recall("nothing launched") is None


def test_a_bound_reads_each_kernels_shape_once_and_the_same_as_local_size():
    """Bound.local_size: the device's and the kernel's limits are read on the first
    launch of each kernel and wanted shape only; what it gives is local_size's."""
    class Counting(CappedKernel):
        reads = 0

        def get_work_group_info(self, what, device):
            Counting.reads += 1
            return super().get_work_group_info(what, device)

    dev, kern, other = stub_device(), Counting(64), Counting(1024)
    bound = launch.Bound()
    assert bound.local_size(kern, dev, (64, 4)) == launch.local_size(kern, dev, (64, 4)) == (64, 1)
    reads = Counting.reads
    for _ in range(5):
        assert bound.local_size(kern, dev, (64, 4)) == (64, 1)
    assert Counting.reads == reads
    assert bound.local_size(other, dev, (64, 4)) == (64, 4)      # another kernel: its own limit
    assert bound.local_size(kern, dev, (16, 2)) == (16, 2)        # another shape: read again


def test_a_zero_clock_device_has_a_summary_and_no_division():
    dev = stub_device(max_clock_frequency=0, max_compute_units=0, local_mem_size=0)
    rows = dict(gb.device_summary(dev))
    assert rows["max clock (MHz)"] == "not reported"
    assert rows["compute units"] == "not reported"
    assert rows["local memory (KiB)"] == "not reported"
    assert math.isnan(gb.device.cycle_ns(dev))
    assert gb.device.compute_units(dev) == 1
    assert gb.device.cycle_ns(stub_device()) == pytest.approx(1e3 / 1980)


def test_a_device_property_that_raises_is_not_reported():
    class Raising(SimpleNamespace):
        @property
        def max_clock_frequency(self):
            raise cl.LogicError("clGetDeviceInfo failed: INVALID_VALUE")

    assert gb.device.reported(Raising(), "max_clock_frequency") is None


# --- no literal local size outside gpubook/launch.py -------------------------------------

def _literal_locals(tree):
    """Kernel calls whose local size is written as numbers: k(queue, global, (64, 4), ...) or
    cl.enqueue_nd_range_kernel(queue, k, global, (64,)), or None (the driver's choice)."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        at = 3 if name == "enqueue_nd_range_kernel" else 2
        if len(node.args) <= at or not isinstance(node.args[at - 1], ast.Tuple):
            continue  # not a launch: a launch passes its global size as a tuple
        local = node.args[at]
        if isinstance(local, ast.Constant) and local.value is None:
            found.append((node.lineno, "None"))
        elif isinstance(local, ast.Tuple) and any(isinstance(e, ast.Constant) and type(e.value) is int
                                                  and e.value != 1 for e in local.elts):
            found.append((node.lineno, ast.unparse(local)))
    return found


def _package_sources():
    for path in sorted((ROOT / "gpubook").rglob("*.py")):
        if path.name != "launch.py":
            yield path.relative_to(ROOT), path.read_text()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = nbformat.read(str(path), as_version=4).cells
        code = "\n".join(c.source for c in cells if c.cell_type == "code" and not c.source.startswith("%"))
        yield path.relative_to(ROOT), code


def test_the_check_finds_literal_local_sizes():
    tree = ast.parse("k(q, (n,), (64, 1), a)\ncl.enqueue_nd_range_kernel(q, k, (n,), (128,))\n"
                     "k(q, (n,), None, a)\nk(q, (g * nt, c), (nt, 1), a)\nf(a, (1, 2), (3, 4))\n"
                     "g(a, ('x', 'y'), ('a', 'b'))")
    assert [text for _, text in _literal_locals(tree)] == ["(64, 1)", "(128,)", "None", "(3, 4)"]


@pytest.mark.parametrize("rel, text", list(_package_sources()), ids=lambda v: str(v) if isinstance(v, pathlib.Path)
                         else "")
def test_no_literal_local_size(rel, text):
    found = _literal_locals(ast.parse(text))
    assert not found, f"{rel}: local sizes not from gpubook.launch: " + ", ".join(
        f"line {line}: {size}" for line, size in found)


class CompiledKernel(CappedKernel):
    """A kernel compiled for a fixed work-group whose driver reports a smaller maximum."""

    def __init__(self, most, compiled):
        super().__init__(most)
        self.compiled = compiled

    def get_work_group_info(self, what, device):
        if what == cl.kernel_work_group_info.COMPILE_WORK_GROUP_SIZE:
            return self.compiled
        return super().get_work_group_info(what, device)


def test_nvidia_declared_size_counts_over_its_report():
    """NVIDIA reports 256 for a kernel compiled for 1,024 that runs at 1,024; elsewhere the report rules."""
    nvidia = stub_device(platform=SimpleNamespace(name="NVIDIA CUDA"))
    other = stub_device(platform=SimpleNamespace(name="rusticl"))
    kern = CompiledKernel(256, [1024, 1, 1])
    assert launch.kernel_max(kern, nvidia) == 1024
    assert launch.kernel_max(kern, other) == 256
    assert launch.kernel_max(CompiledKernel(256, [0, 0, 0]), nvidia) == 256
    assert launch.kernel_max(CompiledKernel(256, [2048, 1, 1]), nvidia) == 1024  # never past the device
