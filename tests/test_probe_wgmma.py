"""gpubook.ptx_probe and tools/probe_wgmma.py: the build log's error line, the PTX target line, and the
refusal on a device that is not NVIDIA's (the probes themselves need NVIDIA's compiler)."""
import sys

import numpy as np
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


def test_the_probes_markers_become_one_m64n8k8_wgmma_for_sm90a():
    from gpubook import wgmma

    ptx = ("//\n.version 8.5\n.target sm_90, texmode_independent\n"
           "\t// begin inline asm\n\t// WG_FENCE_PROXY\n\t// end inline asm\n"
           "\t// begin inline asm\n\t// WG_MMA %f1 %f2 %f3 %f4 %rd7 %rd8 %r3\n\t// end inline asm\n\x00")
    text = wgmma.rewrite(ptx, sync=True)
    assert ".target sm_90a, texmode_independent" in text and "\x00" not in text
    assert "WG_" not in text
    assert "fence.proxy.async.shared::cta;" in text
    assert ("wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%f1, %f2, %f3, %f4}, %rd7, %rd8, p, 1, 1;"
            in text)
    assert text.index("setp.ne.b32 p, %r3, 0;") < text.index("wgmma.fence") < text.index("wgmma.mma_async")
    assert text.index("wgmma.mma_async") < text.index("wgmma.commit_group") < text.index("wgmma.wait_group")


def test_the_core_matrix_image_and_the_fragment_put_every_entry_once():
    a = np.arange(64 * 8, dtype=np.float32).reshape(64, 8)
    img = ptx_probe.core_image(a)
    assert sorted(img) == sorted(a.ravel())                       # a permutation: nothing lost or doubled
    assert list(img[:8]) == [0, 1, 2, 3, 8, 9, 10, 11]            # rows 0-1, terms 0-3: one 16-byte row each
    assert img[ptx_probe.K_STEP // 4] == 4                        # terms 4-7 of row 0: the next core matrix
    assert img[ptx_probe.MN_STEP // 4] == a[8, 0]                 # rows 8-15: the next along M
    d = np.arange(4 * ptx_probe.WARP_GROUP, dtype=np.float32)
    f = ptx_probe.fragment(d)
    assert sorted(f.ravel()) == sorted(d)
    assert list(f[0, :2]) == [0, 1] and list(f[8, :2]) == [2, 3] and f[16, 0] == 4 * 32


def test_the_verdict_says_what_the_wgmma_product_gave():
    control = ("mma.sync m16n8k8 tf32 (control)", "sm_80", "built", ".target sm_90, texmode_independent")
    refused = ("wgmma.mma_async m64n8k8 tf32", "sm_90a", "refused",
               "ptxas error : Instruction 'wgmma.mma_async' not supported on .target 'sm_90'")
    found = {opt: [control, refused] for opt in ptx_probe.OPTIONS}
    binary = [("its own PTX, .target sm_90a", "built", "ran"), ("with wgmma.fence, .target sm_90a", "built", "ran"),
              ("with wgmma.mma_async m64n8k8 tf32, .target sm_90a", "built", ""),
              (ptx_probe.PRODUCT, "built", "ran, equal to NumPy")]
    assert "the product NumPy gives, to the last bit" in ptx_probe.verdict(found, "GPU", binary)
    binary[-1] = (ptx_probe.PRODUCT, "built", "launch failed: OUT_OF_RESOURCES")
    text = ptx_probe.verdict(found, "GPU", binary)
    assert "to the last bit" not in text and "gave: built, launch failed: OUT_OF_RESOURCES" in text
    assert "to the last bit" not in ptx_probe.verdict(found, "GPU", binary[:3])


def test_the_product_probe_says_so_on_a_device_not_nvidias(monkeypatch, capsys):
    import gpubook as gb
    import probe_wgmma_product

    if "NVIDIA" in gb.open_device()[0].vendor.upper():
        pytest.skip("an NVIDIA device runs the product itself")
    monkeypatch.setattr(sys, "argv", ["probe_wgmma_product.py"])
    assert probe_wgmma_product.main() == 0
    assert "is not an NVIDIA device: wgmma does not apply" in capsys.readouterr().out


def test_the_tile_kernels_markers_become_wgmma_waited_for_or_by_the_chunk():
    from gpubook import wgmma

    regs = " ".join(f"%f{i}" for i in range(1, 17))
    ptx = (".version 8.5\n.target sm_90, texmode_independent\n\t// WG_FENCE_PROXY\n\t// WG_FENCE\n"
           f"\t// WG_MMA {regs} %rd7 %rd8 %r3\n\t// WG_MMA {regs} %rd9 %rd8 %r3\n\t// WG_COMMIT\n\t// WG_WAIT 0\n\x00")
    for sync in (True, False):
        text = wgmma.rewrite(ptx, sync)
        assert ".target sm_90a" in text and "WG_" not in text and "fence.proxy.async.shared::cta;" in text
        assert text.count("wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 {%f1, %f2,") == 2
        assert text.count("wgmma.fence.sync.aligned;") == (2 if sync else 1)
        assert text.count("wgmma.wait_group.sync.aligned 0;") == (2 if sync else 1)
        assert text.index("wgmma.fence") < text.index("wgmma.mma_async") < text.rindex("wgmma.wait_group")
    with pytest.raises(ValueError, match="4, 8, ... accumulators"):
        wgmma.rewrite(ptx.replace(" %r3\n\t// WG_COMMIT", "\n\t// WG_COMMIT"))


def test_the_wgmma_product_emulated_matches_numpy_through_the_hosts_layouts():
    """NV_PTX=0: the probe kernel computes D from local memory as the descriptors would
    read it, so the host's core-matrix image and fragment layout are checked on a CPU."""
    import gpubook as gb

    device = gb.open_device()[0]
    assert ptx_probe.wgmma_product(device, emulate=True) == (ptx_probe.PRODUCT, "built", "ran, equal to NumPy")
