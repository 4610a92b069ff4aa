"""Time a newcomer's first `make test`, and write the result to the maintainers' page.

    python3 tools/time_make_test.py [--keep]

Clones this repository's committed main into a new folder, then runs there
`make venv`, `make book` and `make test` with an empty PoCL cache (a new
POCL_CACHE_DIR), each timed by the wall clock, and appends one row to
book/data/test_times.csv (the table "Time of each command" of book/maintainers.md)
with today's date, the times and the test counts that pytest printed. Nothing is
written when a command fails: the failing command's last lines (and the start of
pytest's failures) are printed instead.
"""
import argparse
import csv
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "book" / "data" / "test_times.csv"
SUMMARY = re.compile(r"=+ (.*\d+ passed.*) in [\d.]+s")


def minutes(seconds):
    m, s = divmod(int(round(seconds)), 60)
    return f"{m} min {s} s" if m else f"{s} s"


def run(cmd, cwd, env):
    """(seconds, output) of one command; exits with its last lines when it fails."""
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    out = done.stdout + done.stderr
    if done.returncode:
        lines = out.splitlines()
        # pytest's failures section too, not only its summary
        start = next((i for i, l in enumerate(lines) if re.match(r"=+ (FAILURES|ERRORS) =+$", l)), None)
        print("\n".join(lines[start:start + 120] + ["..."] if start is not None else []))
        print("\n".join(lines[-40:]))
        sys.exit(f"{' '.join(cmd)} failed (exit {done.returncode}) after {minutes(seconds)}: "
                 "nothing written")
    print(f"{' '.join(cmd)}: {minutes(seconds)}", flush=True)
    return seconds, out


def counts(output):
    """pytest's summary line of each run of `make test`, in order."""
    return [m.group(1) for m in SUMMARY.finditer(output)]


def row(venv_s, book_s, test_s, summaries, cores):
    runs = "; ".join(f"run {i + 1}: {s}" for i, s in enumerate(summaries))
    how = (f"{minutes(test_s)} in a fresh clone with an empty PoCL cache, measured by "
           f"tools/time_make_test.py after `make venv` ({minutes(venv_s)}) and `make book` "
           f"({minutes(book_s)}) on {cores} cores")
    return ["`make test`", datetime.date.today().isoformat(), how, runs]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gpubook-clone-"))
    clone, cache = work / "clone", work / "pocl-cache"
    cache.mkdir()
    env = {**os.environ, "POCL_CACHE_DIR": str(cache)}
    env.pop("VIRTUAL_ENV", None)
    try:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        venv_s, _ = run(["make", "venv"], clone, env)
        book_s, _ = run(["make", "book"], clone, env)
        test_s, out = run(["make", "test"], clone, env)
    finally:
        if args.keep:
            print(f"clone kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    line = row(venv_s, book_s, test_s, counts(out), os.cpu_count())
    with TABLE.open("a", newline="") as f:
        csv.writer(f).writerow(line)
    print(f"appended to {TABLE.relative_to(ROOT)}: {line}")


if __name__ == "__main__":
    main()
