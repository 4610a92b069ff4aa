"""The GPU vendor's own libraries on this device: the anchors the book's kernels
are measured against.

On an NVIDIA GPU host, each figure calls the vendor's code for the chapter's
job, timed with CUDA events on the same GPU as the chapter's OpenCL device, in
the same run, and recorded in results/<device>/vendor.json with `what`, the
exact call:

- the same job: cuBLAS SSYRK through CuPy (`syrk`: XᵀX's lower triangle, as
  chapter 6 computes it), and CUB's DeviceReduce::Sum and
  DeviceScan::InclusiveSum called directly (`cub_sum`, `cub_scan`) from a small
  CUDA program, gpubook/vendor_cub.cu, built here with `nvcc -O3 -arch=native`
  (CuPy's own CUB bindings when there is no nvcc);
- second lines, through PyTorch: `torch.sum` and `torch.cumsum` (CUB inside
  PyTorch), a full float32 product (`torch.matmul`, cuBLAS GEMM), the same
  product with TF32 tensor cores allowed (`xtx_tf32`, beside chapter 6's
  tensor-core step), cuSOLVER's QR, and a pinned host→device copy.

Anywhere else `measure` says in one line why it measured nothing and returns
None; `recorded` then gives the figures stored from the reference devices' runs.

From a chapter, `measure` runs the libraries in a child process of their own
(`APART`), so that the chapter's own timings share their process with no CUDA
context. Once, on an H100, one did cost wall time: tools/probe_tall.py measured
part 8.3's tall case at 6.49 ms alone and 8.91 ms beside a CuPy context, on the
same device time (2026-11-27; tools/probe_gaps.py found no such cost on the next
hosts, where setting the kernels' arguments was the host's larger cost).

    python -m gpubook.vendor          measure every figure on this host's GPU
                                      (recorded when GPUBOOK_RECORD=1)
    python -m gpubook.vendor syrk cub_sum cub_scan     only these
    python -m gpubook.vendor --compare-cub             CUB called directly against CuPy's
                                                       bindings of it (nothing recorded)
"""
import datetime
from dataclasses import dataclass

from . import vendor_apart, vendor_cub
from .vendor_apart import first_line as _first_line
from .vendor_gpus import cuda_index, cupy_index, not_nvidia as _not_nvidia, same_gpu as _same_gpu
from .vendor_calls import CUPY_CUB, cuda_timing, cupy_timing, cupy_workload, torch_workload
from .records import device_slug, load_results, record
from .scale import scale as scale_for
from .timing import stats

CHAPTER = "vendor"
APART = True          # measure in a child process (see the module's note); tests turn it off


@dataclass(frozen=True)
class Figure:
    """One vendor figure: what runs, how its rate is counted, its default shapes."""
    label: str        # what the reader sees, library first
    unit: str         # unit of `rate`
    full: tuple       # shape at full scale
    small: tuple      # shape at small scale
    repeats: int
    way: str = "torch"  # what calls it: "torch", "cupy" or "cub" (the nvcc program, else CuPy's bindings)
    what: str = ""      # the exact call, recorded with the figure


FIGURES = {
    # the same jobs as the chapters: every ratio to a vendor in the prose is to these
    "syrk": Figure("cuBLAS SSYRK, lower (cupy.cublas.syrk), float32", "TFLOP/s (m·n·(n+1))",
                   (131_072, 4_096), (8_192, 512), 10, "cupy",
                   "cupy.cublas.syrk('T', x, out=c, lower=True) with x (m, n) and c (n, n) C-contiguous float32: "
                   "cublasSsyrk(uplo=UPPER, trans=N, n, k=m, lda=n, ldc=n) on the column-major view, "
                   "which is the lower triangle of XᵀX row-major"),
    "cub_sum": Figure("CUB DeviceReduce::Sum, called directly, float32", "GB/s read",
                      (2**28,), (2**22,), 20, "cub",
                      "cub::DeviceReduce::Sum(temp, bytes, in, out, n) on float32 (gpubook/vendor_cub.cu)"),
    "cub_scan": Figure("CUB DeviceScan::InclusiveSum, called directly, float32", "GB/s read + written",
                       (2**28,), (2**22,), 20, "cub",
                       "cub::DeviceScan::InclusiveSum(temp, bytes, in, out, n) on float32, out of place "
                       "(gpubook/vendor_cub.cu)"),
    # second lines, through PyTorch
    "sum": Figure("CUB sum (torch.sum), float32", "GB/s read", (2**28,), (2**22,), 20, "torch",
                  "torch.sum(x) on float32"),
    "cumsum": Figure("CUB inclusive scan (torch.cumsum), float32", "GB/s read + written",
                     (2**28,), (2**22,), 20, "torch", "torch.cumsum(x, 0, out=y) on float32"),
    "xtx": Figure("cuBLAS XᵀX (torch.matmul), float32, no TF32", "TFLOP/s (2·m·n²)",
                  (131_072, 4_096), (8_192, 512), 10, "torch",
                  "torch.matmul(x.T, x, out=c) on float32 with allow_tf32=False (a full GEMM)"),
    # the same GEMM on the TF32 tensor cores: cuBLAS has no TF32 SYRK that PyTorch or CuPy call
    "xtx_tf32": Figure("cuBLAS XᵀX (torch.matmul), TF32 tensor cores", "TFLOP/s (2·m·n²)",
                       (131_072, 4_096), (8_192, 512), 10, "torch",
                       "torch.matmul(x.T, x, out=c) on float32 with torch.backends.cuda.matmul.allow_tf32=True: "
                       "a full GEMM whose products cuBLAS may run on TF32 tensor cores (10-bit mantissas), "
                       "accumulated in float32"),
    # R only (cuSOLVER's geqrf), the factor that least squares and chapter 8's
    # row updates need; forming Q too costs about a quarter more time on an H200.
    "qr": Figure("cuSOLVER QR, R only (torch.linalg.qr, mode='r'), float64", "GFLOP/s (2·m·n² − 2n³/3)",
                 (25_000, 5_000), (2_000, 400), 5, "torch", "torch.linalg.qr(a, mode='r') on float64"),
    "h2d": Figure("host→device copy from pinned memory (Tensor.copy_)", "GB/s",
                  (2**28,), (2**22,), 10, "torch", "dst.copy_(pinned_host, non_blocking=True) on float32"),
}


def base(figure):
    """A figure's name without its tag: "qr@2" (one of several shapes of one figure
    measured together, `measure_each`) is "qr"."""
    return figure.split("@")[0]


def amount(figure, shape):
    """The work of one call in the unit of the figure's rate (GB, TFLOP, GFLOP)."""
    figure = base(figure)
    if figure in ("sum", "cub_sum"):
        return 4 * shape[0] / 1e9
    if figure in ("cumsum", "cub_scan"):
        return 8 * shape[0] / 1e9
    if figure == "syrk":    # the lower triangle with its diagonal: n(n+1)/2 dot products of length m
        m, n = shape
        return m * n * (n + 1) / 1e12
    if figure in ("xtx", "xtx_tf32"):
        m, n = shape
        return 2 * m * n * n / 1e12
    if figure == "qr":          # (m, n), or (m, n, cond, seed) for a chapter's matrix of condition cond
        m, n = shape[:2]
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


def _import_cupy():
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def _say(line, quiet):
    if not quiet:
        print(f"vendor libraries: {line}")


def _entry(figure, shape, t, error, label=None, what=None, **versions):
    """One figure's record: its call, its time (median, 20-80%), rate and error."""
    work, figure = amount(figure, shape), base(figure)
    return {"figure": figure, "label": label or FIGURES[figure].label, "unit": FIGURES[figure].unit,
            "what": what or FIGURES[figure].what, "shape": list(shape),
            "median_s": t.median, "q20_s": t.q20, "q80_s": t.q80,
            "rate": work / t.median, "rate_lo": work / t.q80, "rate_hi": work / t.q20,
            "rel_error": error, "date": datetime.date.today().isoformat(), **versions}


def _measure_one(torch, figure, shape, dev, repeats):
    run, check, *untimed = torch_workload(torch, base(figure), shape, dev)  # untimed: more checks, after the timing
    t = cuda_timing(torch, run, repeats)
    torch.cuda.synchronize()
    error, more = check(), (untimed[0]() if untimed else {})
    return _entry(figure, shape, t, error, torch=torch.__version__, cuda=torch.version.cuda, **more)


def _with_torch(device, figures, shapes, size):
    """The PyTorch figures: ({figure: entry}, the reason for those not measured or None)."""
    torch = _import_torch()
    index, why = cuda_index(device, torch)
    if index is None:
        return {}, why
    dev = torch.device("cuda", index)
    tf32 = torch.backends.cuda.matmul.allow_tf32
    found = {}
    try:
        with torch.cuda.device(index):
            for f in figures:  # full float32 products, as OpenCL's, but where the figure is TF32's
                torch.backends.cuda.matmul.allow_tf32 = base(f).endswith("_tf32")
                shape = tuple(shapes.get(f, getattr(FIGURES[base(f)], size)))
                found[f] = _measure_one(torch, f, shape, dev, FIGURES[base(f)].repeats)
                torch.cuda.empty_cache()
    except RuntimeError as err:  # out of memory, a driver error: say so, keep the chapter going
        return found, f"measuring failed on {device.name.strip()}: {_first_line(err)}"
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    return found, None


def _with_cupy(device, figures, shapes, size):
    """The figures CuPy calls (cuBLAS SSYRK; CUB through CuPy's bindings)."""
    cupy = _import_cupy()
    index, why = cupy_index(device, cupy)
    if index is None:
        return {}, why
    found = {}
    try:
        with cupy.cuda.Device(index):
            versions = {"cupy": cupy.__version__,
                        "cuda": vendor_cub.version_name(cupy.cuda.runtime.runtimeGetVersion())}
            for f in figures:
                shape = tuple(shapes.get(f, getattr(FIGURES[f], size)))
                run, check, prepare = cupy_workload(cupy, f, shape)
                t = cupy_timing(cupy, run, FIGURES[f].repeats, prepare=prepare)
                cupy.cuda.runtime.deviceSynchronize()
                label, what = CUPY_CUB.get(f, (None, None))
                found[f] = _entry(f, shape, t, check(), label, what, **versions)
                cupy.get_default_memory_pool().free_all_blocks()
    except Exception as err:  # noqa: BLE001 - out of memory, a library error: say so, keep the chapter going
        return found, f"measuring failed on {device.name.strip()}: {_first_line(err)}"
    return found, None


def _with_nvcc(device, figures, shapes, size):
    """CUB's own functions called directly, from gpubook/vendor_cub.cu built with nvcc."""
    exe, why = vendor_cub.build(gpu=device.name.strip())
    if exe is None:
        return {}, why
    found = {}
    try:
        index, why = _same_gpu(device, vendor_cub.devices(exe), "vendor_cub")
        if index is None:
            return {}, why
        for f in figures:
            shape = tuple(shapes.get(f, getattr(FIGURES[f], size)))
            out = vendor_cub.run(exe, "sum" if f == "cub_sum" else "scan", shape[0], FIGURES[f].repeats, index)
            found[f] = _entry(f, shape, stats([ms * 1e-3 for ms in out["ms"]]), out["rel_error"],
                              cub=out["cub"], cuda=out["cudart"], nvcc=" ".join(vendor_cub.NVCC_FLAGS))
    except vendor_cub.CubError as err:
        return found, f"{err} on {device.name.strip()}"
    return found, None


def _with_cub(device, figures, shapes, size, way=None):
    """CUB called directly (nvcc); CuPy's bindings of it where nvcc cannot build or
    run the program. way: "nvcc" or "cupy" to use only that one."""
    if way == "cupy":
        return _with_cupy(device, figures, shapes, size)
    found, why = _with_nvcc(device, figures, shapes, size)
    if why is None or way == "nvcc":
        return found, why
    more, why_cupy = _with_cupy(device, [f for f in figures if f not in found], shapes, size)
    found.update(more)
    return found, (None if why_cupy is None else f"{why}; {why_cupy}")


WAYS = {"torch": _with_torch, "cupy": _with_cupy, "cub": _with_cub}


def measure(device, figures=tuple(FIGURES), shapes=None, scale=None, quiet=False, cub_way=None,
            apart=None):
    """Measure vendor figures on the GPU that the OpenCL `device` is.

    figures: names from FIGURES. shapes: {figure: shape} for a chapter's own
    problem; others take the scale's default. Returns {figure: entry} with the
    exact call (`what`), the time (median, 20-80%), the rate in the figure's
    unit, the relative error of the result against float64, and the date; None,
    after one line saying why, when nothing could be measured here. Figures
    whose library is missing are left out and named in that line. Never raises
    for a missing or failing library: a chapter must run on every device.
    cub_way: "nvcc" or "cupy" forces how CUB is called (for comparing the two;
    nothing is recorded then). apart: measure in a child process (default
    `APART`), so that no CUDA context stays in this one.
    """
    figures = [figures] if isinstance(figures, str) else list(figures)
    for f in figures:
        amount(f, (1, 1))  # unknown names fail here, before any GPU work
    if cub_way not in (None, "nvcc", "cupy"):
        raise ValueError(f"cub_way is 'nvcc' or 'cupy', not {cub_way!r}")
    if "nvidia" not in device.vendor.lower():
        _say(_not_nvidia(device), quiet)
        return None
    size = scale or scale_for(device)
    shapes = {f: tuple(s) for f, s in (shapes or {}).items()}
    apart = APART if apart is None else apart
    found, missing = (vendor_apart.measure if apart else _here)(device, figures, shapes, size, cub_way)
    found = {f: found[f] for f in figures if f in found}
    if not found:
        _say("; ".join(missing), quiet)
        return None
    calls = sorted({k + " " + str(e[k]) for e in found.values() for k in ("torch", "cupy", "cub") if k in e})
    names = ", ".join(dict.fromkeys(base(f) for f in found))
    _say(f"measured {names} on {device.name.strip()} in this run ({', '.join(calls)})"
         + (f"; {'; '.join(missing)}" if missing else ""), quiet)
    # vendor.json keeps the standard shapes only; a chapter records its own shapes itself
    standard = {f: e for f, e in found.items() if f in FIGURES and tuple(e["shape"]) == getattr(FIGURES[f], size)}
    if standard and cub_way is None:
        save(device, size, standard)
    return found


def measure_each(device, figure, shapes, quiet=False, apart=None):
    """One figure that PyTorch calls ("qr"), at each of `shapes` (a chapter's own
    matrices), in one process: [entry or None] in the order of `shapes`, or None
    after one line saying why nothing was measured (as `measure`). Nothing is saved
    to vendor.json: the chapter records what it measured."""
    if FIGURES[figure].way != "torch":
        raise ValueError(f"measure_each times the figures that PyTorch calls, not {figure!r}")
    tags = [f"{figure}@{i}" for i in range(len(shapes))]
    found = measure(device, tags, shapes=dict(zip(tags, shapes)), quiet=quiet, apart=apart)
    return None if found is None else [found.get(t) for t in tags]


def _here(device, figures, shapes, size, cub_way):
    """Measure in this process: ({figure: entry}, [why each missing group is missing])."""
    found, missing = {}, []
    for way, measure_with in WAYS.items():
        group = [f for f in figures if FIGURES[base(f)].way == way]
        if not group:
            continue
        extra = {"way": cub_way} if way == "cub" else {}
        got, why = measure_with(device, group, shapes, size, **extra)
        found.update(got)
        if why is not None:
            missing.append(f"{why} ({', '.join(f for f in group if f not in got)} not measured)")
    return found, missing


def save(device, size, found, root=None):
    """Add measured figures to results/<device>/vendor.json (when recording is on),
    keeping the figures measured earlier that this run did not measure."""
    old = load_results(CHAPTER, root).get(device_slug(device))
    data = dict(old["data"]) if old else {}
    data.update(found)
    # not a chapter's page: no claims, and no OpenCL kernel of the process is the libraries'
    return record(CHAPTER, device, size, data, root=root, claims=False, resources=False)


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


def main(argv=None):
    """python -m gpubook.vendor [FIGURE ...] [--compare-cub]"""
    import sys

    from .device import choose_device

    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--child"]:  # measure()'s child process (vendor_apart): no OpenCL device is opened
        return vendor_apart.child(_here)
    compare = "--compare-cub" in args
    figures = [a for a in args if a != "--compare-cub"] or list(FIGURES)
    device = choose_device()
    if compare:  # CUB called directly against CuPy's bindings of it, same sizes, nothing recorded
        for way in ("nvcc", "cupy"):
            for entry in (measure(device, ("cub_sum", "cub_scan"), cub_way=way, apart=False)
                          or {}).values():
                print(f"{way}: {describe(entry)}")
        return
    for entry in (measure(device, figures, apart=False) or {}).values():
        print(describe(entry))
        print(f"    what: {entry.get('what', '(not recorded)')}")


if __name__ == "__main__":
    main()
