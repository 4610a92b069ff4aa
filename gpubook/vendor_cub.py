"""CUB's own device-wide sum and scan, called directly: gpubook/vendor_cub.cu,
built here with nvcc and run as a program (the vendor figures `cub_sum` and
`cub_scan` of gpubook.vendor).

`build()` compiles it once per host (`nvcc -O3 -arch=native`; CUB's templates
take a minute), `devices(exe)` lists the CUDA devices it sees, and
`run(exe, "sum" | "scan", n, repeats, index)` returns its CUDA-event timings.
Every failure is a CubError with one line that says what went wrong.
"""
import hashlib
import os
import pathlib
import shutil
import subprocess
import tempfile

SOURCE = pathlib.Path(__file__).with_name("vendor_cub.cu")
NVCC_FLAGS = ("-O3", "-arch=native")


class CubError(RuntimeError):
    """vendor_cub could not be built or run; the message says why in one line."""


def nvcc():
    """The nvcc to build with (PATH, then CUDA_HOME, CUDA_PATH, /usr/local/cuda), or None."""
    found = shutil.which("nvcc")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and (pathlib.Path(home) / "bin" / "nvcc").is_file():
            return str(pathlib.Path(home) / "bin" / "nvcc")
    return None


def _cache_dir():
    """Where the built program is kept between runs: this user's cache, else a fresh temporary folder."""
    base = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "gpubook"
    try:
        base.mkdir(parents=True, exist_ok=True)
        return base
    except OSError:
        return pathlib.Path(tempfile.mkdtemp(prefix="gpubook-"))


def _run(cmd, timeout):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def _first_line(text, fallback):
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    return lines[0] if lines else fallback


def build(compiler=None, gpu=""):
    """(path of the built program, None), or (None, the reason there is none).

    The program is kept under a name made from the source, nvcc's version, the
    flags and `gpu` (the GPU's name: -arch=native builds for the GPU it finds),
    so a host builds it once."""
    compiler = compiler or nvcc()
    if compiler is None:
        return None, "nvcc is not on PATH nor in CUDA_HOME, so CUB cannot be called directly"
    try:
        version = _run([compiler, "--version"], 60).stdout
        key = hashlib.sha256(SOURCE.read_bytes() + "\n".join([version, *NVCC_FLAGS, gpu]).encode())
        exe = _cache_dir() / f"vendor_cub-{key.hexdigest()[:16]}"
        if exe.is_file():
            return exe, None
        part = exe.with_name(f"{exe.name}.{os.getpid()}.part")
        done = _run([compiler, *NVCC_FLAGS, "-o", str(part), str(SOURCE)], 900)
    except (OSError, subprocess.SubprocessError) as err:
        return None, f"nvcc could not run: {_first_line(err, type(err).__name__)}"
    if done.returncode != 0:
        text = done.stderr + "\n" + done.stdout
        errors = [line for line in text.splitlines() if "error" in line.lower()]
        why = errors[0].strip() if errors else _first_line(text, f"exit status {done.returncode}")
        return None, f"nvcc could not build gpubook/vendor_cub.cu: {why}"
    os.replace(part, exe)
    return exe, None


def parse_devices(text):
    """`vendor_cub list` lines ("device INDEX PCI_BUS NAME") -> [(index, name, PCI bus)]."""
    gpus = []
    for line in text.splitlines():
        parts = line.strip().split(" ", 3)
        if len(parts) == 4 and parts[0] == "device":
            gpus.append((int(parts[1]), parts[3], int(parts[2])))
    return gpus


def version_name(code):
    """CUB_VERSION (MMMmmmpp, e.g. 300100) or CUDART_VERSION (e.g. 13000) as text."""
    code = int(code)
    if code >= 100000:
        return f"{code // 100000}.{code // 100 % 1000}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 10}"


def parse_run(text):
    """The program's lines -> {'ms': [per repeat], 'rel_error': e, 'cub': 'x.y.z', 'cudart': 'x.y'}."""
    out = {"ms": []}
    for line in text.splitlines():
        key, _, value = line.strip().partition(" ")
        if key == "ms":
            out["ms"].append(float(value))
        elif key == "rel_error":
            out["rel_error"] = float(value)
        elif key in ("cub", "cudart"):
            out[key] = version_name(value)
    if not out["ms"] or "rel_error" not in out:
        raise CubError(f"vendor_cub printed no timings: {text.strip()[:200]!r}")
    return out


def devices(exe):
    """[(CUDA index, name, PCI bus)] of the devices the program sees."""
    try:
        done = _run([str(exe), "list"], 120)
    except (OSError, subprocess.SubprocessError) as err:
        raise CubError(f"vendor_cub could not run: {_first_line(err, type(err).__name__)}") from None
    if done.returncode != 0:
        raise CubError("vendor_cub found no CUDA device: "
                       f"{_first_line(done.stderr + done.stdout, f'exit status {done.returncode}')}")
    return parse_devices(done.stdout)


def run(exe, op, n, repeats, index):
    """Time CUB's sum ("sum") or inclusive scan ("scan") of n floats on CUDA device `index`."""
    if op not in ("sum", "scan"):
        raise ValueError(f"op is 'sum' or 'scan', not {op!r}")
    if not 1 <= n < 2**31:
        raise ValueError(f"vendor_cub takes 1 to 2**31 - 1 floats, not {n}")
    try:
        done = _run([str(exe), op, str(int(n)), str(int(repeats)), str(int(index))], 600)
    except (OSError, subprocess.SubprocessError) as err:
        raise CubError(f"vendor_cub {op} could not run: {_first_line(err, type(err).__name__)}") from None
    if done.returncode != 0:
        raise CubError(f"vendor_cub {op} failed: "
                       f"{_first_line(done.stderr + done.stdout, f'exit status {done.returncode}')}")
    return parse_run(done.stdout)
