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
