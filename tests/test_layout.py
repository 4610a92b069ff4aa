"""The helper package's layout: shared concerns in gpubook/, chapters in
gpubook/chapters/; arrows point from chapters to shared modules only, and the
modules import each other without cycles."""
import ast
import pathlib

import pytest

PKG = pathlib.Path(__file__).resolve().parent.parent / "gpubook"
SHARED = sorted(p.stem for p in PKG.glob("*.py") if p.stem != "__init__")
CHAPTERS = sorted(p.stem for p in (PKG / "chapters").glob("*.py") if p.stem != "__init__")


def imported(path, level_pkg):
    """The gpubook modules a file imports, as 'gpubook.x' or 'gpubook.chapters.x'."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the file's package
                base = level_pkg.split(".")[:len(level_pkg.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names = [mod] if node.module else [f"{mod}.{a.name}" for a in node.names]
            if node.module and node.level:
                names += [f"{mod}.{a.name}" for a in node.names]
            found |= {n for n in names if n.startswith("gpubook")}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("gpubook")}
    modules = {f"gpubook.{m}" for m in SHARED} | {f"gpubook.chapters.{m}" for m in CHAPTERS}
    return {n for n in found if n in modules}


def test_the_two_levels_exist():
    assert {"device", "kernels", "timing", "records", "tiles"} <= set(SHARED)
    assert {"covariance", "lsq", "multi", "cluster", "across"} <= set(CHAPTERS)
    assert not set(SHARED) & set(CHAPTERS)


@pytest.mark.parametrize("name", SHARED)
def test_shared_modules_never_import_chapters(name):
    assert not [m for m in imported(PKG / f"{name}.py", "gpubook") if m.startswith("gpubook.chapters")]


def test_no_import_cycles():
    graph = {f"gpubook.{m}": imported(PKG / f"{m}.py", "gpubook") for m in SHARED}
    graph |= {f"gpubook.chapters.{m}": imported(PKG / "chapters" / f"{m}.py", "gpubook.chapters")
              for m in CHAPTERS}
    state = {}

    def visit(node, path):
        if state.get(node) == "done":
            return
        assert state.get(node) != "open", "import cycle: " + " -> ".join(path + [node])
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            visit(nxt, path + [node])
        state[node] = "done"

    for node in graph:
        visit(node, [])
    assert graph["gpubook.chapters.cluster"] >= {"gpubook.chapters.multi", "gpubook.device"}
