"""gpubook.vendor's measurements in a child process of their own, so that the
chapter's process never holds a CUDA context (gpubook.vendor, APART): the job
goes to `python -m gpubook.vendor --child` on its stdin, and the result comes
back on the last line of its stdout that starts with MARK. Any failure of the child becomes
one reason in the chapter's line, never an exception."""
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

TIMEOUT_S = 900
MARK = "gpubook.vendor result: "


@dataclass(frozen=True)
class Named:
    """What the vendor code reads of an OpenCL device, sent to the child process."""
    name: str
    vendor: str
    bus: int = None

    @property
    def pci_bus_id_nv(self):
        if self.bus is None:
            raise AttributeError("no PCI bus id was sent")
        return self.bus


def first_line(err):
    """An exception's first line of text (its type's name where it has none)."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def measure(device, figures, shapes, size, cub_way):
    """gpubook.vendor's in-process measurement (`_here`), run in a child process:
    ({figure: entry}, [why each missing group is missing])."""
    try:
        bus = device.pci_bus_id_nv
    except Exception:  # noqa: BLE001 - not NVIDIA's driver, or no bus id: match by name
        bus = None
    job = {"device": {"name": device.name, "vendor": device.vendor, "bus": bus},
           "figures": figures, "shapes": shapes, "size": size, "cub_way": cub_way}
    root = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    names = f"({', '.join(figures)} not measured)"
    try:
        done = subprocess.run([sys.executable, "-m", "gpubook.vendor", "--child"],
                              input=json.dumps(job), capture_output=True, text=True,
                              env=dict(os.environ, PYTHONPATH=path), timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as err:
        return {}, [f"the measuring process failed ({first_line(err)}) {names}"]
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(MARK)]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {}, [f"the measuring process failed (exit {done.returncode}: {tail}) {names}"]
    out = json.loads(lines[-1][len(MARK):])
    return out["found"], out["missing"]


def child(measure_here):
    """The child's side (python -m gpubook.vendor --child): read the job, measure
    with gpubook.vendor's in-process `measure_here`, print the result."""
    job = json.loads(sys.stdin.read())
    shapes = {f: tuple(s) for f, s in job["shapes"].items()}
    found, missing = measure_here(Named(**job["device"]), job["figures"], shapes, job["size"], job["cub_way"])
    print(MARK + json.dumps({"found": found, "missing": missing}, default=float), flush=True)
