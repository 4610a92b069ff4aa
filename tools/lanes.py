"""Split notebooks into lanes, one per GPU of a several-GPU host, for a reference pass.

    python3 tools/lanes.py N NB...      prints N lines, each the notebooks of one lane

A reference pass of chapters 0-8 takes about 17 minutes on one H100, one after another;
a session has 30 minutes of device time. On a host of N GPUs each lane runs on its own
GPU (CUDA_VISIBLE_DEVICES, tools/device_pass.sh with LANES=N), so the pass takes about
the longest lane. The parts of one chapter (06_1, 06_2, 06_3) share one record, which
each part reads and rewrites: they stay in one lane, in order. Each notebook weighs what
its stored outputs took (nbclient's execution stamps of the last reference run), or
WITHOUT_STAMPS_S; the chapters go longest first to the lane that ends soonest.
"""
import datetime
import pathlib
import sys

import nbformat

WITHOUT_STAMPS_S = 120.0


def seconds(path):
    """What the notebook's stored run took: first cell started to last cell done."""
    stamps = []
    for cell in nbformat.read(str(path), as_version=4).cells:
        run = cell.get("metadata", {}).get("execution", {})
        for key in ("iopub.execute_input", "shell.execute_reply"):
            if key in run:
                stamps.append(datetime.datetime.fromisoformat(run[key].replace("Z", "+00:00")))
    return (max(stamps) - min(stamps)).total_seconds() if len(stamps) > 1 else WITHOUT_STAMPS_S


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
