"""Kernel building: quiet, once per options, and failures show the compiler log."""
import warnings

import numpy as np
import pyopencl as cl
import pytest

import gpubook as gb
from gpubook import kernels as kmod


@pytest.fixture(scope="module")
def ctx_queue():
    return gb.make_queue()


@pytest.fixture
def kernel_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(kmod, "KERNELS", tmp_path)
    (tmp_path / "t").mkdir()
    return tmp_path / "t"


def test_build_failure_shows_the_log(ctx_queue, kernel_dir):
    (kernel_dir / "bad.cl").write_text("__kernel void k(__global float *x) { x[0] = y; }\n")
    with pytest.raises(gb.KernelBuildError) as err:
        gb.build(ctx_queue[0], "t/bad.cl", {"N": 4})
    text = str(err.value)
    assert "kernels/t/bad.cl" in text and "-DN=4" in text
    assert "y" in text and ("undeclared" in text or "error" in text.lower())


def test_build_is_quiet_and_cached(ctx_queue, kernel_dir):
    # An unused variable makes compilers log a warning; it must not surface.
    (kernel_dir / "ok.cl").write_text(
        "__kernel void twice(__global float *x) { int unused; x[get_global_id(0)] *= SCALE; }\n")
    ctx, queue = ctx_queue
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        k1 = gb.kernel(ctx, "t/ok.cl", "twice", {"SCALE": "2.0f"})
        k2 = gb.kernel(ctx, "t/ok.cl", "twice", {"SCALE": "2.0f"})
    assert k1 is k2
    assert gb.kernel(ctx, "t/ok.cl", "twice", {"SCALE": "3.0f"}) is not k1
    x = np.arange(8, dtype=np.float32)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=x)
    k1(queue, (8,), None, buf)
    out = np.empty_like(x)
    cl.enqueue_copy(queue, out, buf)
    assert np.array_equal(out, 2 * x)


def test_show_kernel_renders_the_file(kernel_dir):
    (kernel_dir / "s.cl").write_text("// head\n__kernel void a() {\n}\n// tail\n")
    md = gb.show_kernel("t/s.cl", start="__kernel", end="}").data
    assert "```c" in md and "__kernel void a()" in md and "tail" not in md


def test_show_diff_shows_what_changed_between_two_steps():
    import gpubook as gb
    from gpubook.kernels import kernel_diff

    text = kernel_diff("reduction/1_interleaved.cl", "reduction/2_sequential.cl")
    assert text.startswith("--- kernels/reduction/1_interleaved.cl\n+++ kernels/reduction/2_sequential.cl")
    assert any(l.startswith("-") and not l.startswith("---") for l in text.splitlines())
    assert any(l.startswith("+") and not l.startswith("+++") for l in text.splitlines())
    shown = gb.show_diff("reduction/1_interleaved.cl", "reduction/2_sequential.cl").data
    assert "```diff" in shown and text in shown
    same = gb.show_diff("reduction/1_interleaved.cl", "reduction/1_interleaved.cl").data
    assert "same source" in same and "```" not in same
