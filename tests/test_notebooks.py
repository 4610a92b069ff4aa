"""Static checks of the stored notebooks: tags, and outputs fit for the site."""
import pathlib

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TIMED = ("time_events", "gb.sweep(", "plot_sweep(", "perf_counter")


def code_cells(path):
    return [c for c in nbformat.read(str(path), as_version=4).cells if c.cell_type == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_tags_mark_what_nbval_compares(path):
    for cell in code_cells(path):
        tags = set(cell.metadata.get("tags", []))
        assert "NBVAL" not in cell.source.upper().replace("NBVAL-", ""), "use tags, not comment markers"
        if "assert " in cell.source and "hide-cell" not in tags:  # a folded exercise solution fails
            assert "nbval-check-output" in tags, f"correctness cell not checked:\n{cell.source[:200]}"
        if any(t in cell.source for t in TIMED):
            assert "nbval-ignore-output" in tags, f"timing cell compared by nbval:\n{cell.source[:200]}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_outputs_are_clean(path):
    cells = code_cells(path)
    assert any(c.outputs for c in cells), "no stored outputs: run `make reference` on the GPU"
    for cell in cells:
        for out in cell.outputs:
            assert out.output_type != "error", cell.source[:200]
            assert out.get("name") != "stderr", f"stderr output in:\n{cell.source[:200]}"
            text = out.get("text", "") + str(out.get("data", {}).get("text/plain", ""))
            for noise in ("Traceback (most recent call last)", "CompilerWarning",
                          "RepeatedKernelRetrieval", "warning generated"):
                assert noise not in text, f"{noise!r} in an output of:\n{cell.source[:200]}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_kernels_shown_exist(path):
    import re

    for cell in code_cells(path):
        for rel in re.findall(r'"([\w/]+\.cl)"', cell.source):
            assert (ROOT / "kernels" / rel).exists(), rel


def test_end_chapter_turns_later_cells_into_no_ops():
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("from gpubook.show import end_chapter\nend_chapter('no fp64 here')"),
        nbformat.v4.new_code_cell("undefined_name + 1"),
        nbformat.v4.new_code_cell("print('never')"),
    ])
    NotebookClient(nb, timeout=120).execute()
    first, second, third = (c.outputs for c in nb.cells)
    assert "This chapter ends here: no fp64 here." in first[0]["text"]
    assert second == [] and third == []


def test_end_chapter_raises_outside_a_notebook():
    from gpubook.show import end_chapter

    with pytest.raises(RuntimeError, match="no fp64 here"):
        end_chapter("no fp64 here")


@pytest.mark.parametrize("fp64", [True, False])
def test_nbval_skips_fp64_chapters_only_on_a_device_without_it(tmp_path, monkeypatch, fp64):
    import importlib.util
    from types import SimpleNamespace

    from gpubook import device as devmod

    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    root_conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(root_conftest)
    needs, plain = tmp_path / "08.ipynb", tmp_path / "05.ipynb"
    needs.write_text("gb.chapter_needs_fp64(device)")
    plain.write_text("print(1)")
    items = [SimpleNamespace(fspath=p, marks=[]) for p in (needs, needs, plain)]
    for item in items:
        item.add_marker = item.marks.append
    fake = SimpleNamespace(name="llvmpipe ", double_fp_config=int(fp64), extensions="")
    monkeypatch.setattr(devmod, "choose_device", lambda: fake)
    root_conftest.pytest_collection_modifyitems(None, items)
    skipped = [bool(i.marks) for i in items]
    assert skipped == ([False, False, False] if fp64 else [True, True, False])
    if not fp64:
        assert items[0].marks[0].kwargs["reason"] == "llvmpipe has no fp64 support (cl_khr_fp64)"
