"""Run the notebooks under nbval (small scale) on each OpenCL implementation installed
here, and print per implementation how many cells passed and failed, and the time
(make test-devices).

  python tools/test_devices.py [--only NAME ...] [--workers N] [NB ...]

The implementations, each run where it is installed and otherwise skipped with a
line saying why:
  pocl-32   PoCL limited to 32 work-items per work-group (POCL_MAX_WORK_GROUP_SIZE)
  pocl-16   PoCL limited to 16
  intel     Intel's OpenCL CPU runtime from the pip wheels (not in requirements.txt:
            `pip install intel-opencl-rt intel-cmplr-lib-rt` into the venv, or with
            --prefix DIR and INTEL_OCL_LIB=DIR/lib/libintelocl.so), registered through
            an ICD file of its own in a temporary folder named by OCL_ICD_VENDORS (the
            wheel's own ICD file names a build path, not the install)
  rusticl   Mesa's rusticl on llvmpipe (Debian: apt-get install mesa-opencl-icd),
            RUSTICL_ENABLE=llvmpipe
Each run's pytest log goes to _build/test_devices/<name>.log. The exit status is 1
when any cell failed on any implementation that ran.
"""
import argparse
import importlib.metadata
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

ROOT = pathlib.Path(__file__).resolve().parent.parent
LOGS = ROOT / "_build" / "test_devices"
# In a child with the run's environment: the device the book would choose, or the reason.
DEVICE_LINE = """
import sys
from gpubook.device import choose_device
try:
    d = choose_device()
except Exception as err:   # its first line says why
    sys.exit(str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__)
print(d.platform.name.strip() + ' | ' + d.name.strip())
"""


@dataclass
class Run:
    name: str
    label: str
    env: dict = field(default_factory=dict)
    skip: str = ""          # why it does not run here ("" when it does)
    device: str = ""        # the platform and device it runs on


def intel_library():
    """libintelocl.so of Intel's OpenCL CPU runtime: INTEL_OCL_LIB, else the file of
    the `intel-opencl-rt` wheel in this Python's environment, else None."""
    named = os.environ.get("INTEL_OCL_LIB")
    if named:
        return pathlib.Path(named) if pathlib.Path(named).is_file() else None
    try:
        dist = importlib.metadata.distribution("intel-opencl-rt")
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or []:
        if f.name.startswith("libintelocl.so"):
            path = pathlib.Path(dist.locate_file(f)).resolve()
            if path.is_file():
                return path
    return None


def intel_env(library, folder):
    """The environment that registers `library` as the only ICD of `folder`."""
    (pathlib.Path(folder) / "intel-cpu.icd").write_text(f"{library}\n")
    paths = [str(library.parent)] + [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p]
    return {"OCL_ICD_VENDORS": str(folder), "LD_LIBRARY_PATH": ":".join(paths), "PYOPENCL_CTX": "intel"}


def device_of(env):
    """(the 'platform | device' the book chooses with `env` added, "") or ("", the reason)."""
    try:
        out = subprocess.run([sys.executable, "-c", DEVICE_LINE], cwd=ROOT, env={**os.environ, **env},
                             capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "", "choosing its device took over 120 s"
    if out.returncode == 0 and out.stdout.strip():
        return out.stdout.strip().splitlines()[-1], ""
    lines = [ln for ln in (out.stderr or out.stdout).strip().splitlines() if ln.strip()]
    return "", (lines[-1] if lines else f"exit status {out.returncode}")[:300]


def discover(icd_folder, only=None):
    """Every implementation, with its environment and, where it cannot run here, why."""
    runs = [Run("pocl-32", "PoCL, 32 work-items", {"PYOPENCL_CTX": "portable", "POCL_MAX_WORK_GROUP_SIZE": "32"}),
            Run("pocl-16", "PoCL, 16 work-items", {"PYOPENCL_CTX": "portable", "POCL_MAX_WORK_GROUP_SIZE": "16"}),
            Run("intel", "Intel's OpenCL CPU runtime"),
            Run("rusticl", "Mesa's rusticl (llvmpipe)", {"PYOPENCL_CTX": "rusticl", "RUSTICL_ENABLE": "llvmpipe"})]
    for run in runs:
        if only and run.name not in only:
            run.skip = "not asked for (--only)"
            continue
        if run.name == "intel":
            library = intel_library()
            if library is None:
                run.skip = ("not installed: no intel-opencl-rt wheel in this Python's environment "
                            "(pip install intel-opencl-rt intel-cmplr-lib-rt) and no INTEL_OCL_LIB")
                continue
            run.env = intel_env(library, icd_folder)
        run.device, reason = device_of(run.env)
        if reason:
            run.skip = f"no device: {reason}"
            if run.name == "rusticl" and "rusticl" in reason:
                run.skip += " (Debian: apt-get install mesa-opencl-icd)"
            if run.name == "intel":    # the library did not load: its runtime libraries (libimf.so)
                run.skip += " (libintelocl.so needs intel-cmplr-lib-rt's libraries beside it)"
    return runs


def counts(text):
    """{'passed': n, 'failed': n, ...} from pytest's last summary line."""
    found = {}
    for line in reversed(text.strip().splitlines()):
        pairs = re.findall(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)", line)
        if pairs:
            for n, what in pairs:
                found["error" if what.startswith("error") else what] = int(n)
            break
    return found


def run_notebooks(run, notebooks, workers):
    """(counts, seconds, log path) of nbval over `notebooks` with the run's environment."""
    LOGS.mkdir(parents=True, exist_ok=True)
    log = LOGS / f"{run.name}.log"
    dist = ["-n", str(workers), "--dist", "loadscope"] if workers > 0 else ["-n", "0"]
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *dist, *notebooks,
           "--nbval-lax", "--nbval-current-env"]
    env = {**os.environ, "GPUBOOK_SCALE": "small", **run.env}
    start = time.perf_counter()
    with open(log, "w") as out:
        subprocess.run(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - start
    return counts(log.read_text(errors="replace")), seconds, log


def line(run, found, seconds):
    parts = [f"{found.get(k, 0)} {k}" for k in ("passed", "failed")]
    parts += [f"{found[k]} {k}" for k in ("error", "skipped") if found.get(k)]
    return f"{run.label}: {', '.join(parts)} in {seconds:.0f} s ({run.device})"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", help="default: every notebook")
    parser.add_argument("--only", nargs="+", choices=["pocl-32", "pocl-16", "intel", "rusticl"])
    parser.add_argument("--workers", type=int, default=int(os.environ.get("TEST_WORKERS", 2)))
    args = parser.parse_args(argv)
    notebooks = args.notebooks or sorted(str(p.relative_to(ROOT)) for p in (ROOT / "notebooks").glob("*.ipynb"))
    failed = False
    with tempfile.TemporaryDirectory() as icd_folder:
        for run in discover(icd_folder, args.only):
            if run.skip:
                print(f"{run.label}: skipped, {run.skip}", flush=True)
                continue
            found, seconds, log = run_notebooks(run, notebooks, args.workers)
            print(line(run, found, seconds) + f"; log {log.relative_to(ROOT)}", flush=True)
            failed |= bool(found.get("failed") or found.get("error") or not found)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
