"""The change from one step's kernel to the next as chapter 3's main line shows it:
the code lines only. A kernel's leading comments say what the step does (the prose
beside the diff says it too), and its `#ifdef TRACE` blocks serve gpubook.trace's
traced build, not the timed one; the Going-further page shows each kernel whole."""
import difflib
import re

from ...kernels import source
from ...show import fit

_TRACE = re.compile(r"\s*#ifdef TRACE\b")


def code_lines(text):
    """The lines of a kernel's source without comment-only lines and without its
    `#ifdef TRACE ... #endif` blocks; a parameter list's closing ')' left alone on
    its line by a removed block goes back onto the line before."""
    kept, depth = [], 0
    for line in text.splitlines():
        if depth:
            if line.strip().startswith("#if"):
                depth += 1
            elif line.strip().startswith("#endif"):
                depth -= 1
            continue
        if _TRACE.match(line):
            depth = 1
            continue
        if line.strip().startswith("//"):
            continue
        if kept and line.strip() in (")", ");") and not kept[-1].rstrip().endswith(","):
            kept[-1] = kept[-1].rstrip() + line.strip()
            continue
        kept.append(line)
    return kept


def code_diff(old, new, context=2):
    """The unified diff of kernels/<old> against kernels/<new>, code lines only."""
    a, b = code_lines(source(old)), code_lines(source(new))
    return "\n".join(difflib.unified_diff(a, b, f"kernels/{old}", f"kernels/{new}",
                                          n=context, lineterm=""))


def show_code_diff(old, new, context=2):
    """Display code_diff as a highlighted diff within the page's column."""
    from IPython.display import Markdown

    text = "\n".join(fit(code_diff(old, new, context).split("\n"), prefix="+- "))
    return Markdown(f"What changed from `kernels/{old}` to `kernels/{new}` (code lines; "
                    f"comments and trace lines left out):\n\n```diff\n{text}\n```")
