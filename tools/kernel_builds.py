"""The manifest of kernel builds: every (files, options, preamble) the book builds.

gpubook.kernels.build appends one JSON line per program it builds to the file named
by GPUBOOK_BUILD_LOG. `make kernel-builds` runs the tests and the notebooks with that
log and then calls

    python tools/kernel_builds.py merge LOG

which folds the log into tests/data/kernel_builds.json. Each entry there says on
which OpenCL platforms it was seen; a merge replaces what the log's platforms had
recorded and keeps the entries of other platforms (record the GPU's builds by running
the same target on the GPU host, then merge its log here). tests/test_strict_compile.py
compiles every entry with a strict compiler.

    python tools/kernel_builds.py check

names the kernel files that no entry builds (the test fails on them too).
"""
import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "tests" / "data" / "kernel_builds.json"
ABOUT = ("Every kernel build the book made in the recorded runs: files joined in order "
         "(kernels/<path>), build options, preamble ('' none, 'trace' gpubook.trace's "
         "PREAMBLE) and the OpenCL platforms it was seen on. Regenerate with "
         "`make kernel-builds` (see tools/kernel_builds.py).")


def preambles():
    """Digest (as gpubook.kernels logs it) -> name, for the preambles the book knows."""
    from gpubook import trace
    return {hashlib.sha256(trace.PREAMBLE.encode()).hexdigest()[:12]: "trace"}


def preamble_text(name):
    """The source text of a named preamble ('' for none)."""
    if not name:
        return ""
    if name == "trace":
        from gpubook import trace
        return trace.PREAMBLE
    raise KeyError(f"unknown preamble {name!r}: teach tools/kernel_builds.py its name")


def load(path=MANIFEST):
    if not path.exists():
        return []
    return json.loads(path.read_text())["builds"]


def save(builds, path=MANIFEST):
    builds = sorted(builds, key=lambda b: (b["files"], b["options"], b["preamble"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"about": ABOUT, "builds": builds}, indent=1) + "\n")


def read_log(log):
    """The log's builds: {(files, options, preamble): set of platforms}."""
    names = preambles()
    seen = {}
    for line in Path(log).read_text().splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        if not all((ROOT / "kernels" / f).is_file() for f in rec["files"]):
            continue  # a test's own kernel in a temporary folder (tests/test_kernels.py)
        pre = names.get(rec["preamble"], rec["preamble"])
        key = (tuple(rec["files"]), tuple(rec["options"]), pre)
        seen.setdefault(key, set()).add(rec.get("platform", "?"))
    return seen


def merge(builds, seen):
    """builds with the log's platforms replaced by what the log saw."""
    platforms = set().union(*seen.values()) if seen else set()
    out = {}
    for b in builds:
        keep = sorted(set(b["seen_on"]) - platforms)
        if keep:
            out[(tuple(b["files"]), tuple(b["options"]), b["preamble"])] = set(keep)
    for key, where in seen.items():
        out.setdefault(key, set()).update(where)
    return [{"files": list(f), "options": list(o), "preamble": p, "seen_on": sorted(w)}
            for (f, o, p), w in out.items()]


def kernel_files():
    return sorted(str(p.relative_to(ROOT / "kernels")) for p in (ROOT / "kernels").rglob("*.cl"))


def missing(builds):
    """Kernel files that no recorded build uses."""
    used = {f for b in builds for f in b["files"]}
    return [f for f in kernel_files() if f not in used]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("merge", help="fold a GPUBOOK_BUILD_LOG file into the manifest")
    m.add_argument("log", nargs="+")
    sub.add_parser("check", help="name kernel files absent from the manifest")
    args = ap.parse_args(argv)
    builds = load()
    if args.cmd == "merge":
        seen = {}
        for log in args.log:
            for key, where in read_log(log).items():
                seen.setdefault(key, set()).update(where)
        builds = merge(builds, seen)
        save(builds)
        print(f"{MANIFEST.relative_to(ROOT)}: {len(builds)} builds "
              f"({len(seen)} from {', '.join(args.log)})")
    gone = missing(builds)
    for f in gone:
        print(f"kernels/{f}: no recorded build", file=sys.stderr)
    return 1 if gone else 0


if __name__ == "__main__":
    sys.exit(main())
