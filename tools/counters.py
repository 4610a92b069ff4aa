"""Hardware counters for the book's kernels, on an NVIDIA GPU host.

    PYOPENCL_CTX=0 GPUBOOK_SCALE=full python3 tools/run_notebooks.py --capture CAP NB...
    PYOPENCL_CTX=0 python3 tools/counters.py CAP [--record]

The first command runs notebooks with every kernel launch captured (gpubook.capture;
its timings are not the page's). This one replays each captured launch through
OpenCL and through the CUDA driver from the same PTX (gpubook.replay time), profiles
the CUDA replays under Nsight Compute (`ncu --csv --page raw`, read by
gpubook.counters.read_csv), prints one row per kernel, and with --record writes each
notebook's rows into the top-level `counters` section of its chapter's record,
beside `resources`: {label: {"opencl_s", "cuda_s", "same_output", "why_not",
"metrics"}}. A kernel whose replay differs keeps its row with the reason, and no
metrics.
"""
import argparse
import datetime
import json
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gpubook import choose_device, counters  # noqa: E402
from gpubook.records import device_slug  # noqa: E402
from gpubook.paths import RESULTS  # noqa: E402


def _env():
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return dict(os.environ, PYTHONPATH=path)


def profile(folder):
    """Rows of ncu's report for the replays of one notebook's captures, by slot."""
    cmd = ["ncu", "--csv", "--page", "raw", "--print-units", "base", "--target-processes",
           "all", "--metrics", ",".join(counters.metric_names()),
           sys.executable, "-m", "gpubook.replay", "profile", str(folder)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=ROOT)
    (folder / "ncu.csv").write_text(done.stdout)
    (folder / "ncu.err").write_text(done.stderr)
    rows = counters.read_csv(done.stdout)
    order = json.loads((folder / "profiled.json").read_text()) if \
        (folder / "profiled.json").exists() else []
    if len(rows) != len(order):
        print(f"{folder.name}: ncu gave {len(rows)} rows for {len(order)} replays "
              f"(see {folder / 'ncu.err'})")
        return {}
    return dict(zip(order, rows))


def rows_of(folder):
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "gpubook.replay", "time", str(folder)], check=True,
                   env=_env(), cwd=ROOT)
    timed = time.monotonic()
    profiled = profile(folder)
    print(f"{folder.name}: replays timed in {timed - started:.0f} s, "
          f"profiled in {time.monotonic() - timed:.0f} s", flush=True)
    out = {}
    for replay in sorted(folder.glob("*/replay.json")):
        entry = json.loads(replay.read_text())
        row = {k: entry.get(k) for k in ("opencl_s", "cuda_s", "same_output", "why_not")}
        launch = json.loads((replay.parent / "launch.json").read_text())
        row["global"], row["local"] = launch["global"], launch["local"]   # which launch
        if entry.get("error"):
            row["why_not"] = entry["error"]
        found = profiled.get(replay.parent.name)
        if found and not row["why_not"]:
            row["metrics"] = counters.summary(found["metrics"])
        elif not row["why_not"]:
            row["why_not"] = (f"not profiled: its replay takes over {counters.PROFILE_MAX_S} s"
                              if (row["cuda_s"] or 0) > counters.PROFILE_MAX_S
                              else "not profiled: ncu gave no row for it")
        row["date"] = datetime.date.today().isoformat()
        out[entry["label"]] = row
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("capture", type=pathlib.Path)
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    device = choose_device()
    why = counters.why_none_here(device)
    if why:
        sys.exit(f"no counters here: {why}")
    for folder in sorted(p for p in args.capture.iterdir() if p.is_dir()):
        rows = rows_of(folder)
        for label, row in rows.items():
            m = row.get("metrics", {})
            print(f"{folder.name:18s} {label[:60]:60s} "
                  + (row["why_not"] or " ".join(f"{k}={v:.3g}" for k, v in m.items()
                                                if isinstance(v, float))))
        if args.record and rows:
            path = counters.record_path(RESULTS / device_slug(device), folder.name)
            entry = json.loads(path.read_text())
            entry.setdefault("counters", {}).update(rows)
            path.write_text(json.dumps(entry, indent=1) + "\n")
            print(f"wrote {len(rows)} rows into {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
