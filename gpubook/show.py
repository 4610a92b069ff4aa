"""What the page shows as Markdown: small tables, the package's host code, glued numbers."""
import re

from .paths import ROOT


def markdown_table(rows, header=True):
    """Rows of cells as a Markdown table (first row the header)."""
    from IPython.display import Markdown

    rows = [[_cell(c) for c in row] for row in rows]
    if not header:
        rows = [["", ""][:len(rows[0])]] + rows
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return Markdown("\n".join(lines))


def counted(n, noun, plural=None):
    """"1 device", "2 devices", "0 devices": a count with its noun, plural unless
    it is exactly one (`plural` for a noun that takes more than an s)."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def folded(body, title):
    """Markdown (a Markdown object or text) in a dropdown the reader opens: a table or
    a listing that supports the page's point without being it. The page's own
    sentences stay outside it."""
    from IPython.display import Markdown

    text = body.data if hasattr(body, "data") else str(body)
    return Markdown(f":::{{dropdown}} {title}\n\n{text}\n\n:::\n")


def _cell(value):
    """A table cell's text with its pipes escaped: an unescaped `|` (as in "|cos|")
    ends the cell, and a row with too many cells turns the table into raw text."""
    return re.sub(r"(?<!\\)\|", r"\\|", str(value))


COLUMNS = 88  # shown code never prints a longer line


def fit(lines, width=COLUMNS, prefix=""):
    """Lines of code wrapped to `width` columns for the page: a longer line breaks
    after the last ", " that fits (else the last "(", else the last space), and
    goes on indented 8 columns deeper than it started; a line whose first
    character is in `prefix` (a diff's "+- ") keeps it on its continuation
    lines. A break inside a trailing comment goes on as a comment at the line's
    own indent. A line with none of them to break at stays whole."""
    out = []
    for line in lines:
        lead = line[:1] if prefix and line[:1] and line[:1] in prefix else ""
        own = lead + " " * (len(line) - len(line[len(lead):].lstrip(" ")))
        indent = own + " " * 8
        comment = line.find("# ") if line[len(own):].startswith("# ") else line.find("  # ")
        while len(line) > width:
            cuts = (line.rfind(", ", len(indent), width - 1) + 1, line.rfind("(", len(indent), width) + 1,
                    line.rfind(" ", len(indent), width))
            cut = next((c for c in cuts if c > len(indent)), None)
            if cut is None:
                break
            out.append(line[:cut].rstrip())
            if 0 <= comment < cut:   # the rest is comment: it stays one
                line, comment = own + "# " + line[cut:].lstrip(), len(own)
            else:
                line = indent + line[cut:].lstrip()
        out.append(line)
    return out


def _code_lines(obj):
    """(path relative to the repository, qualified name, dedented source lines) of obj."""
    import inspect
    import textwrap
    from pathlib import Path

    target = inspect.unwrap(obj.fget if isinstance(obj, property) else obj)
    target = getattr(target, "__func__", target)
    if not (inspect.isroutine(target) or inspect.isclass(target) or inspect.ismodule(target)):
        raise TypeError(f"show_code shows a function, method, class or module, not {type(obj).__name__}")
    try:
        lines, _ = inspect.getsourcelines(target)
        path = Path(inspect.getsourcefile(target)).resolve()
    except (OSError, TypeError) as err:
        raise ValueError(f"no Python source for {obj!r}: {err}") from None
    try:
        where = path.relative_to(ROOT).as_posix()
    except ValueError:
        where = path.name
    name = getattr(target, "__qualname__", getattr(target, "__name__", ""))
    return where, name, textwrap.dedent("".join(lines)).rstrip("\n").split("\n")


def _pick(lines, start, end, what):
    """Lines from the first containing `start` to the first later one containing `end`."""
    if start is None:
        if end is not None:
            raise ValueError("end needs a start")
        return lines
    first = next((i for i, line in enumerate(lines) if start in line), None)
    if first is None:
        raise ValueError(f"no line of {what} contains {start!r}")
    last = len(lines) - 1
    if end is not None:
        last = next((i for i in range(first, len(lines)) if end in lines[i]), None)
        if last is None:
            raise ValueError(f"no line of {what} after {start!r} contains {end!r}")
    return lines[first:last + 1]


def show_code(obj, start=None, end=None):
    """Show the Python source of a package function or method in the page.

    The host code that enqueues a kernel (its global and local sizes, its
    arguments and events) lives in the package; this displays it, read from the
    package itself, as a highlighted Python block whose first line says where it
    lives, e.g. `gpubook/chapters/scan.py`, `DeviceScan.enqueue`. start/end pick
    lines as show_kernel does: from the first line containing `start` up to and
    including the first later line containing `end`. Lines longer than 88 columns
    (the package's own limit is wider) are wrapped for the page (`fit`).
    """
    from IPython.display import Markdown

    where, name, lines = _code_lines(obj)
    lines = fit(_pick(lines, start, end, name or where))
    head = f"`{where}`, `{name}`" if name else f"`{where}`"
    return Markdown(head + "\n\n```python\n" + "\n".join(lines) + "\n```")


GLUE_PREFIX = "application/papermill.record/"


def glue(**values):
    """Store numbers for the page's prose without showing them.

    The book's Markdown cites them as {glue:text}`name:.0f`: myst-nb reads the
    hidden output this writes, so prose numbers always come from the same run as
    the plots. (The same output format as myst_nb.glue, without importing it.)
    {glue:text} pastes its text as it is, unparsed: a string value is stored as
    `plain_text` makes it, without Markdown that would show as raw `$`, backticks
    or asterisks.
    """
    import numbers

    from IPython.display import display

    for name, value in values.items():
        text = repr(float(value)) if isinstance(value, numbers.Real) else plain_text(str(value))
        display({GLUE_PREFIX + "text/plain": text}, raw=True,
                metadata={"scrapbook": {"name": name, "mime_prefix": GLUE_PREFIX}})


TEX = {r"\times": "×", r"\cdot": "·", r"\le": "≤", r"\leq": "≤", r"\ge": "≥", r"\geq": "≥",
       r"\approx": "≈", r"\ne": "≠", r"\log": "log", r"\,": "\u2009", r"\;": " ", r"\ ": " "}


def _plain_math(tex):
    """Inline TeX as text: the symbols of TEX, braces dropped ("2^{24}" -> "2^24")."""
    for command, text in sorted(TEX.items(), key=lambda kv: -len(kv[0])):
        tex = re.sub(re.escape(command) + r"(?![A-Za-z])", text, tex)
    return tex.replace("{", "").replace("}", "")


def plain_text(text):
    """Markdown's inline marks taken out of a sentence, for {glue:text}, which pastes
    text unparsed: `$N$` -> N, a code span -> its text, *word* and **word** -> word.
    The same sentence shown through Markdown (gb.answer, claims.shown) keeps them."""
    # MyST's dollarmath: no space inside either `$`, no digit after the closing one
    text = re.sub(r"(?<![\\$])\$(?=\S)([^$\n]+?)(?<=[^\s\\])\$(?!\d)", lambda m: _plain_math(m.group(1)), text)
    text = re.sub(r"(`+)(.+?)\1", lambda m: m.group(2).strip(), text)
    text = re.sub(r"(?<![\w*])(\*{1,2})(?=\S)(.+?)(?<=\S)\1(?![\w*])", r"\2", text)
    return text


def end_chapter(reason):
    """Say why this chapter cannot go on here, and make every later cell of the
    notebook do nothing, so a reader (or nbval) sees one clear message rather
    than a cascade of NameErrors. Outside a notebook it raises instead."""
    try:
        from IPython import get_ipython
    except ImportError:
        shell = None
    else:
        shell = get_ipython()
    if shell is None:
        raise RuntimeError(reason)
    print(f"This chapter ends here: {reason}.\n"
          "Every later cell does nothing; restart the kernel on another device to run them.")
    if not getattr(shell, "_gpubook_ended", False):
        shell.input_transformers_cleanup.append(lambda lines: ["pass\n"])
        shell._gpubook_ended = True


def answer(*sentences):
    """An exercise's answer, shown under its solution's output: the solution cell
    (tagged `hide-cell`) ends with it, so the page folds the code, what it printed
    and the answer that reads it into one toggle, under the question and its
    prediction prompt. Sentences that judge a measurement come from gb.claim."""
    from IPython.display import Markdown, display

    text = " ".join(str(getattr(s, "sentence", s)).strip() for s in sentences if str(s).strip())
    display(Markdown(f"*Answer.* {text}"))
