"""Part 8.3's table of the FP64 tensor-core product kernel before (m8n8k4) and after
(the device's shape), on chapter 8's Going-further page, run from the notebook's own
cell with stubs for what only NVIDIA's OpenCL provides: the rows it builds, and the one line elsewhere."""
import pathlib
from types import SimpleNamespace

import nbformat
import pytest

from gpubook import dmma
from gpubook.chapters.lsq import cholqr

NB = pathlib.Path(__file__).resolve().parent.parent / "notebooks" / "08_going_further.ipynb"


def cell_source():
    found = [c.source for c in nbformat.read(str(NB), as_version=4).cells
             if c.cell_type == "code" and "f64_mma, f64_why = tensor.f64_shape(device)" in c.source]
    assert len(found) == 1
    return found[0]


def run(shape, mma_ok, capsys, gram=dmma.SHAPE):
    built, tables = [], []
    scope = {
        "tensor": SimpleNamespace(f64_shape=lambda device: shape),
        "dmma": SimpleNamespace(SHAPE=dmma.SHAPE, work_items=dmma.work_items,
                                get_kernel=lambda ctx, device, s, triangle=False:
                                built.append(s.get("MMA", "the Gram's")) or s),
        "cq6_mma": SimpleNamespace(gram_shape=gram, gram_note=f"{dmma.label(gram)}: the note"),
        "gb": SimpleNamespace(resource_table=lambda rows, device: tables.append(rows) or "table"),
        "Markdown": str, "display": lambda x: None, "ctx": None, "device": None,
        "mma_ok": mma_ok, "mma_why": "the compiler rejected mma.sync",
    }
    exec(cell_source(), scope)
    return built, tables, capsys.readouterr().out


def test_hopper_shows_ampere_shape_before_and_its_own_after(capsys):
    built, tables, out = run(("m16n8k4", "sm_90"), True, capsys)
    assert built == ["m8n8k4", "m16n8k4"]
    assert [label for label, _, _ in tables[0]] == ["m8n8k4, before: Ampere's shape",
                                                     "m16n8k4, after: this device's shape"]
    assert "m16n8k4 (sm_90)" in out and "the Gram: 64x64 tile" in out


def test_a_wide_gram_tile_gets_its_own_row(capsys):
    built, tables, out = run(("m16n8k4", "sm_90"), True, capsys, gram=cholqr.GRAM_WIDE)
    assert built == ["m8n8k4", "m16n8k4", "the Gram's"]
    assert tables[0][-1][0] == "m16n8k4, the Gram's tile for a wide matrix"
    assert tables[0][-1][2] == dmma.work_items(cholqr.GRAM_WIDE) == 256
    assert "the Gram: 128x128 tile" in out


def test_ampere_shows_its_one_shape_once(capsys):
    built, tables, _ = run(("m8n8k4", "sm_80"), True, capsys)
    assert built == ["m8n8k4"] and len(tables[0]) == 1


@pytest.mark.parametrize("shape,ok,why", [((None, "PoCL is not NVIDIA's OpenCL"), False, "PoCL"),
                                          (("m16n8k4", "sm_90"), False, "rejected mma.sync")])
def test_elsewhere_one_line_says_why(capsys, shape, ok, why):
    built, tables, out = run(shape, ok, capsys)
    assert not built and not tables
    assert out.count("\n") == 1 and out.startswith("The FP64 tensor-core shapes need NVIDIA's OpenCL") and why in out
