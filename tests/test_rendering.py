"""Rendering defects on every page of the toc, as a reader sees them in Chromium (the
built site, `make book`), and the Markdown that the package writes for the pages:

- no `$...$` (or `\\(`, `$$`) left unrendered in the prose;
- no literal backtick in prose text (code, kernels and text outputs aside);
- no raw table pipes (`| --- |`, or a paragraph line that starts and ends with `|`);
- no bold span longer than one sentence (a `**` left open makes a whole paragraph bold);
- at a 390 px window (a phone), no text output or code block wider than the column
  without a scroll box of its own, and nothing else (a long inline code) that makes
  the page scroll sideways.

One Chromium process loads every page in turn, at the phone's width, into a frame of
one probe page (tests/test_site.py's flags; it finds Chromium the same way); the page's
script opens every fold and waits for MathJax before it reads the text. The figures'
tick labels are checked where they are drawn (gpubook/plot.py: `overlapping_labels`,
which `check_legible` applies to every figure the figure tests draw).
"""
import json
import os

import pytest

from test_site import HTML, chromium_json, find_chromium, toc_files

PHONE_PX = 390
PAGES = toc_files()

# Pages whose defect of a kind lives in a stored output only (a glued sentence or a
# printed table from before the fix in gpubook/show.py): they pass again once the next
# GPU reference pass stores the fixed text. 08_1 and 08_3 are another engineer's to
# re-run as well.
STALE = "stored output from before the fix; the next GPU reference pass stores the fixed text"
STORED = {
    "math": {"notebooks/02_work_items", "notebooks/03_reduction", "notebooks/04_vector_types",
             "notebooks/02_going_further", "notebooks/04_going_further",
             "notebooks/05_transpose", "notebooks/05_going_further"},
    "backticks": {"notebooks/00_device", "notebooks/00_machine", "notebooks/03_reduction",
                  "notebooks/04_vector_types", "notebooks/04_going_further", "notebooks/05_transpose",
                  "notebooks/05_going_further",
                  "notebooks/08_1_qr_updates",
                  "notebooks/08_3_cholqr2"},
    "pipes": {"notebooks/06_2_out_of_core"},
    "bold": set(),
    "wide": set(),
    "page": set(),
}

PROBE = r"""
const EXCLUDE = 'pre, code, kbd, samp, tt, script, style, textarea, mjx-container, .math, .MathJax, '
  + '.highlight, .cell_input, .headerlink, .visually-hidden, .sr-only';
const BLOCK = 'p, li, td, th, dt, dd, h1, h2, h3, h4, h5, h6, caption, figcaption, summary, div';
const snip = (t, i) => t.slice(Math.max(0, i - 50), i + 50).replace(/\s+/g, ' ');

function check(d) {
  const art = d.querySelector('article') || d.body;
  d.querySelectorAll('details').forEach(x => { x.open = true; });
  // the prose text of each block: its own text nodes, code and math left out
  const blocks = new Map();
  const walk = d.createTreeWalker(art, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const el = n.parentElement;
    if (!el || el.closest(EXCLUDE)) continue;
    const block = el.closest(BLOCK) || art;
    blocks.set(block, (blocks.get(block) || '') + n.nodeValue);
  }
  const found = {math: [], backticks: [], pipes: [], bold: [], wide: [], page: []};
  for (const [block, text] of blocks) {
    let m;
    const math = /\$[^$\s][^$]*?\$|\\\(|\\\[|\$\$/g;
    while ((m = math.exec(text))) found.math.push(snip(text, m.index));
    const tick = text.indexOf('`');
    if (tick >= 0) found.backticks.push(snip(text, tick));
    const rule = text.search(/\|\s*:?-{3,}:?\s*\|/);
    if (rule >= 0) found.pipes.push(snip(text, rule));
    else if (block.matches('p') && text.split('\n').some(l => /^\s*\|.*\|.*\|\s*$/.test(l)))
      found.pipes.push(text.slice(0, 100));
  }
  for (const s of art.querySelectorAll('strong, b')) {
    if (s.closest(EXCLUDE)) continue;
    const text = s.textContent.replace(/^\s*\d+[.)]\s+/, '').replace(/\b(e\.g|i\.e|etc|vs|cf)\./g, '$1');
    if ((text.match(/[.!?](?=\s|$)/g) || []).length > 1) found.bold.push(text.slice(0, 100));
  }
  const right = art.getBoundingClientRect().right;
  const scrolls = e => ['auto', 'scroll', 'hidden'].includes(getComputedStyle(e).overflowX);
  for (const pre of art.querySelectorAll('pre')) {
    if (!pre.getClientRects().length) continue;
    let box = null;
    for (let e = pre; e && e !== art; e = e.parentElement) if (scrolls(e)) { box = e; break; }
    const spills = !box && pre.scrollWidth > pre.clientWidth + 1;
    const past = (box || pre).getBoundingClientRect().right > right + 1;
    if (spills || past) found.wide.push(`${pre.scrollWidth} px in a ${art.clientWidth} px column: `
      + pre.textContent.slice(0, 60).replace(/\s+/g, ' '));
  }
  // and the page itself: nothing outside a scroll box reaches past the window
  const win = d.documentElement.clientWidth;
  if (d.documentElement.scrollWidth > win + 1) {
    for (const e of art.querySelectorAll('*')) {
      const r = e.getBoundingClientRect();
      if (r.width && r.right > win + 1 && !(e.parentElement && e.parentElement.closest('pre, table'))) {
        let inBox = false;
        for (let p = e.parentElement; p && p !== d.body; p = p.parentElement) if (scrolls(p)) { inBox = true; break; }
        if (!inBox) found.page.push(`${e.tagName.toLowerCase()} to ${Math.round(r.right)} px in a ${win} px window: `
          + e.textContent.slice(0, 60).replace(/\s+/g, ' '));
      }
    }
  }
  return found;
}

async function run() {
  const out = {};
  const frame = document.getElementById('frame');
  for (const page of PAGES) {
    await new Promise(done => { frame.onload = done; frame.src = page + '.html'; });
    const w = frame.contentWindow;
    try { if (w.MathJax && w.MathJax.startup) await w.MathJax.startup.promise; } catch (e) {}
    await new Promise(done => setTimeout(done, 200));
    out[page] = check(frame.contentDocument);
  }
  document.body.setAttribute('data-rendering', JSON.stringify(out));
}
run();
"""


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """{page: {kind: [snippets]}} for every toc page, from one Chromium run."""
    if not (HTML / "index.html").exists():
        pytest.skip("site not built: run `make book` first")
    if find_chromium() is None:
        pytest.skip("no Chromium installed (.ci/run installs Debian's chromium)")
    probe = HTML / f"_rendering_probe_{os.getpid()}.html"
    script = PROBE.replace("PAGES", json.dumps(PAGES))
    probe.write_text(f'<html><body><iframe id="frame" style="width:{PHONE_PX}px;height:800px;border:0">'
                     f"</iframe><script>{script}</script></body></html>")
    return chromium_json(probe, "data-rendering", tmp_path_factory.mktemp("chromium"),
                         "--virtual-time-budget=120000", "--allow-file-access-from-files",
                         timeout=180)


def pages(kind):
    """Every toc page, those whose defect of `kind` is in a stored output marked xfail."""
    return [pytest.param(p, marks=pytest.mark.xfail(strict=False, reason=STALE)) if p in STORED[kind] else p
            for p in PAGES]


def defects(rendered, page, kind):
    assert page in rendered, f"{page} was not loaded"
    return rendered[page][kind]


@pytest.mark.parametrize("page", pages("math"))
def test_no_math_left_unrendered(rendered, page):
    found = defects(rendered, page, "math")
    assert not found, f"{page}: {len(found)} raw TeX in the prose (glued text is not parsed), e.g. {found[:3]}"


@pytest.mark.parametrize("page", pages("backticks"))
def test_no_literal_backtick_in_prose(rendered, page):
    found = defects(rendered, page, "backticks")
    assert not found, f"{page}: {len(found)} literal backticks (glued text is not parsed), e.g. {found[:3]}"


@pytest.mark.parametrize("page", pages("pipes"))
def test_no_raw_table_pipes(rendered, page):
    found = defects(rendered, page, "pipes")
    assert not found, f"{page}: a Markdown table shown as text (an unescaped | in a cell?): {found[:2]}"


@pytest.mark.parametrize("page", pages("bold"))
def test_no_bold_span_longer_than_a_sentence(rendered, page):
    found = defects(rendered, page, "bold")
    assert not found, f"{page}: bold over more than one sentence (a ** left open?): {found[:3]}"


@pytest.mark.parametrize("page", pages("wide"))
def test_text_outputs_fit_a_phone_or_scroll_in_their_own_box(rendered, page):
    found = defects(rendered, page, "wide")
    assert not found, f"{page}: at {PHONE_PX} px, text wider than the column with no scroll box: {found[:3]}"


@pytest.mark.parametrize("page", pages("page"))
def test_the_page_does_not_scroll_sideways_on_a_phone(rendered, page):
    found = defects(rendered, page, "page")
    assert not found, f"{page}: at {PHONE_PX} px, the page scrolls sideways: {found[:3]}"


# --- The Markdown the package writes for the pages -----------------------------------

def test_glued_text_carries_no_markdown():
    """{glue:text} pastes its text unparsed: gb.glue stores sentences without $, backticks or *."""
    from gpubook.show import plain_text

    assert plain_text("from $N$ = 256 to 1,024") == "from N = 256 to 1,024"
    assert plain_text("whatever $J$ (reading `X` would limit it)") == "whatever J (reading X would limit it)"
    assert plain_text("at $2^{24}$ rows, $a \\times b$") == "at 2^24 rows, a × b"
    assert plain_text("8 times *slower*, **twice** as fast; 3 * 4") == "8 times slower, twice as fast; 3 * 4"
    assert plain_text("it costs $5 and $6") == "it costs $5 and $6"   # no math for MyST either


def test_glue_stores_the_plain_sentence(monkeypatch):
    from IPython import display as ipd

    from gpubook import show

    shown = []
    monkeypatch.setattr(ipd, "display", lambda obj, **kw: shown.append(obj))
    show.glue(sentence="one `float4` load at $N$ = 8", number=3)
    assert [next(iter(o.values())) for o in shown] == ["one float4 load at N = 8", "3.0"]


def test_a_table_cell_with_pipes_stays_one_cell():
    """6.2's "|cos|" column: markdown_table escapes the pipes, so the table stays a table."""
    from markdown_it import MarkdownIt

    from gpubook.show import markdown_table

    md = markdown_table([["component", "|cos| with planted direction"], [1, "0.99996"]]).data
    assert "\\|cos\\|" in md
    page = MarkdownIt("commonmark").enable("table").render(md)
    assert page.count("<th>") == 2 and "<table>" in page and "|---" not in page


def test_overlapping_tick_labels_are_found_and_fitted():
    import gpubook.plot as gp

    labels = ["naive", "symmetric", "local_tiles", "register_tiles", "NumPy (host)", "cuBLAS SSYRK", "cuBLAS GEMM"]
    fig, ax = gp.new_figure()
    ax.bar(range(len(labels)), [1.0] * len(labels))
    ax.set_xticks(range(len(labels)), labels)
    crowded = gp.overlapping_labels(ax)
    assert ("register_tiles", "NumPy (host)") in crowded
    try:
        gp.check_legible(fig)
    except AssertionError as err:
        assert "tick labels overlap" in str(err)
    else:
        pytest.fail("check_legible passed a figure whose tick labels overlap")
    assert gp.fit_tick_labels(ax) == [] and gp.overlapping_labels(ax) == []
    gp.check_legible(fig)
    # a turned label is measured turned: 40 degrees, anchored at its tick, fits
    ax.set_xticks(range(len(labels)), labels, rotation=40, ha="right", rotation_mode="anchor")
    assert gp.overlapping_labels(ax) == []
    import matplotlib.pyplot as plt
    plt.close(fig)


def test_long_diffs_fold_and_wrapped_comments_stay_comments():
    """show_diff folds a diff over FOLD_DIFF_LINES lines (mostly a rewrite), saying so
    outside the fold; show.fit carries a trailing comment on as a comment (chapter 10's
    listing showed the half of one as code, 2026-11-28)."""
    import gpubook as gb
    from gpubook.kernels import FOLD_DIFF_LINES
    from gpubook.show import fit

    long = gb.show_diff("lsq/1_sequential.cl", "lsq/2_row_group.cl").data
    assert long.startswith("What changed from") and "folded below" in long.split("\n")[0]
    assert ":::{dropdown} The diff, " in long and long.rstrip().endswith(":::")
    short = gb.show_diff("covariance/naive.cl", "covariance/symmetric.cl").data
    assert "dropdown" not in short and short.count("\n") <= FOLD_DIFF_LINES + 6
    wrapped = fit(["        except Exception as err:  # noqa: BLE001 - any failure of this device: "
                   "the others take its blocks"], 60)
    assert len(wrapped) > 1 and all(ln.startswith("        # ") for ln in wrapped[1:])
    code = fit(["    x = f(aaaa, bbbb, cccc, dddd, eeee, ffff, gggg, hhhh, iiii)  # tail"], 50)
    assert code[1].startswith("            g") and code[-1].endswith("# tail")   # code goes on as code
