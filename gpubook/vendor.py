"""The GPU vendor's own libraries on this device: the anchors the book's kernels
are measured against.

On an NVIDIA GPU host whose Python has PyTorch with CUDA, PyTorch calls the
vendor's libraries: `torch.sum` and `torch.cumsum` run CUB's reduction and scan,
a float32 matrix product runs cuBLAS, `torch.linalg.qr` runs cuSOLVER. `measure`
times them with CUDA events on the same GPU as the chapter's OpenCL device, in
the same run, and records them in results/<device>/vendor.json. Anywhere else
it says in one line why it measured nothing and returns None; `recorded` then
gives the figures stored from the reference devices' runs.

    python -m gpubook.vendor          measure every figure on this host's GPU
                                      (recorded when GPUBOOK_RECORD=1)
"""
import datetime
from dataclasses import dataclass

from .records import device_slug, load_results, record
from .scale import scale as scale_for
from .timing import stats

CHAPTER = "vendor"


@dataclass(frozen=True)
class Figure:
    """One vendor figure: what runs, how its rate is counted, its default shapes."""
    label: str        # what the reader sees, library first
    unit: str         # unit of `rate`
    full: tuple       # shape at full scale
    small: tuple      # shape at small scale
    repeats: int


FIGURES = {
    "sum": Figure("CUB sum (torch.sum), float32", "GB/s read", (2**28,), (2**22,), 20),
    "cumsum": Figure("CUB inclusive scan (torch.cumsum), float32", "GB/s read + written",
                     (2**28,), (2**22,), 20),
    "xtx": Figure("cuBLAS XᵀX (torch.matmul), float32, no TF32", "TFLOP/s (2·m·n²)",
                  (131_072, 4_096), (8_192, 512), 10),
    # R only (cuSOLVER's geqrf), the factor that least squares and chapter 8's
    # row updates need; forming Q too costs about a quarter more time on an H200.
    "qr": Figure("cuSOLVER QR, R only (torch.linalg.qr, mode='r'), float64", "GFLOP/s (2·m·n² − 2n³/3)",
                 (25_000, 5_000), (2_000, 400), 5),
    "h2d": Figure("host→device copy from pinned memory (Tensor.copy_)", "GB/s",
                  (2**28,), (2**22,), 10),
}


def amount(figure, shape):
    """The work of one call in the unit of the figure's rate (GB, TFLOP, GFLOP)."""
    if figure == "sum":
        return 4 * shape[0] / 1e9
    if figure == "cumsum":
        return 8 * shape[0] / 1e9
    if figure == "xtx":
        m, n = shape
        return 2 * m * n * n / 1e12
    if figure == "qr":
        m, n = shape
        return (2 * m * n * n - 2 * n**3 / 3) / 1e9
    if figure == "h2d":
        return 4 * shape[0] / 1e9
    raise ValueError(f"unknown vendor figure {figure!r}; use one of {', '.join(FIGURES)}")


def _import_torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _say(line, quiet):
    if not quiet:
        print(f"vendor libraries: {line}")


def cuda_index(device, torch):
    """The CUDA index of the GPU that the OpenCL `device` is, or the reason there is none."""
    if "nvidia" not in device.vendor.lower():
        return None, f"{device.name.strip()} is not an NVIDIA GPU; the vendor figures cover NVIDIA's libraries"
    if torch is None:
        return None, "PyTorch is not installed here, so cuBLAS, CUB and cuSOLVER are not measured"
    if not torch.cuda.is_available():
        return None, "PyTorch has no CUDA device here"
    name = device.name.strip().lower()
    same = [i for i in range(torch.cuda.device_count())
            if torch.cuda.get_device_name(i).strip().lower() == name]
    if len(same) > 1:  # several GPUs of one model: tell them apart by PCI bus
        try:
            bus = device.pci_bus_id_nv
            same = [i for i in same if getattr(torch.cuda.get_device_properties(i), "pci_bus_id", bus) == bus]
        except Exception:  # noqa: BLE001 - no bus id on this driver: keep the first of the model
            pass
    if not same:
        return None, f"PyTorch sees no CUDA device named {device.name.strip()!r}"
    return same[0], None


def _cuda_timing(torch, fn, repeats, warmup=1):
    """Seconds per call of `fn`, timed with CUDA events around each call.

    An untimed call goes first in every repeat: it keeps the GPU busy while the
    host enqueues the events and the timed call, so the span holds the GPU's
    time for the call, not the host's time to launch it (the OpenCL events of
    the book's own kernels measure the same thing)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    seconds = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        fn()
        start.record()
        fn()
        end.record()
        end.synchronize()
        seconds.append(start.elapsed_time(end) * 1e-3)
    return stats(seconds)


def _workload(torch, figure, shape, dev):
    """(the call to time, a check returning its relative error against float64)."""
    f32, f64 = torch.float32, torch.float64
    gen = torch.Generator(device=dev).manual_seed(8)
    if figure in ("sum", "cumsum"):
        x = torch.rand(shape, device=dev, dtype=f32, generator=gen)
        if figure == "sum":
            out = {}

            def run():
                out["s"] = torch.sum(x)

            def check():
                ref = torch.sum(x, dtype=f64)
                return abs(float(out["s"]) - float(ref)) / float(ref)
            return run, check
        y = torch.empty_like(x)

        def check():
            ref = torch.cumsum(x, 0, dtype=f64)
            return float(torch.max(torch.abs(y - ref) / ref))
        return (lambda: torch.cumsum(x, 0, out=y)), check
    if figure == "xtx":
        x = torch.randn(shape, device=dev, dtype=f32, generator=gen)
        c = torch.empty(shape[1], shape[1], device=dev, dtype=f32)

        def check():
            part = x[:, :64].double()
            ref = part.T @ part
            return float(torch.max(torch.abs(c[:64, :64] - ref)) / torch.max(torch.abs(ref)))
        return (lambda: torch.matmul(x.T, x, out=c)), check
    if figure == "qr":
        a = torch.randn(shape, device=dev, dtype=f64, generator=gen)
        out = {}

        def run():
            out["r"] = torch.linalg.qr(a, mode="r").R

        def check():  # RᵀR = AᵀA, whatever the signs of R's rows
            gram = a.T @ a
            return float(torch.linalg.norm(out["r"].T @ out["r"] - gram) / torch.linalg.norm(gram))
        return run, check
    if figure == "h2d":
        host = torch.rand(shape, dtype=f32, generator=torch.Generator().manual_seed(8)).pin_memory()
        dst = torch.empty(shape, device=dev, dtype=f32)

        def check():
            return float(torch.max(torch.abs(dst.cpu() - host)))
        return (lambda: dst.copy_(host, non_blocking=True)), check
    raise ValueError(f"unknown vendor figure {figure!r}; use one of {', '.join(FIGURES)}")


def _measure_one(torch, figure, shape, dev, repeats):
    run, check = _workload(torch, figure, shape, dev)
    t = _cuda_timing(torch, run, repeats)
    torch.cuda.synchronize()
    error = check()
    work = amount(figure, shape)
    return {"figure": figure, "label": FIGURES[figure].label, "unit": FIGURES[figure].unit,
            "shape": list(shape), "median_s": t.median, "q20_s": t.q20, "q80_s": t.q80,
            "rate": work / t.median, "rate_lo": work / t.q80, "rate_hi": work / t.q20,
            "rel_error": error, "date": datetime.date.today().isoformat(),
            "torch": torch.__version__, "cuda": torch.version.cuda}


def measure(device, figures=tuple(FIGURES), shapes=None, scale=None, quiet=False):
    """Measure vendor figures on the GPU that the OpenCL `device` is.

    figures: names from FIGURES. shapes: {figure: shape} for a chapter's own
    problem; others take the scale's default. Returns {figure: entry} with the
    time (median, 20-80%), the rate in the figure's unit, the relative error
    of the result against float64, and the date; None, after one line saying
    why, when nothing could be measured here. Never raises for a missing or
    failing library: a chapter must run on every device.
    """
    figures = [figures] if isinstance(figures, str) else list(figures)
    for f in figures:
        amount(f, (1, 1))  # unknown names fail here, before any GPU work
    torch = _import_torch()
    index, why = cuda_index(device, torch)
    if index is None:
        _say(why, quiet)
        return None
    size = scale or scale_for(device)
    shapes = shapes or {}
    dev = torch.device("cuda", index)
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False  # full float32 products, as OpenCL's
    found = {}
    try:
        with torch.cuda.device(index):
            for f in figures:
                shape = tuple(shapes.get(f, getattr(FIGURES[f], size)))
                found[f] = _measure_one(torch, f, shape, dev, FIGURES[f].repeats)
                torch.cuda.empty_cache()
    except RuntimeError as err:  # out of memory, a driver error: say so, keep the chapter going
        _say(f"measuring failed on {device.name.strip()}: {str(err).splitlines()[0]}", quiet)
        return None
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    _say(f"measured {', '.join(found)} on {device.name.strip()} with PyTorch {torch.__version__} "
         f"(CUDA {torch.version.cuda}) in this run", quiet)
    # vendor.json keeps the standard shapes only; a chapter records its own shapes itself
    standard = {f: e for f, e in found.items() if tuple(e["shape"]) == getattr(FIGURES[f], size)}
    if standard:
        save(device, size, standard)
    return found


def save(device, size, found, root=None):
    """Add measured figures to results/<device>/vendor.json (when recording is on),
    keeping the figures measured earlier that this run did not measure."""
    old = load_results(CHAPTER, root).get(device_slug(device))
    data = dict(old["data"]) if old else {}
    data.update(found)
    return record(CHAPTER, device, size, data, root=root)


def recorded(figure, root=None):
    """The stored entries of one figure: {device name: entry}."""
    return {e["device"]: e["data"][figure] for e in load_results(CHAPTER, root).values()
            if figure in e["data"]}


def describe(entry, device_name=None, fmt="{:,.0f}"):
    """One line for a figure: its rate, its shape, and where it comes from."""
    shape = " × ".join(f"{s:,}" for s in entry["shape"])
    where = (f"recorded on {device_name} on {entry['date']}" if device_name
             else "measured in this run")
    return (f"{entry['label']}: {fmt.format(entry['rate'])} {entry['unit']}, "
            f"{entry['median_s'] * 1e3:,.3f} ms at {shape} ({where})")


def recorded_lines(figure, exclude=None, root=None, fmt="{:,.0f}"):
    """`describe` lines of the recorded entries of a figure, leaving out one device."""
    return [describe(e, name, fmt) for name, e in recorded(figure, root).items()
            if exclude is None or device_slug(name) != device_slug(exclude)]


def main():
    from .device import choose_device

    device = choose_device()
    for entry in (measure(device) or {}).values():
        print(describe(entry))


if __name__ == "__main__":
    main()
