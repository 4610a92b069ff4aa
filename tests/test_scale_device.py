"""Scale choice and device choice, including the clear errors."""
from types import SimpleNamespace

import pyopencl as cl
import pytest

import gpubook as gb
from gpubook import device as devmod

GPU = SimpleNamespace(type=cl.device_type.GPU)
CPU = SimpleNamespace(type=cl.device_type.CPU)


def test_scale_defaults_by_device_type(monkeypatch):
    monkeypatch.delenv("GPUBOOK_SCALE", raising=False)
    assert gb.scale(GPU) == "full"
    assert gb.scale(CPU) == "small"


def test_scale_override_and_bad_value(monkeypatch):
    monkeypatch.setenv("GPUBOOK_SCALE", "small")
    assert gb.scale(GPU) == "small"
    monkeypatch.setenv("GPUBOOK_SCALE", "huge")
    with pytest.raises(ValueError, match="GPUBOOK_SCALE"):
        gb.scale(GPU)


def test_bad_pyopencl_ctx_lists_devices(monkeypatch):
    monkeypatch.setenv("PYOPENCL_CTX", "7:3")
    with pytest.raises(gb.DeviceChoiceError) as err:
        gb.choose_device()
    text = str(err.value)
    assert "PYOPENCL_CTX='7:3'" in text
    for p, d, _, dev in gb.list_devices():
        assert f"{p}:{d}" in text and dev.name.strip() in text


def test_pyopencl_ctx_by_index_and_by_name(monkeypatch):
    first = gb.list_devices()[0][3]
    monkeypatch.setenv("PYOPENCL_CTX", "0:0")
    assert gb.choose_device() == first
    monkeypatch.setenv("PYOPENCL_CTX", first.platform.name.split()[0].lower())
    assert gb.choose_device() == first


def test_no_platform_says_how_to_install(monkeypatch):
    def none():
        raise cl.LogicError("clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR")

    monkeypatch.setattr(devmod.cl, "get_platforms", none)
    with pytest.raises(gb.DeviceChoiceError, match="pocl-binary-distribution"):
        gb.choose_device()
    monkeypatch.setattr(devmod.cl, "get_platforms", lambda: [])
    with pytest.raises(gb.DeviceChoiceError, match="No OpenCL platform"):
        gb.choose_device()


def test_work_group_and_local_memory_limits():
    dev = gb.choose_device()
    gb.check_work_group(dev, dev.max_work_group_size)
    with pytest.raises(ValueError, match="exceeds this device's maximum"):
        gb.check_work_group(dev, dev.max_work_group_size * 2)
    with pytest.raises(ValueError, match="local memory"):
        gb.check_work_group(dev, 1, local_bytes=dev.local_mem_size + 1)


def test_summary_has_the_fields_chapters_use():
    fields = dict(gb.device_summary(gb.choose_device()))
    for key in ("name", "compute units", "max work-group size", "local memory (KiB)", "fp64"):
        assert key in fields


def test_default_choice_skips_a_device_that_cannot_compile(monkeypatch):
    """A CPU the bundled PoCL's LLVM does not know fails every build: the
    default choice moves on to a device that compiles, or says what failed."""
    found = devmod.list_devices()
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    first = found[0][3]
    broken = {first.int_ptr}
    monkeypatch.setattr(devmod, "compiler_failure",
                        lambda dev: "error: unknown target CPU 'generic'" if dev.int_ptr in broken else None)
    if len(found) > 1:
        assert gb.choose_device().int_ptr != first.int_ptr
    broken.update(dev.int_ptr for *_, dev in found)
    with pytest.raises(gb.DeviceChoiceError, match="unknown target CPU"):
        gb.choose_device()


def test_the_chosen_device_compiles():
    assert devmod.compiler_failure(gb.choose_device()) is None


def test_chapter_needs_fp64_stops_only_without_it():
    with_fp64 = SimpleNamespace(name="a GPU ", double_fp_config=1, extensions="cl_khr_fp64")
    without = SimpleNamespace(name="llvmpipe ", double_fp_config=0, extensions="cl_khr_icd")
    assert gb.chapter_needs_fp64(with_fp64) is None
    with pytest.raises(RuntimeError, match=r"^llvmpipe has no fp64 support \(cl_khr_fp64\)$"):
        gb.chapter_needs_fp64(without)      # outside a notebook it raises; inside, later cells do nothing
