"""Building OpenCL programs from kernels/<chapter>/<step>.cl, quietly and once."""
import hashlib
import json
import os
import warnings

import pyopencl as cl

from .paths import KERNELS


class KernelBuildError(RuntimeError):
    """A kernel failed to compile; the message carries the compiler's log."""


_programs = {}
_kernels = {}
_logs = {}  # program int_ptr -> {device int_ptr: build log}, for gpubook.resources
_sources = {}  # program int_ptr -> (path, source text, options), for gpubook.capture


def source(path):
    """The text of kernels/<path>; a tuple of paths gives their texts joined in
    order (how a kernel shares a helper function without #include)."""
    if isinstance(path, (tuple, list)):
        return "\n".join(source(p) for p in path)
    return (KERNELS / path).read_text()


def options(defines=None, extra=()):
    """Build options: one -D per define, then any extra flags."""
    opts = [f"-D{name}={value}" for name, value in sorted((defines or {}).items())]
    return opts + list(extra)


def _log_use(path):
    # The reference run lists the kernel files each notebook loads, to tell
    # later whether its stored outputs are stale.
    log = os.environ.get("GPUBOOK_KERNEL_LOG")
    if log:
        with open(log, "a") as f:
            for p in (path if isinstance(path, (tuple, list)) else [path]):
                f.write(f"{p}\n")


def _log_build(ctx, path, opts, preamble):
    # tools/kernel_builds.py collects every (files, options, preamble) a run builds
    # into tests/data/kernel_builds.json, which the strict-compile test reads.
    log = os.environ.get("GPUBOOK_BUILD_LOG")
    if log:
        files = list(path) if isinstance(path, tuple) else [path]
        digest = hashlib.sha256(preamble.encode()).hexdigest()[:12] if preamble else ""
        with open(log, "a") as f:
            f.write(json.dumps({"files": files, "options": opts, "preamble": digest,
                                "platform": ctx.devices[0].platform.name.strip()}) + "\n")


def build(ctx, path, defines=None, extra=(), preamble=""):
    """The built program for kernels/<path> with these defines (built once per context);
    `preamble`: source put before the file's (gpubook.trace's macros)."""
    text = preamble + source(path)
    opts = options(defines, extra)
    path = tuple(path) if isinstance(path, list) else path
    name = " + kernels/".join(path) if isinstance(path, tuple) else path
    key = (ctx.int_ptr, path, tuple(opts), hash(text))
    if key not in _programs:
        _log_use(path)
        try:
            with warnings.catch_warnings():
                # Non-empty compiler logs on success are chatter, not news.
                warnings.simplefilter("ignore", cl.CompilerWarning)
                # On NVIDIA, ask ptxas for each kernel's registers, spills and barriers.
                nv = ["-cl-nv-verbose"] if any("NVIDIA" in d.platform.name for d in ctx.devices) else []
                prg = _programs[key] = cl.Program(ctx, text).build(options=opts + nv)
            _sources[prg.int_ptr] = (path, text, opts)
            _logs[prg.int_ptr] = {d.int_ptr: prg.get_build_info(d, cl.program_build_info.LOG)
                                  for d in ctx.devices}
            _log_build(ctx, path, opts, preamble)   # a build that fails on purpose (a test) is no entry
        except cl.RuntimeError as err:
            raise KernelBuildError(
                f"kernels/{name} failed to build with options {' '.join(opts) or '(none)'}:\n{err}"
            ) from None
    return _programs[key]


def source_of(program):
    """(path, source text, build options) of a program built by `build`, else None."""
    return _sources.get(program.int_ptr)


def label(path, opts, name):
    """A kernel's name in the records: `path:name[defines and flags]`."""
    path = "+".join(path) if isinstance(path, tuple) else path
    shown = " ".join(o[2:] if o.startswith("-D") else o for o in opts)
    return f"{path}:{name}" + (f"[{shown}]" if shown else "")


def build_log(program, device):
    """The compiler's log of a program's build for one device ('' when silent)."""
    logs = _logs.get(program.int_ptr, {})
    if device.int_ptr in logs:
        return logs[device.int_ptr]
    return program.get_build_info(device, cl.program_build_info.LOG)


def built():
    """(path, options, program, names of the kernels fetched from it) of every program built so far."""
    fetched = {}
    for prg_id, name in _kernels:
        fetched.setdefault(prg_id, []).append(name)
    return [(path, opts, prg, fetched.get(id(prg), [])) for (_, path, opts, _), prg in _programs.items()]


def kernel(ctx, path, name, defines=None, extra=()):
    """One kernel of kernels/<path>, fetched once per built program."""
    prg = build(ctx, path, defines, extra)
    key = (id(prg), name)
    if key not in _kernels:
        _kernels[key] = cl.Kernel(prg, name)
    return _kernels[key]


def resolve(lines, defines):
    """The lines of a source as the preprocessor would keep them for `defines`
    ({NAME: value}), as far as `#if NAME` and `#if !NAME` blocks on those names go;
    every other directive and its lines stay as they are."""
    out, stack = [], []       # stack: None (kept as text) or whether the branch is kept
    for line in lines:
        words = line.split()
        head = words[0] if words else ""
        name = words[1].lstrip("!") if head == "#if" and len(words) == 2 else None
        if name in defines:
            stack.append(bool(defines[name]) != words[1].startswith("!"))
            continue
        if head in ("#if", "#ifdef", "#ifndef"):
            stack.append(None)
        elif head in ("#else", "#endif") and stack and stack[-1] is not None:
            if head == "#else":
                stack[-1] = not stack[-1]
            else:
                stack.pop()
            continue
        elif head == "#endif" and stack:
            stack.pop()
        if all(kept is not False for kept in stack):
            out.append(line)
    return out


def show_kernel(path, start=None, end=None, defines=None, hide=()):
    """Display kernels/<path> in the page as highlighted OpenCL C.

    start/end pick the lines from the first line containing `start` up to and
    including the first later line containing `end`. defines: {NAME: value}, the
    build whose `#if NAME` blocks are shown (resolve); hide: lines that contain
    any of these strings are left out (a timing build's marks, say).
    """
    from IPython.display import Markdown

    from .show import fit

    lines = resolve(source(path).rstrip("\n").split("\n"), defines or {})
    lines = [line for line in lines if not any(h in line for h in hide)]
    if start is not None:
        first = next(i for i, line in enumerate(lines) if start in line)
        last = len(lines) - 1
        if end is not None:
            last = next(i for i in range(first, len(lines)) if end in lines[i])
        lines = lines[first:last + 1]
    body = "\n".join(fit(lines))
    return Markdown(f"`kernels/{path}`\n\n```c\n{body}\n```")


def kernel_diff(old, new, context=3):
    """The unified diff of kernels/<old> against kernels/<new> (text), with the
    files' names as its header; '' when they are the same."""
    import difflib

    a, b = source(old).splitlines(), source(new).splitlines()
    return "\n".join(difflib.unified_diff(a, b, f"kernels/{old}", f"kernels/{new}", n=context, lineterm=""))


FOLD_DIFF_LINES = 40  # a longer diff is mostly a rewrite: it folds (show_diff)


def show_diff(old, new, context=3):
    """Display what changed from one step's kernel to the next, as a highlighted
    diff (the page shows the change first; the whole kernel follows, collapsed)."""
    from IPython.display import Markdown

    from .show import fit, folded

    text = kernel_diff(old, new, context)
    if not text:
        return Markdown(f"`kernels/{new}` is the same source as `kernels/{old}`: the step changes only "
                        "its build options or launch.")
    lines = fit(text.split("\n"), prefix="+- ")
    text = "\n".join(lines)
    lead = f"What changed from `kernels/{old}` to `kernels/{new}`"
    if len(lines) > FOLD_DIFF_LINES:   # a rewrite more than a change: the page says so, folded
        added = sum(ln.startswith("+") and not ln.startswith("+++") for ln in lines)
        removed = sum(ln.startswith("-") and not ln.startswith("---") for ln in lines)
        body = folded(f"```diff\n{text}\n```", f"The diff, {len(lines)} lines").data
        return Markdown(f"{lead}: {added} lines in, {removed} out, folded below.\n\n{body}")
    return Markdown(f"{lead}:\n\n```diff\n{text}\n```")
