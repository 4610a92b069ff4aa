"""The helper package is laid out like the book: the shared floor in gpubook/,
one package per chapter in gpubook/chapters/<name>/, named as its kernels/<name>/
folder is. Chapters import the floor and never each other; the floor never
imports a chapter; nothing imports in a cycle; no module outgrows 400 lines;
and the code speaks of the book, not of its tracker."""
import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PKG = ROOT / "gpubook"
CHAPTERS = ROOT / "gpubook" / "chapters"
# kernels/ folders that belong to the floor, not to one chapter: chapter 0's copy,
# launch and FMA loops, the tensor cores' mma, and the register tiles of chapters 6, 8, 10
FLOOR_KERNELS = {"device", "tensor", "tiles"}
# chapters whose code reads records or drives other chapters' work without kernels of their own
NO_KERNELS = {"across", "multi"}
MAX_LINES = 400


def module_name(path):
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules():
    return {module_name(p): p for p in PKG.rglob("*.py")}


def imported(path):
    """The gpubook modules a file imports (relative imports resolved), as dotted names."""
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    known = modules()
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            found.add(mod)
            found |= {f"{mod}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {n for n in found if n in known and n != module_name(path)}


def chapter_of(name):
    """'gpubook.chapters.lsq.rows' -> 'lsq'; None for the floor (and the chapters' own __init__)."""
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "chapters" else None


def test_chapters_holds_only_packages():
    loose = [p.name for p in CHAPTERS.glob("*.py") if p.name != "__init__.py"]
    assert not loose, f"modules outside a chapter package: {loose}"
    for folder in CHAPTERS.iterdir():
        if folder.is_dir() and folder.name != "__pycache__":
            assert (folder / "__init__.py").exists(), f"{folder.name} is not a package"
            assert (folder / "figures.py").exists(), f"{folder.name} keeps its figures elsewhere"


def test_every_chapter_kernel_folder_has_its_package():
    kernel_folders = {p.name for p in (ROOT / "kernels").iterdir() if p.is_dir()}
    packages = {p.name for p in CHAPTERS.iterdir() if (p / "__init__.py").exists()}
    assert kernel_folders - FLOOR_KERNELS <= packages
    assert packages - kernel_folders <= NO_KERNELS


def test_the_floor_never_imports_a_chapter():
    for name, path in modules().items():
        if not name.startswith("gpubook.chapters"):
            assert not [m for m in imported(path) if m.startswith("gpubook.chapters")], name


def test_chapters_never_import_each_other():
    for name, path in modules().items():
        mine = chapter_of(name)
        if mine:
            others = {chapter_of(m) for m in imported(path)} - {None, mine}
            assert not others, f"{name} imports chapter(s) {sorted(others)}: share through the floor"


def test_no_import_cycles():
    graph = {name: imported(path) for name, path in modules().items()}
    # a package's __init__ importing its own modules is how it exports them, not a cycle
    for name in graph:
        graph[name] = {m for m in graph[name] if not m.startswith(name + ".")}
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
    assert "gpubook.chapters.multi.lanes" in graph["gpubook.chapters.multi.cluster"]
    assert "gpubook.stream" in graph["gpubook.chapters.multi.covariance"]


@pytest.mark.parametrize("folder", ["gpubook", "tools"])
def test_no_module_over_the_line_limit(folder):
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / folder).rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"over {MAX_LINES} lines, split by what a reader looks for: {long}"


def test_the_code_speaks_of_the_book_not_its_tracker():
    pattern = re.compile(r"\b(issue|ticket)s? #?\d+\b(?!-)", re.IGNORECASE)  # not "issue 16-byte loads"
    files = [p for folder in ("gpubook", "tools", "kernels") for p in (ROOT / folder).rglob("*")
             if p.suffix in {".py", ".cl", ".cu", ".sh"}]
    assert files
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in files for m in pattern.finditer(p.read_text())]
    assert not found, found
