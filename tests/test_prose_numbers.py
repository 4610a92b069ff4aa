"""No measured number typed in the prose.

Every measured figure on a page is glued from the run ({glue:text}`name:.1f`) or
read from a record, so the prose can never disagree with the plots. This scans
every notebook's markdown cells and every page of book/ for numbers followed by
a unit of measurement (GB/s, TFLOP/s, µs, ms, s, %, ×, ...) outside glue roles,
inline code, math and link targets, and fails on each one that the allow-list
(tests/prose_allow.txt: the seeds' published figures and datasheet
specifications, each with whose figure it is) does not cover.

Run it for one page: pytest tests/test_prose_numbers.py -k 03_reduction
"""
import pathlib
import re

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PAGES = sorted((ROOT / "book").glob("*.md"))
ALLOW = ROOT / "tests" / "prose_allow.txt"

SPACE = "[ \u00a0\u2009\u202f]"          # space, no-break space, thin space, narrow no-break space
NUMBER = (r"(?<![\w.,/^\u00b2-\u00b3])"  # not inside a word (H100, float4), a version, 2^28, x²
          r"(?:\d{1,3}(?:(?:,|\u2009|\u202f)\d{3})+|\d+)(?:\.\d+)?")
RATE_UNITS = r"(?:[kKMGTP]i?B/s|[kMGTP]?FLOP/?s|[GT]FLOPS|(?:iterations?|launch(?:es)?|calls?|steps?)/s)"
TIME_UNITS = r"(?:µs|μs|us|ns|ms)"
UNIT = (rf"(?:{SPACE}?(?:{RATE_UNITS}|{TIME_UNITS})(?![\w/])"   # 4,236 GB/s, 20.3 µs, 3ms
        rf"|{SPACE}s(?![\w/])"                                   # 2 s (not the 1990s, not H100s)
        rf"|{SPACE}?%"                                            # 12%, 12 %
        rf"|{SPACE}?×(?!{SPACE}?\d)"                              # 1.8× (not a shape: 16 × 16)
        r"|x(?![\w]))")                                           # 1.8x (not 4x4, not 0x1f)
MEASURED = re.compile(NUMBER + UNIT)

FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,}|:{3,})\s*(?P<info>[^\n]*)\n(?P<body>.*?)^(?P=fence)\s*$",
                   re.M | re.S)
# directives whose body is prose (a figure's caption, a note); any other fence is code or math
PROSE_DIRECTIVES = re.compile(r"\{(?:figure|note|tip|important|warning|caution|attention|admonition|"
                              r"seealso|hint|margin|sidebar|epigraph|topic|dropdown|card|tab-item|glossary)\}")


def _prose_fence(match):
    """Keep the prose of a directive (its body less its :option: lines); drop code and math."""
    if not PROSE_DIRECTIVES.match(match["info"].strip()):
        return "\n"
    body = [line for line in match["body"].split("\n") if not re.match(r"\s*:[\w-]+:", line)]
    return "\n" + clean("\n".join(body)) + "\n"


def clean(text):
    """Markdown -> the prose a reader reads as typed numbers, with whitespace runs kept single."""
    text = re.sub(r"\A---\n.*?\n---\n", "\n", text, flags=re.S)     # a page's front matter
    text = FENCE.sub(_prose_fence, text)
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    text = re.sub(r"\$\$.*?\$\$", " \x00 ", text, flags=re.S)       # display math
    text = re.sub(r"(?<!\\)\$[^$\n]+?(?<!\\)\$", " \x00 ", text)     # inline math
    text = re.sub(r"(`+)(?:(?!\1).)+?\1", " \x00 ", text, flags=re.S)  # inline code, and so every role's target
    text = re.sub(r"\]\([^)\s]*(?:\s+\"[^\"]*\")?\)", "] ", text)     # link targets
    text = re.sub(r"^\s*\[[^\]]+\]:\s*\S+.*$", " ", text, flags=re.M)  # reference-style link targets
    text = re.sub(r"<https?://[^>]*>|https?://\S+", " ", text)      # bare addresses
    text = re.sub(r"<[a-zA-Z/][^>\n]*>", " ", text)                  # HTML tags and their attributes
    text = re.sub(r"^(#{1,6}\s+)(?:Chapter\s+)?\d+(?:\.\d+)*\.?(?=\s)", r"\1", text, flags=re.M)  # headings' numbers
    return re.sub(r"[ \t\n\r]+", " ", text)


def _flat(text):
    """Every kind of space as a plain space, one character for one."""
    return text.translate({0xa0: " ", 0x2009: " ", 0x202f: " "})


def allowed_phrases():
    """(phrase, whose) pairs of the allow-list; each line `phrase  # whose figure`."""
    pairs = []
    for number, line in enumerate(ALLOW.read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        phrase, sep, whose = line.partition("  # ")
        assert sep and whose.strip(), f"prose_allow.txt line {number}: say whose figure after '  # '"
        pairs.append((re.sub(r"\s+", " ", phrase.strip()), whose.strip()))
    return pairs


def typed_numbers(markdown, phrases=()):
    """(number with unit, context) of each measured-looking number in `markdown` that no allowed
    phrase covers."""
    text = clean(markdown)
    flat = _flat(text)     # the same length as text: phrases match whatever space the page typed
    covered = [(m.start(), m.end()) for phrase in phrases for m in re.finditer(re.escape(_flat(phrase)), flat)]
    found = []
    for m in MEASURED.finditer(text):
        if any(s <= m.start() and m.end() <= e for s, e in covered):
            continue
        found.append((m.group(0).strip(), text[max(0, m.start() - 50):m.end() + 30].strip()))
    return found


def markdown_of(path):
    if path.suffix == ".ipynb":
        cells = nbformat.read(str(path), as_version=4).cells
        return [(f"cell {i}", c.source) for i, c in enumerate(cells) if c.cell_type == "markdown"]
    return [("page", path.read_text(encoding="utf-8"))]


@pytest.mark.parametrize("path", NOTEBOOKS + PAGES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_measured_number_typed(path):
    phrases = [p for p, _ in allowed_phrases()]
    bad = [f"{where}: {hit!r} in …{context}…" for where, source in markdown_of(path)
           for hit, context in typed_numbers(source, phrases)]
    assert not bad, (f"{path.relative_to(ROOT)}: glue these from the run ({{glue:text}}`name:.1f`), "
                     "or add a seed's or a datasheet's figure to tests/prose_allow.txt:\n  " + "\n  ".join(bad))


def test_every_allowed_phrase_is_used():
    """An allow-list entry that no page holds any more is stale: remove it."""
    texts = [clean(source) for path in NOTEBOOKS + PAGES for _, source in markdown_of(path)]
    unused = [phrase for phrase, _ in allowed_phrases() if not any(_flat(phrase) in _flat(t) for t in texts)]
    assert not unused, f"prose_allow.txt entries found on no page: {unused}"


def test_allowed_phrases_say_whose_figure():
    for phrase, whose in allowed_phrases():
        assert re.match(r"(seed|datasheet|spec)\b", whose), f"{phrase!r}: whose figure? (seed / datasheet / spec)"
        assert MEASURED.search(phrase), f"{phrase!r} holds no measured-looking number: not needed"


@pytest.mark.parametrize("text, hits", [
    ("chapter 0 measured about 15.6 µs per launch", ["15.6 µs"]),
    ("about 64,000 iterations/s, some 4,145 GB/s", ["64,000 iterations/s", "4,145 GB/s"]),
    ("63.9 TFLOP/s over 4.27\u2009TB/s", ["63.9 TFLOP/s", "4.27\u2009TB/s"]),
    ("reports 1.82× cuBLAS, 1.8x faster, +0.3% and 12 % and 3ms and 2 s",
     ["1.82×", "1.8x", "0.3%", "12 %", "3ms", "2 s"]),
    ("a 16 × 16 tile, 4x4 blocks, address 0x1f, 2^28 floats, the H100 s", []),
    ("ours runs at {glue:text}`gbs:.0f` GB/s, {glue}`speedup`× faster", []),
    ("the code `t = 1.5 ms` and math $2 s$ and $$3 ms$$ say nothing", []),
    ("see [the 5 s figure](https://example.org/a_5_s.png) and <https://x.org/2%>", ["5 s"]),
    ("## 3. Reduction\n\n```python\nprint('3 ms')\n```\n", []),
    ("```{figure} a.png\n:width: 80%\n\nA caption: 7.5 ms per step.\n```", ["7.5 ms"]),
    ("in the 1990s, two H100s, 2.4 s", ["2.4 s"]),
])
def test_scanner_finds_typed_measurements(text, hits):
    found = [hit for hit, _ in typed_numbers(text)]
    assert found == hits


def test_allow_list_covers_a_phrase_only_where_it_stands():
    phrase = ["25× on a Tesla K40"]
    assert typed_numbers("the seed reports 25× on a Tesla K40.", phrase) == []
    assert len(typed_numbers("we measured 25× on the H200.", phrase)) == 1
    assert typed_numbers("within 2\u202fs by default", ["within 2 s by default"]) == []
