"""The loop-cap probe (gpubook.loopcap) on PoCL, a capped device faked, and the
discovery of tools/test_devices.py (each implementation runs or says why not)."""
import importlib.util
import pathlib

import pytest

import gpubook as gb
from gpubook import loopcap

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def env():
    device, ctx, queue, _, _ = gb.open_device()
    return device, ctx, queue


@pytest.fixture
def fresh(monkeypatch):
    """The probe's cache and current device, emptied for one test."""
    monkeypatch.setattr(loopcap, "_caps", {})
    monkeypatch.setattr(loopcap, "_opened", [None])


def test_probe_runs_every_iteration_on_pocl(env):
    device, ctx, _ = env
    assert loopcap.probe(ctx, device) is None
    assert loopcap.probe(ctx, device, iterations=3) is None


def test_no_cap_no_note(env, fresh, capsys):
    device, ctx, _ = env
    assert gb.loop_cap(device, ctx) is None
    assert gb.loop_cap_note(device) == "" and loopcap.failure_note(device) == ""
    assert loopcap.announce(device) is None
    assert capsys.readouterr().out == ""
    assert loopcap.with_note("weights differ", device) == "weights differ"


def test_probed_once_per_device(env, fresh, monkeypatch):
    device, ctx, _ = env
    calls = []
    monkeypatch.setattr(loopcap, "probe", lambda c, d: calls.append(d) or None)
    for _ in range(3):
        gb.loop_cap(device, ctx)
    assert len(calls) == 1


def test_a_capped_device_says_so_in_one_line(env, fresh, monkeypatch, capsys):
    device, _, _ = env
    monkeypatch.setattr(loopcap, "probe", lambda c, d: 65_535)
    gb.make_queue(device)
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "stops kernel loops after 65,535 iterations" in out
    assert out.strip() == gb.loop_cap_note(device)


def test_a_failed_check_names_the_cap(env, fresh, monkeypatch):
    device, ctx, _ = env
    import numpy as np
    from gpubook import xtx

    monkeypatch.setattr(loopcap, "probe", lambda c, d: 65_535)
    loopcap.announce(device)
    with pytest.raises(AssertionError, match="covariance differs.*stops kernel loops after 65,535"):
        xtx.check(np.full((2, 2), 2.0), np.ones((2, 2)), 1e-3)
    assert xtx.check(np.ones((2, 2)), np.ones((2, 2)), 1e-3) == 0.0


def test_ipython_adds_the_cause_to_a_failed_assert(fresh, capsys):
    shell_module = pytest.importorskip("IPython.core.interactiveshell")
    shell = shell_module.InteractiveShell.instance()
    loopcap._opened[0] = 65_535
    shell.set_custom_exc(loopcap.CHECK_ERRORS, loopcap._assertion_handler)
    try:
        result = shell.run_cell("assert 1 == 2, ('sort + scan', 8.7e-4)")
        assert not result.success          # the cell still fails
        message = str(result.error_in_exec)
        assert message.startswith("('sort + scan', 0.00087). This device stops kernel loops after 65,535")
        assert "stops kernel loops" in capsys.readouterr().out
        result = shell.run_cell("raise RuntimeError('the pointer chase stands at word 2041760')")
        assert "word 2041760. This device stops kernel loops" in str(result.error_in_exec)
        loopcap._opened[0] = None          # a device without a cap: the message as it was
        result = shell.run_cell("assert 1 == 2, 'weights differ'")
        assert str(result.error_in_exec) == "weights differ"
    finally:
        shell.set_custom_exc((), None)
        shell_module.InteractiveShell.clear_instance()   # get_ipython() is None again for later tests


def _tool():
    spec = importlib.util.spec_from_file_location("test_devices_tool", ROOT / "tools" / "test_devices.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_discovery_skips_what_is_absent_with_the_reason(monkeypatch, tmp_path):
    tool = _tool()
    monkeypatch.setattr(tool, "intel_library", lambda: None)
    seen = []

    def device_of(env):
        seen.append(env)
        if env.get("PYOPENCL_CTX") == "rusticl":
            return "", "PYOPENCL_CTX='rusticl' matches no OpenCL device"
        return "Portable Computing Language | cpu", ""

    monkeypatch.setattr(tool, "device_of", device_of)
    runs = {r.name: r for r in tool.discover(tmp_path)}
    assert [r for r in runs] == ["pocl-32", "pocl-16", "intel", "rusticl"]
    assert not runs["pocl-32"].skip and runs["pocl-32"].env["POCL_MAX_WORK_GROUP_SIZE"] == "32"
    assert not runs["pocl-16"].skip and runs["pocl-16"].env["POCL_MAX_WORK_GROUP_SIZE"] == "16"
    assert "intel-opencl-rt" in runs["intel"].skip
    assert "mesa-opencl-icd" in runs["rusticl"].skip and runs["rusticl"].env["RUSTICL_ENABLE"] == "llvmpipe"
    assert len(seen) == 3                  # Intel's is not asked for a device it does not have
    only = {r.name: r for r in tool.discover(tmp_path, only=["pocl-16"])}
    assert only["pocl-32"].skip == "not asked for (--only)" and not only["pocl-16"].skip


def test_intel_is_registered_through_its_own_icd_folder(monkeypatch, tmp_path):
    tool = _tool()
    library = tmp_path / "lib" / "libintelocl.so"
    library.parent.mkdir()
    library.write_bytes(b"")
    monkeypatch.setenv("INTEL_OCL_LIB", str(library))
    assert tool.intel_library() == library
    folder = tmp_path / "icd"
    folder.mkdir()
    env = tool.intel_env(library, folder)
    assert env["OCL_ICD_VENDORS"] == str(folder) and env["PYOPENCL_CTX"] == "intel"
    assert (folder / "intel-cpu.icd").read_text().strip() == str(library)
    assert env["LD_LIBRARY_PATH"].split(":")[0] == str(library.parent)
    monkeypatch.setenv("INTEL_OCL_LIB", str(tmp_path / "missing.so"))
    assert tool.intel_library() is None


def test_pocl_is_found_for_real(tmp_path):
    tool = _tool()
    device, reason = tool.device_of({"PYOPENCL_CTX": "portable", "POCL_MAX_WORK_GROUP_SIZE": "16"})
    assert reason == "" and device.startswith("Portable Computing Language")
    device, reason = tool.device_of({"PYOPENCL_CTX": "no-such-platform"})
    assert device == "" and "matches no OpenCL device" in reason


def test_pytest_summary_counts():
    tool = _tool()
    assert tool.counts("....\n15 failed, 60 passed in 23.07s\n") == {"failed": 15, "passed": 60}
    assert tool.counts("x\n3 passed, 2 skipped, 1 error in 4.00s") == {"passed": 3, "skipped": 2, "error": 1}
    assert tool.counts("crashed") == {}
