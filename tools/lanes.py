"""Split notebooks into lanes, one per GPU of a several-GPU host, for a reference pass.

    python3 tools/lanes.py N NB...          prints N lines, each the notebooks of one lane
    python3 tools/lanes.py --calls K N NB... prints K lines, each the notebooks of one call
                                             of tools/device_pass.sh with LANES=N

A pass of chapters 0-8 with their Going-further pages took 2,040 s of notebook time on
an H200 (2026-11-28, book/data/notebook_seconds.csv); a session has 30 minutes of device
time and 10 minutes a call. On a host of N GPUs each lane runs on its own GPU
(CUDA_VISIBLE_DEVICES, tools/device_pass.sh with LANES=N), so the pass takes about the
longest lane. Each notebook is its own item: the pages of one chapter share a record,
which gpubook.records writes under a lock, so they may run at once on two GPUs. A
notebook weighs its measured seconds in that file, else what its code cells took when
last run (nbclient's execution stamps); the longest go first to the lane that ends soonest.
"""
import csv
import datetime
import pathlib
import sys

import nbformat

UNSTAMPED_CELL_S = 5.0
MEASURED = pathlib.Path(__file__).resolve().parent.parent / "book" / "data" / "notebook_seconds.csv"


def seconds(path):
    """What the notebook's stored run took: the sum of its code cells' run times, each from
    nbclient's execution stamps, or UNSTAMPED_CELL_S for a code cell without them (a page
    made of cells copied from other runs holds stamps of several days, so their span would
    not say)."""
    total = 0.0
    for cell in nbformat.read(str(path), as_version=4).cells:
        if cell.cell_type != "code":
            continue
        run = cell.get("metadata", {}).get("execution", {})
        if "iopub.execute_input" in run and "shell.execute_reply" in run:
            start, end = (datetime.datetime.fromisoformat(run[k].replace("Z", "+00:00"))
                          for k in ("iopub.execute_input", "shell.execute_reply"))
            total += max((end - start).total_seconds(), 0.0)
        else:
            total += UNSTAMPED_CELL_S
    return total


def measured(table=MEASURED):
    """{notebook stem: seconds} of the last pass, where the table exists."""
    if not table.exists():
        return {}
    with open(table, newline="") as f:
        return {row["notebook"]: float(row["seconds"]) for row in csv.DictReader(f)}


def weight_of(path, table=None):
    """A notebook's measured seconds, else its stamps' sum."""
    table = measured() if table is None else table
    return table.get(pathlib.Path(path).stem) or seconds(path)


def _weigher(weight):
    """`weight`, or weight_of over the measured table, read once."""
    if weight is not None:
        return weight
    table = measured()
    return lambda p: weight_of(p, table)


def lanes(paths, n, weight=None):
    """`n` lists of the notebooks, balanced by weight: longest first to the lightest lane;
    each lane in the notebooks' order."""
    if n < 1:
        raise ValueError(f"lanes need at least one GPU, not {n}")
    weight = _weigher(weight)
    load = [[0.0, []] for _ in range(n)]
    for p in sorted(paths, key=lambda p: -weight(p)):
        lane = min(load, key=lambda lane: lane[0])
        lane[0] += weight(p)
        lane[1].append(p)
    return [sorted(notebooks) for _, notebooks in load]


def calls(paths, k, n, weight=None):
    """`k` lists of the notebooks, one per call of a pass on `n` GPUs: chapter 0 in the
    first (it runs before the lanes), chapter 10 in the last (after them, on every GPU),
    the rest, longest first, into the call whose estimated wall time is least."""
    if k < 1:
        raise ValueError(f"a pass takes at least one call, not {k}")
    weight = _weigher(weight)
    out = [[] for _ in range(k)]
    fixed = [0.0] * k
    spread = [0.0] * k
    for p in paths:
        if chapter(p) in ("00", "10"):
            i = 0 if chapter(p) == "00" else k - 1
            out[i].append(p)
            fixed[i] += weight(p)
    for p in sorted((p for p in paths if chapter(p) not in ("00", "10")), key=lambda p: -weight(p)):
        i = min(range(k), key=lambda i: fixed[i] + (spread[i] + weight(p)) / n)
        out[i].append(p)
        spread[i] += weight(p)
    return [sorted(c) for c in out]


def chapter(path):
    return pathlib.Path(path).name[:2]


if __name__ == "__main__":
    if sys.argv[1] == "--calls":
        for call in calls(sys.argv[4:], int(sys.argv[2]), int(sys.argv[3])):
            print(" ".join(str(p) for p in call))
    else:
        for lane in lanes(sys.argv[2:], int(sys.argv[1])):
            print(" ".join(str(p) for p in lane))
