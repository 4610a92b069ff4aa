"""Split notebooks into lanes, one per GPU of a several-GPU host, for a reference pass.

    python3 tools/lanes.py N NB...      prints N lines, each the notebooks of one lane

A reference pass of chapters 0-8 takes about 17 minutes on one H100, one after another;
a session has 30 minutes of device time. On a host of N GPUs each lane runs on its own
GPU (CUDA_VISIBLE_DEVICES, tools/device_pass.sh with LANES=N), so the pass takes about
the longest lane. The parts of one chapter (06_1, 06_2, 06_3) share one record, which
each part reads and rewrites: they stay in one lane, in order. Each notebook weighs what
its code cells took when last run (nbclient's execution stamps); the chapters go longest first to the lane that ends soonest.
"""
import datetime
import pathlib
import sys

import nbformat

UNSTAMPED_CELL_S = 5.0


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


def chapter(path):
    return pathlib.Path(path).name[:2]


def lanes(paths, n, weight=seconds):
    """`n` lists of the notebooks (each chapter's parts together, in their order), balanced
    by weight: longest chapter first to the lightest lane."""
    if n < 1:
        raise ValueError(f"lanes need at least one GPU, not {n}")
    groups = {}
    for p in paths:
        groups.setdefault(chapter(p), []).append(p)
    load = [[0.0, []] for _ in range(n)]
    for parts in sorted(groups.values(), key=lambda ps: -sum(weight(p) for p in ps)):
        lane = min(load, key=lambda lane: lane[0])
        lane[0] += sum(weight(p) for p in parts)
        lane[1].extend(parts)
    return [sorted(notebooks) for _, notebooks in load]


if __name__ == "__main__":
    for lane in lanes(sys.argv[2:], int(sys.argv[1])):
        print(" ".join(str(p) for p in lane))
