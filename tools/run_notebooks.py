"""Execute the book's notebooks on the local OpenCL device.

  python tools/run_notebooks.py --out DIR NB...          outputs into DIR (make run)
  python tools/run_notebooks.py --reference NB...        in place, recording results
                                                          and digests (make reference)
  python tools/run_notebooks.py --record-only NB...      record results, keep no outputs
  python tools/run_notebooks.py --capture DIR NB...      capture every kernel launch into
                                                          DIR/<notebook> (tools/counters.py)
"""
import argparse
import os
import pathlib
import sys
import tempfile

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gpubook import choose_device  # noqa: E402
from gpubook.reference import save_digest  # noqa: E402


def execute(path, env_extra):
    nb = nbformat.read(str(path), as_version=4)
    old = {k: os.environ.get(k) for k in env_extra}
    os.environ.update(env_extra)
    try:
        # The kernel's own log (a note about its local TCP transport) is not news.
        NotebookClient(nb, timeout=1800, kernel_name="python3",
                       extra_arguments=["--IPKernelApp.log_level=ERROR"],
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb


def main():
    ap = argparse.ArgumentParser()
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--out", type=pathlib.Path)
    mode.add_argument("--reference", action="store_true")
    mode.add_argument("--record-only", action="store_true")
    mode.add_argument("--capture", type=pathlib.Path)
    ap.add_argument("notebooks", nargs="+", type=pathlib.Path)
    args = ap.parse_args()
    pythonpath = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    device = choose_device().name.strip()
    for path in args.notebooks:
        print(f"running {path.name} on {device} ...", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            log = pathlib.Path(tmp) / "kernels.txt"
            env = {"PYTHONPATH": pythonpath, "GPUBOOK_KERNEL_LOG": str(log)}
            if args.reference or args.record_only:
                env["GPUBOOK_RECORD"] = "1"
            if args.capture:
                env["GPUBOOK_CAPTURE"] = str((args.capture / path.stem).resolve())
                env["GPUBOOK_NOTEBOOK"] = path.stem
            nb = execute(path, env)
            kernels = log.read_text().split() if log.exists() else []
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, str(args.out / path.name))
        elif args.reference:
            nbformat.write(nb, str(path))
            save_digest(path, kernels, device)


if __name__ == "__main__":
    main()
