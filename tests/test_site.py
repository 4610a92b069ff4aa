"""Checks of the built site (after `make book`): pages, images, clean outputs,
and chapters 0 and 9 rendered in headless Chromium with their images loaded."""
import hashlib
import html as html_lib
import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
pytestmark = pytest.mark.skipif(not (HTML / "index.html").exists(),
                                reason="site not built: run `make book` first")


def toc_files():
    """Every page of the toc, sections (a split chapter's parts) included, in order."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())

    def walk(entries):
        for entry in entries:
            if "file" in entry:
                yield entry["file"]
            yield from walk(entry.get("sections", []))

    return [toc["root"]] + [f for part in toc.get("parts", []) for f in walk(part.get("chapters", []))]


def test_every_toc_page_was_built():
    for f in toc_files():
        assert (HTML / f"{f}.html").exists(), f


@pytest.mark.parametrize("page", toc_files())
def test_page_images_exist_and_outputs_are_clean(page):
    path = HTML / f"{page}.html"
    html = path.read_text()
    digests = []
    for src in re.findall(r'<img[^>]+src="([^"]+)"', html):
        if src.startswith(("http:", "https:", "data:")):
            continue
        img = (path.parent / src).resolve()
        assert img.exists(), f"{page}: missing image {src}"
        digests.append(hashlib.sha256(img.read_bytes()).hexdigest())
    figures = [d for d in digests if d]
    assert len(figures) == len(set(figures)), f"{page}: a figure appears twice"
    assert "Traceback (most recent call last)" not in html
    assert "output stderr" not in html, f"{page}: shows a stderr output"
    # A warning as Python prints it ("CompilerWarning: ..."), not the name in code.
    assert "CompilerWarning:" not in html and "RepeatedKernelRetrieval:" not in html


def site_config():
    """The configuration `make book` built with (tools/set_repository.py --site-config)."""
    built = ROOT / "_build" / "site_config.yml"
    return yaml.safe_load((built if built.exists() else ROOT / "_config.yml").read_text())


def repository_url():
    return site_config()["repository"]["url"]


def buttons_on():
    html = site_config().get("html", {})
    return html.get("use_repository_button", False) and html.get("use_issues_button", False)


def test_a_local_build_has_no_dead_button():
    """Where _config.yml keeps its placeholder and the clone has no GitHub remote, the
    site is built without the buttons; with a GitHub remote they link to it."""
    import sys
    sys.path.insert(0, str(ROOT / "tools"))
    import set_repository as sr

    assert "OWNER/REPOSITORY" not in repository_url() or not buttons_on()
    assert sr.github_address("git@github.com:me/book.git") == "https://github.com/me/book"
    assert sr.github_address("/srv/clones/book") is None


def source_buttons(html):
    """The hrefs of the page's repository and issues buttons, by kind."""
    found = {}
    for href, kind in re.findall(r'<a href="([^"]+)"[^>]*?class="[^"]*btn-source-(repository|issues)-button', html):
        found.setdefault(kind, []).append(href.replace("&amp;", "&"))
    return found


@pytest.mark.parametrize("page", toc_files())
def test_page_has_the_repository_and_issues_buttons(page):
    url = repository_url()
    buttons = source_buttons((HTML / f"{page}.html").read_text())
    if not buttons_on():
        assert not buttons, f"{page}: buttons shown though the build left them out: {buttons}"
        return
    assert buttons.get("repository") == [url], f"{page}: repository button {buttons.get('repository')}, not {url}"
    issues = buttons.get("issues", [])
    assert len(issues) == 1 and issues[0].startswith(f"{url}/issues/new?"), f"{page}: issues button {issues}"


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


# page: the fewest plots it must show (chapter 0's limits; chapter 8's sweep and
# time bars, in its part 8.1; chapter 9's "how far each step got")
RENDERED = {"00_device": 3, "08_1_qr_updates": 2, "09_across_devices": 1}


@pytest.mark.skipif(find_chromium() is None, reason="no Chromium installed (.ci/run installs Debian's chromium)")
@pytest.mark.parametrize("name", sorted(RENDERED))
def test_chapter_renders_with_images_loaded(tmp_path, name):
    page = HTML / "notebooks" / f"{name}.html"
    probe = page.with_name("_render_probe.html")
    script = """<script>window.addEventListener('load', () => {
      const imgs = [...document.images].filter(i => i.closest('.cell_output'));
      const bad = imgs.filter(i => !(i.complete && i.naturalWidth > 0)).length;
      document.body.setAttribute('data-images', imgs.length + ':' + bad);
    });</script></body>"""
    probe.write_text(page.read_text().replace("</body>", script, 1))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000"]
    try:
        dom = subprocess.run([find_chromium(), *flags, "--dump-dom", probe.as_uri()],
                             capture_output=True, text=True, timeout=120).stdout
        shot = ROOT / "_build" / "screenshots"
        shot.mkdir(parents=True, exist_ok=True)
        subprocess.run([find_chromium(), *flags, "--window-size=1200,3000",
                        f"--screenshot={shot / f'{name}.png'}", page.as_uri()],
                       capture_output=True, timeout=120)
    finally:
        probe.unlink()
    found = re.search(r'data-images="(\d+):(\d+)"', dom)
    assert found, "the page's load handler did not run"
    total, broken = map(int, found.groups())
    assert total >= RENDERED[name], f"expected {name}'s plots, found {total} output images"
    assert broken == 0, f"{broken} of {total} images failed to load"


CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--virtual-time-budget=10000"]


def probe_page(page, script, attribute, tmp_path):
    """Load a copy of a built page with `script` in Chromium; the JSON that the script
    wrote into the body's `attribute`, or a failed test when it wrote nothing."""
    probe = page.with_name(f"_{attribute}_probe.html")
    probe.write_text(page.read_text().replace("</body>", f"<script>{script}</script></body>", 1))
    return chromium_json(probe, attribute, tmp_path / "profile")


def chromium_json(probe, attribute, profile, *flags, timeout=120):
    """Load the file `probe` in headless Chromium (then delete it); the JSON that its
    script wrote into the body's `attribute`, or a failed test when it wrote nothing.
    Chromium runs a second time where the first wrote nothing or ran past `timeout` (a
    loaded CI machine); the failure names Chromium's exit and the end of its stderr."""
    why = ""
    try:
        for attempt in range(2):
            try:
                run = subprocess.run([find_chromium(), *CHROMIUM_FLAGS, *flags,
                                      f"--user-data-dir={pathlib.Path(profile) / str(attempt)}",
                                      "--dump-dom", probe.as_uri()], capture_output=True, text=True,
                                     timeout=timeout)
            except subprocess.TimeoutExpired:
                why = f"Chromium ran past {timeout} s"
                continue
            found = re.search(rf'{attribute}="([^"]+)"', run.stdout)
            if found:
                return json.loads(html_lib.unescape(found.group(1)))
            why = f"Chromium exited {run.returncode}: {run.stderr[-300:]}"
    finally:
        probe.unlink()
    raise AssertionError(f"the probe page's script wrote no {attribute}, twice ({why})")


SHOWN = "const shown = e => !!e && e.getClientRects().length > 0 && e.getBoundingClientRect().width > 0;"


@pytest.mark.skipif(find_chromium() is None, reason="no Chromium installed (.ci/run installs Debian's chromium)")
def test_repository_button_opens_and_links_to_the_repository(tmp_path):
    """Chapter 3 in Chromium: the source button is shown, a click opens its menu, and
    the menu's repository entry is visible and links to _config.yml's repository."""
    if not buttons_on():
        pytest.skip("this build has no repository buttons (no GitHub remote, no url in _config.yml)")
    script = SHOWN + """window.addEventListener('load', () => {
      const toggle = document.querySelector('.dropdown-source-buttons > button');
      const link = document.querySelector('a.btn-source-repository-button');
      const before = shown(link);
      if (toggle) toggle.click();
      setTimeout(() => document.body.setAttribute('data-button', JSON.stringify({
        toggle: shown(toggle), before: before, after: shown(link), href: link ? link.href : null})), 500);
    });"""
    state = probe_page(HTML / "notebooks" / "03_reduction.html", script, "data-button", tmp_path)
    assert state["toggle"], "the source button is not shown"
    assert not state["before"] and state["after"], f"the menu did not open on a click: {state}"
    assert state["href"] == repository_url(), state


@pytest.mark.skipif(find_chromium() is None, reason="no Chromium installed (.ci/run installs Debian's chromium)")
def test_an_exercise_solution_opens_on_a_click(tmp_path):
    """Chapter 3's first exercise (on its Going-further page) in Chromium: its solution (code, output and answer,
    one folded cell) is hidden under a toggle after the 'Exercises' heading, and a
    click on the toggle shows it."""
    script = SHOWN + """window.addEventListener('load', () => {
      const heading = [...document.querySelectorAll('h2')].find(h => h.textContent.includes('Exercises'));
      const section = heading ? heading.closest('section') : null;
      const box = section ? section.querySelector('.tag_hide-cell details, .tag_hide-input details') : null;
      const code = box ? box.querySelector('.cell_input pre') : null;
      // a closed <details> keeps its content laid out but not rendered: ask the browser
      const seen = e => !!e && e.checkVisibility({contentVisibilityAuto: true}) && shown(e);
      const before = [box && box.open, seen(code)];
      if (box) box.querySelector('summary').click();
      setTimeout(() => document.body.setAttribute('data-toggle', JSON.stringify({
        section: !!section, toggle: !!box, before: before.some(Boolean), after: box.open && seen(code)})), 500);
    });"""
    state = probe_page(HTML / "notebooks" / "03_going_further.html", script, "data-toggle", tmp_path)
    assert state["section"] and state["toggle"], f"no exercise with a toggled solution: {state}"
    assert not state["before"] and state["after"], f"the solution did not open on a click: {state}"


@pytest.mark.skipif(find_chromium() is None, reason="no Chromium installed (.ci/run installs Debian's chromium)")
def test_math_renders_without_a_network(tmp_path):
    """Chapter 6 with every host name unresolvable: MathJax must come with the
    site, typeset every formula, and leave no raw TeX in the page's text."""
    page = HTML / "notebooks" / "06_1_covariance.html"
    assert "_static/mathjax/tex-chtml.js" in page.read_text(), "MathJax is not served from the site"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run",
             "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=20000"]
    dom = subprocess.run([find_chromium(), *flags, "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    assert dom.count("<mjx-container") >= 10, "MathJax typeset no formulas"
    text = re.sub(r"<(script|style)\b.*?</\1>", "", dom, flags=re.S)
    text = re.sub(r"<mjx-container\b.*?</mjx-container>", "", text, flags=re.S)
    text = re.sub(r"<[^>]+>", "", text)
    for raw in ("\\(", "\\[", "$$"):
        assert raw not in text, f"raw TeX {raw!r} left in the rendered page"


# --- The page as a reader sees it at a 1,280 px window (GUIDE, "The page") -----------
# Every chapter page of the toc (split chapters are covered as the toc lists them).
# Limits: gpubook/plot.py (figures), gpubook/show.py (88 columns).
WINDOW = (1280, 900)
MIN_SCALE, MIN_SCALE_FULL = 0.7, 0.5
MAX_COLUMNS = 88
MAX_HEIGHT = 25_000
CHAPTER_PAGES = [f for f in toc_files() if f.startswith("notebooks/")]

MEASURE = SHOWN + """window.addEventListener('load', () => { setTimeout(() => {
  const seen = e => !!e && e.checkVisibility({contentVisibilityAuto: true}) && shown(e);
  const imgs = [...document.querySelectorAll('.cell_output img')].map(i => ({
    src: i.getAttribute('src'), natural: i.naturalWidth, shown: i.getBoundingClientRect().width,
    full: !!i.closest('.full-width, .tag_full-width, .tag_full_width'),
    zoom: !!i.closest('a') && i.closest('a').href === i.src}));
  const code = [...document.querySelectorAll('.cell_input pre, .cell_output div[class*="highlight-"] pre')]
    .filter(p => !p.closest('[class*="highlight-myst-ansi"], [class*="highlight-none"]'));
  const long = code.flatMap(p => p.textContent.split('\\n')).filter(l => l.length > %d)
    .map(l => l.length + ': ' + l.slice(0, 60));
  const article = document.querySelector('article') || document.body;
  const right = article.getBoundingClientRect().right;
  const scrolls = e => { for (; e && e !== article; e = e.parentElement) {
    if (['auto', 'scroll'].includes(getComputedStyle(e).overflowX)) return true; } return false; };
  const tables = [...article.querySelectorAll('table')].filter(t => shown(t))
    .filter(t => t.getBoundingClientRect().right > right + 1 && !scrolls(t.parentElement))
    .map(t => t.innerText.slice(0, 60));
  const firstImg = document.querySelector('.cell_output img');
  const firstCode = [...document.querySelectorAll('.cell .cell_input')].find(seen);
  const before = !!firstImg && (!firstCode ||
    !!(firstImg.compareDocumentPosition(firstCode) & Node.DOCUMENT_POSITION_FOLLOWING));
  document.body.setAttribute('data-page', JSON.stringify({imgs: imgs, long: long, tables: tables,
    height: document.documentElement.scrollHeight, figure_first: before,
    first_code: firstCode ? firstCode.innerText.slice(0, 80) : null}));
}, 500); });""" % MAX_COLUMNS

_measured = {}


def measured(page, tmp_path_factory):
    """The page's measurements in Chromium at WINDOW, once per page."""
    path = HTML / f"{page}.html"
    if not path.exists():
        pytest.skip(f"{page} is not built (test_every_toc_page_was_built says so)")
    if page not in _measured:
        probe = path.with_name(f"_page_probe_{os.getpid()}.html")   # one a worker (xdist)
        probe.write_text(path.read_text().replace("</body>", f"<script>{MEASURE}</script></body>", 1))
        _measured[page] = chromium_json(probe, "data-page", tmp_path_factory.mktemp("chromium"),
                                        f"--window-size={WINDOW[0]},{WINDOW[1]}")
    return _measured[page]


needs_chromium = pytest.mark.skipif(find_chromium() is None,
                                    reason="no Chromium installed (.ci/run installs Debian's chromium)")


@needs_chromium
@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_figures_are_shown_near_their_natural_width(page, tmp_path_factory):
    """No output figure shrinks below 70% of its natural width (50% in a full-width
    cell): a figure drawn at gpubook.plot's sizes keeps its text >= 9 CSS px. Each
    opens at full size on a tap."""
    imgs = measured(page, tmp_path_factory)["imgs"]
    small = [f"{i['src']}: {i['shown']:.0f} of {i['natural']} px" for i in imgs
             if i["natural"] and i["shown"] / i["natural"] < (MIN_SCALE_FULL if i["full"] else MIN_SCALE)]
    assert not small, f"{page}: {len(small)} figures shown too small, e.g. {small[:3]}"
    # on a phone a tap opens the figure at full size (_static/gpubook.js)
    unlinked = [i["src"] for i in imgs if not i["zoom"]]
    assert not unlinked, f"{page}: figures without a link to their file: {unlinked[:3]}"


@needs_chromium
@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_shown_code_fits_88_columns_and_tables_fit_or_scroll(page, tmp_path_factory):
    m = measured(page, tmp_path_factory)
    assert not m["long"], f"{page}: {len(m['long'])} code lines over {MAX_COLUMNS} columns: {m['long'][:3]}"
    assert not m["tables"], f"{page}: tables wider than the column outside a scroll box: {m['tables'][:3]}"


@needs_chromium
@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_page_is_not_too_long(page, tmp_path_factory):
    height = measured(page, tmp_path_factory)["height"]
    assert height <= MAX_HEIGHT, f"{page}: {height} px high at {WINDOW[0]} px (at most {MAX_HEIGHT}): split it"


@needs_chromium
@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_first_screen_shows_a_figure_before_any_code(page, tmp_path_factory):
    m = measured(page, tmp_path_factory)
    assert m["figure_first"], f"{page}: visible code before the first figure: {m['first_code']!r}"


# --- Figures on a phone (issue 49, item 4) -----------------------------------------
# At a 390 px window a figure is shown no narrower than its smallest text allows: text
# drawn at gpubook.plot's MIN_POINTS points, saved at its DPI, is at least PHONE_MIN_CSS_PX
# CSS px as shown (points * DPI / 72 natural px, times shown / natural width). A figure
# wider than the column scrolls sideways in its own box (_static/gpubook.css and .js),
# as wide tables do; a tap still opens it at full size.
PHONE_PX = 390
PHONE_MIN_CSS_PX = 7

PHONE_FIGURES = SHOWN + r"""
function figures(d) {
  const art = d.querySelector('article') || d.body;
  const right = art.getBoundingClientRect().right;
  const scrolls = e => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
  return [...art.querySelectorAll('.cell_output img')].filter(shown).map(i => {
    let box = null;
    for (let e = i.parentElement; e && e !== art; e = e.parentElement) if (scrolls(e)) { box = e; break; }
    const r = i.getBoundingClientRect();
    const link = i.closest('a');
    return {src: i.getAttribute('src').split('/').pop().slice(0, 16), natural: i.naturalWidth,
            shown: r.width, past: r.right > right + 1, column: Math.round(art.clientWidth),
            box: box ? {right: box.getBoundingClientRect().right > right + 1,
                        scrolls: box.scrollWidth > box.clientWidth} : null,
            zoom: !!link && link.href === i.src};
  });
}
async function run() {
  const out = {};
  const frame = document.getElementById('frame');
  for (const page of PAGES) {
    await new Promise(done => { frame.onload = done; frame.src = page + '.html'; });
    await new Promise(done => setTimeout(done, 200));
    out[page] = figures(frame.contentDocument);
  }
  document.body.setAttribute('data-phone', JSON.stringify(out));
}
run();
"""

_phone = {}


def phone_figures(tmp_path_factory):
    """{page: [figure]} for every toc page in one Chromium run, each page in a frame
    PHONE_PX wide (a phone's window: the page's media queries see its width)."""
    if not _phone:
        probe = HTML / f"_phone_probe_{os.getpid()}.html"
        script = PHONE_FIGURES.replace("PAGES", json.dumps(toc_files()))
        probe.write_text(f'<html><body style="margin:0"><iframe id="frame" '
                         f'style="width:{PHONE_PX}px;height:800px;border:0"></iframe>'
                         f"<script>{script}</script></body></html>")
        _phone.update(chromium_json(probe, "data-phone", tmp_path_factory.mktemp("chromium"),
                                    "--virtual-time-budget=120000", "--allow-file-access-from-files",
                                    timeout=180))
    return _phone


def smallest_text_css_px(shown, natural):
    """The smallest text of a figure shown `shown` CSS px wide, `natural` px wide as
    stored: gpubook.plot's MIN_POINTS at its DPI, scaled as shown."""
    from gpubook.plot import DPI, MIN_POINTS

    return MIN_POINTS * DPI / 72 * shown / natural


@needs_chromium
@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_figures_are_legible_on_a_phone_and_scroll_in_their_own_box(page, tmp_path_factory):
    """At a 390 px window every output figure's smallest text is at least 7 CSS px; one
    wider than the column scrolls inside its own box (not the page), and opens at full
    size on a tap."""
    found = phone_figures(tmp_path_factory)
    assert page in found, f"{page} was not loaded"
    imgs = found[page]
    assert all(i["natural"] for i in imgs), f"{page}: figures that did not load: {imgs}"
    small = [f"{i['src']}: {smallest_text_css_px(i['shown'], i['natural']):.1f} CSS px "
             f"({i['shown']:.0f} of {i['natural']} px)" for i in imgs
             if smallest_text_css_px(i["shown"], i["natural"]) < PHONE_MIN_CSS_PX]
    assert not small, (f"{page}: at {PHONE_PX} px, {len(small)} figures with text below "
                       f"{PHONE_MIN_CSS_PX} CSS px, e.g. {small[:3]}")
    spill = [f"{i['src']}: {i['shown']:.0f} px in a {i['column']} px column, box {i['box']}" for i in imgs
             if i["past"] and not (i["box"] and i["box"]["scrolls"] and not i["box"]["right"])]
    assert not spill, f"{page}: at {PHONE_PX} px, figures wider than the column without a scroll box: {spill[:3]}"
    unlinked = [i["src"] for i in imgs if not i["zoom"]]
    assert not unlinked, f"{page}: figures without a link to their file: {unlinked[:3]}"


def test_page_script_uses_the_plot_styles_constants():
    """_static/gpubook.js repeats gpubook/plot.py's figure constants (a page script
    cannot import them), and the phone's 7 CSS px of the test above: they must agree."""
    import gpubook.plot as gp

    script = (ROOT / "_static" / "gpubook.js").read_text()
    found = dict(re.findall(r"\b(COLUMN_PX|MIN_SCALE|DPI|MIN_POINTS|PHONE_CSS_PX) = ([\d.]+)", script))
    want = {"COLUMN_PX": gp.COLUMN_PX, "MIN_SCALE": gp.MIN_SCALE, "DPI": gp.DPI,
            "MIN_POINTS": gp.MIN_POINTS, "PHONE_CSS_PX": PHONE_MIN_CSS_PX}
    assert {k: float(v) for k, v in found.items()} == {k: float(v) for k, v in want.items()}, found
