"""The floors of a short page on the built site, measured by tools/page_lengths.py: every
main-line page at most 12,000 px high at 1,280 x 900 in Chromium, and each
chapter's "Going further" page linked from its main line. The pages over the floor
today are marked xfail(strict=True): one that gets short fails until its mark is
removed, and a short one must stay short. The prose-word counting is tested on a
small page of its own, everywhere."""
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import page_lengths as pl  # noqa: E402
from test_site import HTML, find_chromium, toc_files  # noqa: E402

MAX_HEIGHT = 12_000
# over MAX_HEIGHT in the build of 2026-11-27 (book/data/page_lengths.csv): shorten the
# page, then remove its line here
OVER_TODAY = {"book/maintainers": 15_028}   # a reference page, not a chapter's main line
built = pytest.mark.skipif(not (HTML / "index.html").exists(),
                           reason="site not built: run `make book` first")
needs_chromium = pytest.mark.skipif(find_chromium() is None,
                                    reason="no Chromium installed (.ci/run installs Debian's chromium)")
CAPTIONS = pl.toc_captions()
MAIN = [p for p in toc_files() if not pl.is_going_further(CAPTIONS.get(p))]
FURTHER = [p for p in toc_files() if pl.is_going_further(CAPTIONS.get(p))]


def floor_param(page):
    if page not in OVER_TODAY:
        return page
    return pytest.param(page, marks=pytest.mark.xfail(
        strict=True, reason=f"{OVER_TODAY[page]:,} px on 2026-11-27: to be cut to a main line and Going further"))


@built
@needs_chromium
@pytest.mark.parametrize("page", [floor_param(p) for p in MAIN])
def test_main_line_page_is_at_most_12000_px(page):
    if not (HTML / f"{page}.html").exists():
        pytest.skip(f"{page} is not built (test_site.py says so)")
    height = pl.height(page)
    assert height <= MAX_HEIGHT, f"{page}: {height:,} px at 1,280 px (at most {MAX_HEIGHT:,})"


def unlinked_going_further(html_dir, pages, captions):
    """The "Going further" pages among `pages` that no main-line page of their
    chapter links to, with why."""
    missing = []
    for page in pages:
        if not pl.is_going_further(captions.get(page)):
            continue
        chapter, target = pl.chapter_of(page), pathlib.Path(page).name + ".html"
        main = [p for p in pages if pl.chapter_of(p) == chapter
                and not pl.is_going_further(captions.get(p))]
        if not main:
            missing.append(f"{page}: no main-line page of chapter {chapter}")
            continue
        texts = [(pathlib.Path(html_dir) / f"{p}.html").read_text() for p in main]
        hrefs = [h for t in texts for h in pl.BeautifulSoup(t, "html.parser")
                 .select("article a[href]")]
        if not any(h["href"].split("#")[0].endswith(target) for h in hrefs):
            missing.append(f"{page}: no link from {', '.join(main)}")
    return missing


@built
@pytest.mark.skipif(not FURTHER, reason="no TOC part's caption begins 'Going further' yet")
def test_every_going_further_page_is_linked_from_its_main_line():
    assert not unlinked_going_further(HTML, toc_files(), CAPTIONS)


# --- everywhere: a small site of its own ------------------------------------------
PAGE = """<html><body><nav class="bd-links"><a href="x.html">Chapter one two</a></nav>
<article class="bd-article"><section><h1>Title words<a class="headerlink" href="#t">#</a></h1>
<aside class="margin sidebar"><p>Margin note</p></aside>
<p>One two three, <em>four</em> <a href="g.html">five</a> <span class="math">\\(x^2\\)</span>.</p>
<div class="cell docutils container"><details><summary>Show code cell source</summary>
<div class="cell_input"><pre>print("not prose")</pre></div></details>
<div class="cell_output"><p>output words here</p><img src="a.png"/></div></div>
<div class="highlight-bash"><pre>make book now</pre></div>
<figure><img src="b.png"/><figcaption>A caption</figcaption></figure>
<table><tr><td>table cell</td></tr></table>
<ul><li>Item — six</li></ul></section></article>
<div class="bd-sidebar-secondary bd-toc">Contents here</div></body></html>"""


def test_prose_words_count_the_article_text_only():
    # Title words / Margin note / One two three, four five formula . / Item six
    assert pl.prose_words(PAGE) == 2 + 2 + 6 + 2
    assert pl.figures(PAGE) == 2
    assert pl.minutes(400, 2) == 4


def test_a_page_without_an_article_counts_its_body():
    assert pl.prose_words("<html><body><p>a b c</p><pre>d e</pre></body></html>") == 3


def test_going_further_is_read_from_the_part_caption(tmp_path):
    toc = tmp_path / "_toc.yml"
    toc.write_text("root: book/intro\nparts:\n  - caption: Chapters\n    chapters:\n"
                   "      - file: notebooks/10_multi_gpu\n"
                   "  - caption: Going further\n    chapters:\n"
                   "      - file: notebooks/10_going_further\n")
    captions = pl.toc_captions(toc)
    assert not pl.is_going_further(captions["notebooks/10_multi_gpu"])
    assert pl.is_going_further(captions["notebooks/10_going_further"])
    assert pl.chapter_of("notebooks/10_going_further") == "10" and pl.chapter_of("book/intro") is None
    site = tmp_path / "html" / "notebooks"
    site.mkdir(parents=True)
    (site / "10_going_further.html").write_text("<article><p>more</p></article>")
    pages = ["notebooks/10_multi_gpu", "notebooks/10_going_further"]
    (site / "10_multi_gpu.html").write_text("<article><p>no link</p></article>")
    assert unlinked_going_further(tmp_path / "html", pages, captions)
    (site / "10_multi_gpu.html").write_text(
        '<article><a href="10_going_further.html#sweeps">the sweeps</a></article>')
    assert not unlinked_going_further(tmp_path / "html", pages, captions)


def test_totals_sum_the_main_line_of_the_chapters():
    rows = [{"page": "notebooks/01_a", "chapter": "01", "line": "main", "height_px": 10,
             "words": 100, "figures": 1, "minutes": 1.5},
            {"page": "notebooks/01_gf", "chapter": "01", "line": "going further",
             "height_px": 99, "words": 999, "figures": 9, "minutes": 9.0},
            {"page": "book/intro", "chapter": "", "line": "main", "height_px": 5,
             "words": 50, "figures": 0, "minutes": 0.25}]
    t = pl.totals(rows)
    assert (t["height_px"], t["words"], t["figures"]) == (10, 100, 1)


@built
def test_the_main_line_of_the_chapters_reads_in_at_most_22000_words():
    """Issue 49's floor for the whole main line, counted on the built site (words of
    prose only, so a GPU pass that fills outputs does not move it)."""
    captions = pl.toc_captions()
    rows = [pl.measure(p, HTML, captions.get(p), with_height=False) for p in toc_files()]
    total = pl.totals(rows)["words"]
    print(f"main line of chapters 0-10: {total:,} words")
    assert total <= 22_000


@built
def test_each_chapters_main_line_reads_in_at_most_25_minutes():
    """Issue 49's floor for one chapter: its main-line pages at 200 words a minute and a
    minute a figure (words of prose and figures only, so the fonts of the machine that
    builds the site do not move it)."""
    captions = pl.toc_captions()
    by_chapter = {}
    for p in toc_files():
        row = pl.measure(p, HTML, captions.get(p), with_height=False)
        if row["line"] == "main" and row["chapter"]:
            by_chapter[row["chapter"]] = by_chapter.get(row["chapter"], 0.0) + pl.minutes(
                row["words"], row["figures"])
    print({c: round(m, 2) for c, m in sorted(by_chapter.items())})
    assert len(by_chapter) == 11
    long = {c: round(m, 2) for c, m in by_chapter.items() if m > 25}
    assert not long, f"chapters whose main line takes more than 25 minutes: {long}"
