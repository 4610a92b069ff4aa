"""The page a reader sees, checked on the notebooks themselves: the idea first (a
figure before any visible code), no bookkeeping or long lines on show, exercises
whose answers fold with their solution, and a closing "What to remember"."""
import pathlib
import re

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# a chapter's "Going further" page holds its depth: it opens with a link back to its main
# line (and, as every page, a figure before any code), and the main line says what to remember
MAIN_LINES = [p for p in CHAPTERS if not p.stem.endswith("_going_further")]
GOING_FURTHER = [p for p in CHAPTERS if p.stem.endswith("_going_further")]
HIDDEN = {"hide-input", "remove-input", "remove-cell", "hide-cell"}
MAX_COLUMNS = 88


def cells(path):
    return nbformat.read(str(path), as_version=4).cells


def tags(cell):
    return set(cell.get("metadata", {}).get("tags", []))


def visible_code(cell):
    return cell.cell_type == "code" and not tags(cell) & HIDDEN


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_the_first_cell_is_the_title_with_a_one_line_way_to_run_it(path):
    first = cells(path)[0]
    assert first.cell_type == "markdown" and first.source.startswith("# "), path.name
    margin = re.search(r"```\{margin\}[^\n]*\n(.*?)\n```", first.source, re.S)
    assert margin, f"{path.name}: no margin note on running the page"
    note = margin.group(1)
    for needed in ("gpubook", f"notebooks/{path.name}", "running.md"):
        assert needed in note, f"{path.name}'s margin note does not say {needed!r}"
    assert len(note) < 300 and "Running this page yourself" not in first.source


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_a_figure_comes_before_any_visible_code(path):
    for cell in cells(path):
        if visible_code(cell):
            pytest.fail(f"{path.name}: visible code before the first figure:\n{cell.source[:200]}")
        if cell.cell_type == "code" and any("image/png" in o.get("data", {}) for o in cell.get("outputs", [])):
            return
    pytest.fail(f"{path.name} has no figure")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_shown_code_fits_the_column(path):
    long = [(i, line) for i, c in enumerate(cells(path)) if c.cell_type == "code" and "remove-input" not in tags(c)
            and "remove-cell" not in tags(c) for line in c.source.splitlines() if len(line) > MAX_COLUMNS]
    assert not long, f"{path.name}: {len(long)} shown lines over {MAX_COLUMNS} columns, e.g. cell {long[0]}"


BOOKKEEPING = re.compile(r"^(_ = )?gb\.(glue|record|show_kernel|show_code|show_diff)\(")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_visible_cell_exists_only_to_glue_record_or_show(path):
    for cell in cells(path):
        if not visible_code(cell):
            continue
        statements = [s for s in re.split(r"\n(?=\S)", cell.source.strip()) if s.strip()]
        assert not all(BOOKKEEPING.match(s) for s in statements), f"{path.name}: bookkeeping on show:\n{cell.source}"


def _last_call(source):
    """The function a cell's last statement calls, where that statement is a bare call."""
    import ast

    try:
        body = ast.parse("\n".join(ln for ln in source.splitlines()
                                    if not ln.lstrip().startswith(("%", "!")))).body
    except SyntaxError:
        return None
    last = body[-1] if body else None
    if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call):
        return ast.unparse(last.value.func)
    return None


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_cell_ends_in_a_call_whose_value_prints_as_a_repr(path):
    """A claim helper returns its Claim and gb.record the path it wrote: a cell ending in
    such a bare call showed "Claim(name=..., relation=...)" or "PosixPath('...')" on the
    page (00_machine's cells 12 and 30, part 8.3's cell 31, run on an H200 on 2026-11-28)."""
    bare = [(i, f) for i, c in enumerate(cells(path)) if c.cell_type == "code"
            for f in [_last_call(c.source)] if f and re.search(r"claims\.|\brecord$", f)
            and not f.endswith(".shown")]
    assert not bare, f"{path.name}: cells ending in a bare call whose value would print: {bare}"


@pytest.mark.parametrize("path", [p for p in CHAPTERS if any("## Exercises" in c.source for c in cells(p))],
                         ids=lambda p: p.stem)
def test_exercise_answers_fold_with_their_solutions(path):
    cs = cells(path)
    start = next(i for i, c in enumerate(cs) if c.cell_type == "markdown" and "## Exercises" in c.source)
    shown = [c.source[:80] for c in cs[start:] if c.cell_type == "markdown" and "*Answer.*" in c.source]
    assert not shown, f"{path.name}: answers in plain view: {shown}"
    solutions = [i for i, c in enumerate(cs) if i > start and c.cell_type == "code"]
    assert solutions and all("hide-cell" in tags(cs[i]) for i in solutions), f"{path.name}: a solution is not folded"
    for i in solutions:  # its answer: gb.answer under its output, or a folded {dropdown} right after it
        after = cs[i + 1].source if i + 1 < len(cs) and cs[i + 1].cell_type == "markdown" else ""
        assert "gb.answer(" in cs[i].source or after.lstrip().startswith(("```{dropdown}", ":::{dropdown}")), \
            f"{path.name}: the solution in cell {i} gives no folded answer"


@pytest.mark.parametrize("path", GOING_FURTHER, ids=lambda p: p.stem)
def test_a_going_further_page_opens_with_a_link_to_its_main_line(path):
    chapter = path.stem.split("_")[0]
    opening = " ".join(c.source for c in cells(path)[:2] if c.cell_type == "markdown")
    assert re.search(rf"(\]\(|<){chapter}_\w+(\.ipynb)?[)>#]", opening), \
        f"{path.name}: its opening does not link to chapter {chapter}'s main line"


@pytest.mark.parametrize("path", MAIN_LINES, ids=lambda p: p.stem)
def test_every_chapter_ends_with_what_to_remember(path):
    found = [c for c in cells(path) if c.cell_type == "markdown" and "## What to remember" in c.source]
    assert found, f"{path.name} has no 'What to remember'"
    text = found[0].source.split("## What to remember", 1)[1].split("\n## ", 1)[0]
    points = [line for line in text.splitlines() if line.lstrip().startswith(("- ", "* ", "1. "))]
    assert 3 <= len(points) <= 5 and "{glue:text}`" in text, f"{path.name}: 3-5 points with glued numbers"


LISTING = re.compile(r"gb\.show_(kernel|diff)\(((?:\s*\"[^\"]+\"\s*,?)+)")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_kernel_listings_and_diffs_fit_the_column(path):
    """Every gb.show_kernel / gb.show_diff a chapter calls prints no line over 88 columns."""
    import gpubook as gb

    for cell in cells(path):
        for kind, args in LISTING.findall(cell.source if cell.cell_type == "code" else ""):
            names = re.findall(r"\"([^\"]+)\"", args)
            md = (gb.show_kernel(names[0]) if kind == "kernel" else gb.show_diff(*names[:2])).data
            code = md.split("```", 1)[-1]
            long = [line for line in code.splitlines() if len(line) > MAX_COLUMNS]
            assert not long, f"{path.name}: show_{kind}{tuple(names)} prints {len(long)} long lines: {long[:2]}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_figures_take_the_book_sizes(path):
    """A figure a notebook draws itself comes from gb.new_figure (gpubook/plot.py: the
    column's or the full width, legible on the site), never from a figsize or font
    size typed by hand."""
    from gpubook.plot import MIN_POINTS

    for i, cell in enumerate(cells(path)):
        if cell.cell_type != "code":
            continue
        assert "figsize=" not in cell.source, f"{path.name}, cell {i}: a figsize by hand; use gb.new_figure"
        small = [float(s) for s in re.findall(r"fontsize=([0-9.]+)", cell.source) if float(s) < MIN_POINTS]
        assert not small, f"{path.name}, cell {i}: font sizes {small} below {MIN_POINTS} pt"
