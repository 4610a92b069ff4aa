"""Small tables shown in the page as Markdown."""


def markdown_table(rows, header=True):
    """Rows of cells as a Markdown table (first row the header)."""
    from IPython.display import Markdown

    rows = [[str(c) for c in row] for row in rows]
    if not header:
        rows = [["", ""][:len(rows[0])]] + rows
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return Markdown("\n".join(lines))


GLUE_PREFIX = "application/papermill.record/"


def glue(**values):
    """Store numbers for the page's prose without showing them.

    The book's Markdown cites them as {glue:text}`name:.0f`: myst-nb reads the
    hidden output this writes, so prose numbers always come from the same run as
    the plots. (The same output format as myst_nb.glue, without importing it.)
    """
    import numbers

    from IPython.display import display

    for name, value in values.items():
        text = repr(float(value)) if isinstance(value, numbers.Real) else str(value)
        display({GLUE_PREFIX + "text/plain": text}, raw=True,
                metadata={"scrapbook": {"name": name, "mime_prefix": GLUE_PREFIX}})


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
