"""gpubook.ptx_probe and tools/probe_wgmma.py: the build log's error line, the PTX target line, and the
refusal on a device that is not NVIDIA's (the probes themselves need NVIDIA's compiler)."""
import sys

import pytest

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent / "tools"))
import probe_wgmma  # noqa: E402
from gpubook import ptx_probe  # noqa: E402


def test_first_error_takes_the_line_that_names_the_error():
    log = ("ptxas info : compiling\n"
           "ptxas error : Instruction 'wgmma.fence' not supported on .target 'sm_90'\n"
           "ptxas error : second\n")
    assert ptx_probe.first_error(log) == "ptxas error : Instruction 'wgmma.fence' not supported on .target 'sm_90'"
    assert ptx_probe.first_error("\n  only a line \n") == "only a line"
    assert ptx_probe.first_error("") == "(empty build log)"


def test_ptx_target_reads_the_target_line():
    ptx = b"//\n.version 8.0\n.target sm_90, texmode_independent\n.address_size 64\n\x00"
    assert ptx_probe.ptx_target(ptx) == ".target sm_90, texmode_independent"
    assert ptx_probe.ptx_target(b"\x7fELF") == ""


@pytest.mark.parametrize("name", list(ptx_probe.PROBES))
def test_each_probe_is_one_kernel_with_its_instruction(name):
    target, body = ptx_probe.PROBES[name]
    src = ptx_probe.source(body)
    assert src.count("__kernel void probe(") == 1
    word = name.split()[0]
    assert word in src, (name, word)
    assert target in ("sm_80", "sm_90", "sm_90a")


def test_a_device_not_nvidias_builds_nothing(monkeypatch, capsys):
    import gpubook as gb

    monkeypatch.setattr(sys, "argv", ["probe_wgmma.py"])
    assert probe_wgmma.main() == 0
    out = capsys.readouterr().out
    if "NVIDIA" in gb.open_device()[0].vendor.upper():   # a reader's NVIDIA GPU: a row per probe
        assert all(f"{name} | " in out for name in ptx_probe.PROBES), out
    else:
        assert "is not an NVIDIA device: inline PTX does not apply, nothing built" in out
