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
