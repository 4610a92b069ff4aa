"""How long each page of the built site is, against the floors of a short page
(GUIDE, "The page": a main line and a "Going further" page).

Over the site that `make book` built (_build/html), for every page of _toc.yml:
- its height in px, in headless Chromium at a 1,280 x 900 window;
- its words of prose: the text of the page's article without code cells (their
  inputs, outputs and toggles), code blocks, figures, tables, the navigation and
  the tables of contents; a margin note is prose and counts, a formula is one word;
- its figures: the images of its article;
- its minutes to read: words / 200 + one per figure.
A page is "Going further" when its TOC part's caption begins "Going further", else
main line. The table ends with the totals of the main line of chapters 0-10 (the
pages under notebooks/).

    .venv/bin/python tools/page_lengths.py [--csv book/data/page_lengths.csv]
    .venv/bin/python tools/page_lengths.py --site SCRATCH   (a copy of the book whose
        _toc.yml lists only the pages at hand, built with jupyter-book build SCRATCH)
"""
import argparse
import csv
import pathlib
import re
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import yaml
from bs4 import BeautifulSoup

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from test_site import HTML, chromium_json, find_chromium, toc_files  # noqa: E402

WINDOW = (1280, 900)
WORDS_PER_MINUTE = 200
GOING_FURTHER = "Going further"
# what is not prose: code cells, code blocks, figures, tables, navigation, scripts
NOT_PROSE = ["div.cell", "div[class*='highlight']", "pre", "figure", "img", "table",
             "nav", "header", "footer", "script", "style", "a.headerlink",
             ".bd-sidebar-primary", ".bd-sidebar-secondary", ".bd-toc", ".prev-next-area"]
HEIGHT = """window.addEventListener('load', () => { setTimeout(() => {
  document.body.setAttribute('data-length', JSON.stringify(
    {height: document.documentElement.scrollHeight}));
}, 500); });"""


def article(html):
    """The page's article (the whole body where it has none), parsed."""
    soup = BeautifulSoup(html, "html.parser")
    return soup.find("article") or soup.body or soup


def prose_words(html):
    """The words of prose of a page's HTML: see the module note."""
    art = article(html)
    for found in art.select(", ".join(NOT_PROSE)):
        found.decompose()
    for math in art.select("span.math, div.math, mjx-container"):
        math.replace_with(" formula ")
    text = art.get_text(" ")
    return sum(1 for w in text.split() if re.search(r"\w", w))


def figures(html):
    """The images of a page's article."""
    return len(article(html).find_all("img"))


def toc_captions(toc_path=None):
    """{page file: caption of its TOC part} (the root page has none)."""
    toc = yaml.safe_load(pathlib.Path(toc_path or ROOT / "_toc.yml").read_text())

    def walk(entries):
        for entry in entries:
            if "file" in entry:
                yield entry["file"]
            yield from walk(entry.get("sections", []))

    return {f: part.get("caption") for part in toc.get("parts", [])
            for f in walk(part.get("chapters", []))}


def is_going_further(caption):
    return bool(caption) and caption.startswith(GOING_FURTHER)


def chapter_of(page):
    """"10" for notebooks/10_multi_gpu, None for a page outside the chapters."""
    found = re.match(r"notebooks/(\d+)_", page)
    return found.group(1) if found else None


def minutes(words, n_figures):
    return words / WORDS_PER_MINUTE + n_figures


def height(page, html_dir=HTML):
    """The page's height in px in headless Chromium at WINDOW."""
    path = pathlib.Path(html_dir) / f"{page}.html"
    probe = path.with_name(f"_length_probe_{path.stem}.html")
    probe.write_text(path.read_text().replace("</body>", f"<script>{HEIGHT}</script></body>", 1))
    with tempfile.TemporaryDirectory() as profile:
        found = chromium_json(probe, "data-length", profile,
                              f"--window-size={WINDOW[0]},{WINDOW[1]}")
    return found["height"]


def measure(page, html_dir=HTML, caption=None, with_height=True):
    """One row of the table for `page` (a TOC file name without its suffix)."""
    html = (pathlib.Path(html_dir) / f"{page}.html").read_text()
    words, n_fig = prose_words(html), figures(html)
    return {"page": page, "chapter": chapter_of(page) or "",
            "line": "going further" if is_going_further(caption) else "main",
            "height_px": height(page, html_dir) if with_height else "",
            "words": words, "figures": n_fig, "minutes": round(minutes(words, n_fig), 1)}


def totals(rows):
    """The main line of chapters 0-10: the row that sums its pages."""
    main = [r for r in rows if r["line"] == "main" and r["chapter"]]
    heights = [r["height_px"] for r in main if r["height_px"] != ""]
    return {"page": "main line, chapters 0-10", "chapter": "", "line": "main",
            "height_px": sum(heights) if heights else "",
            "words": sum(r["words"] for r in main), "figures": sum(r["figures"] for r in main),
            "minutes": round(sum(r["minutes"] for r in main), 1)}


def table(html_dir=HTML, with_height=True, jobs=2, toc_path=None):
    captions = toc_captions(toc_path)
    pages = toc_files() if toc_path is None else list(captions)
    with ThreadPoolExecutor(jobs) as pool:
        rows = list(pool.map(lambda p: measure(p, html_dir, captions.get(p), with_height), pages))
    return rows


FIELDS = ["page", "chapter", "line", "height_px", "words", "figures", "minutes"]
HEADERS = ["page", "chapter", "line", "height (px)", "words", "figures", "minutes"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--csv", help="write the table and its totals to this CSV file")
    parser.add_argument("--no-height", action="store_true", help="skip Chromium (no heights)")
    parser.add_argument("--site", type=pathlib.Path,
                        help="a scratch book (its _toc.yml and _build/html) instead of this one: "
                             "measure a few pages without building the whole book")
    args = parser.parse_args(argv)
    html_dir, toc_path = (HTML, None) if args.site is None else \
        (args.site / "_build" / "html", args.site / "_toc.yml")
    if not (html_dir / "index.html").exists():
        sys.exit(f"no built site in {html_dir}: run `make book` (or jupyter-book build) first")
    with_height = not args.no_height
    if with_height and find_chromium() is None:
        sys.exit("no Chromium installed: pass --no-height for the words and figures only")
    rows = table(html_dir, with_height=with_height, toc_path=toc_path)
    rows.append(totals(rows))
    widths = [max(len(str(r[f])) for r in rows + [dict(zip(FIELDS, FIELDS))]) for f in FIELDS]
    for r in [dict(zip(FIELDS, FIELDS))] + rows:
        print("  ".join(str(r[f]).ljust(w) for f, w in zip(FIELDS, widths)))
    if args.csv:
        with open(args.csv, "w", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(HEADERS)
            writer.writerows([[r[f] for f in FIELDS] for r in rows])


if __name__ == "__main__":
    main()
