"""Every chapter's recorded results side by side (chapter 9), from results/ alone.

Per device: each chapter's steps and the figure of its last one, each figure's
share of that device's own limit from chapter 0, and the vendor library's figure
for the same job where results/<device>/vendor.json holds one. Nothing here
opens an OpenCL device. CHAPTERS says, per record file, which fields are the
steps, in what unit, and which limit they are compared with; a chapter whose
record a device lacks is simply absent for that device. The roofline of every
step is in gpubook.chapters.roofline.
"""
from dataclasses import dataclass
from typing import Callable, Optional

from .lsq import qr_flops
from .machine import CHAPTER as MACHINE, edge, human_bytes
from ..limits import MMA_KEYS
from ..peaks import published_peaks
from ..records import load_results


@dataclass(frozen=True)
class Limit:
    """A device limit from chapter 0, in the unit of a chapter's figures."""
    label: str
    of: Callable  # (chapter-0 limits, the chapter's record data) -> value


@dataclass(frozen=True)
class Vendor:
    """The vendor.json figure for a chapter's job, counted in the chapter's unit."""
    figure: str      # key in vendor.json
    shape: Callable  # record data -> the shape the chapter ran (the vendor's must be the same)
    work: Callable   # record data -> work of one call in the chapter's unit (GB, GFLOP)


@dataclass(frozen=True)
class Chapter:
    """How to read one record file: its steps in order (the last is the headline).

    vendors: the vendor figures for the chapter's job, the one that does the
    same job first (cuBLAS SSYRK, CUB called directly: every ratio is to it),
    then the older PyTorch calls as second lines."""
    file: str        # results/<device>/<file>.json
    title: str
    unit: str
    steps: Callable  # record data -> [(step, figure in `unit`)]
    limit: Optional[Limit] = None
    vendors: tuple = ()

    @property
    def vendor(self):
        """The vendor figure that does the chapter's own job (the first), or None."""
        return self.vendors[0] if self.vendors else None


# A share is taken of the limit the chapter's own page measured against, as its
# record holds it (chapters 3, 5, 6, 7, 8 record it; chapter 4 its dotted line):
# chapter 0 re-run alone must not move a share that the chapter's page quotes.
# Where a record holds no limit of its own, chapter 0's record gives it.
COPY = Limit("copy bandwidth",
             lambda lim, d: d.get("copy_gbs") or d.get("summary", {}).get("copy_gbs") or lim["copy_gbs"])
FP32 = Limit("FP32 throughput", lambda lim, d: d.get("fp32_gflops") or lim["fp32_gflops"])
# Chapter 4's dotted line: training with one launch per iteration over the whole
# device can go no faster than launches are issued, nor than X (4·J·K bytes) is read.
# Chapter 0 records FP32 only; chapter 8 measures FP64 with the same FMA chains.
FP64 = Limit("FP64 throughput", lambda lim, d: d.get("fp64_gflops"))
LAUNCH = Limit("launch bound",
               lambda lim, d: d["bound"][0] if d.get("bound") else
               min(1e6 / lim["launch_us"], lim["copy_gbs"] * 1e9 / (4 * d["J"] * d["K"])))


def _lsq_steps(d):
    """Chapter 8's steps in FP64 GFLOP/s as it recorded them: the rotations
    counted as its kernels do them for steps 1-2, LAPACK's QR count for step 3."""
    return list(d["step_gflops"].items())


def _best(sweep, variant):
    """A variant's highest rate over a sweep (its best work-group size)."""
    return max(r["rate"] for r in sweep if r["variant"] == variant)


def _at_largest(records, variant, key):
    return max((r for r in records if r["variant"] == variant), key=lambda r: r[key])["rate"]


def _numbered(records, key, x):
    """[(step, rate at key == x)] of the numbered variants ('1_...', '2_...'), in order."""
    return [(r["variant"].split(",")[0].replace("_", " "), r["rate"])
            for r in records if r["variant"][0].isdigit() and r[key] == x]


TRANSPOSE_STEPS = [("scores", "rows"), ("scores", "rows4"), ("transpose", "naive"), ("transpose", "tiled"),
                   ("scores", "cols"), ("gradient", "feature"), ("gradient", "groups"),
                   ("gradient", "blocks"), ("iteration", "two kernels"), ("iteration", "fused")]

CHAPTERS = [
    Chapter("01_loop_order", "1. Loop order", "iterations/s",
            lambda d: [(r["variant"], r["rate"]) for r in d["steps"]], LAUNCH),
    Chapter("02_work_items", "2. Work-items", "iterations/s",
            lambda d: [("serial sum", _best(d["sweep"], "serial sum (step 2)"))], LAUNCH),
    Chapter("03_reduction", "3. Tree in one work-group", "iterations/s",
            lambda d: [("serial sum", _best(d["sweep"], "serial sum (step 2)")),
                       ("tree", _best(d["sweep"], "tree reduction (step 3)"))], LAUNCH),
    Chapter("03_device_reduction", "3. Device-wide sum", "GB/s read",
            lambda d: _numbered(d["sweep"], "floats", d["n"]), COPY,
            (Vendor("cub_sum", lambda d: [d["n"]], lambda d: 4 * d["n"] / 1e9),
             Vendor("sum", lambda d: [d["n"]], lambda d: 4 * d["n"] / 1e9))),
    Chapter("04_vector_types", "4. Vector types and beyond", "iterations/s",
            lambda d: [("tree", _best(d["sweep"], "tree reduction (step 3)")), ("float4", d["float4_best"]),
                       ("fastest found", d["fast_rate"])], LAUNCH),
    Chapter("05_transpose", "5. Many work-groups", "GB/s",
            lambda d: [(f"{part}: {v}", _at_largest(d[part], v, "J")) for part, v in TRANSPOSE_STEPS], COPY),
    Chapter("06_covariance", "6. Covariance", "useful GFLOP/s",
            lambda d: [(s.replace("_", " "), d["useful_gflops"][s]) for s in d["steps"]], FP32,
            (Vendor("syrk", lambda d: [d["m"], d["n"]], lambda d: d["m"] * d["n"] * (d["n"] + 1) / 1e9),
             Vendor("xtx", lambda d: [d["m"], d["n"]], lambda d: d["m"] * d["n"] * (d["n"] + 1) / 1e9))),
    Chapter("07_scan", "7. Device-wide scan", "GB/s read + written",
            lambda d: _numbered(d["scan_sweep"], "floats", d["n_scan"]), COPY,
            (Vendor("cub_scan", lambda d: [d["n_scan"]], lambda d: 8 * d["n_scan"] / 1e9),
             Vendor("cumsum", lambda d: [d["n_scan"]], lambda d: 8 * d["n_scan"] / 1e9))),
    Chapter("08_lsq", "8. Least squares by QR updates", "GFLOP/s, float64", _lsq_steps, FP64,
            (Vendor("qr", lambda d: [d["m"], d["n"]], lambda d: qr_flops(d["m"], d["n"]) / 1e9),)),
]


def load(root=None):
    """{device slug: {file: entry}} for chapter 0, vendor.json and every file of
    CHAPTERS; devices with the most copy bandwidth first, those without chapter 0 last."""
    found = {}
    for file in ["00_device", MACHINE, "vendor"] + [c.file for c in CHAPTERS]:
        for slug, entry in load_results(file, root).items():
            found.setdefault(slug, {})[file] = entry
    return dict(sorted(found.items(), key=lambda kv: -(limits(kv[1]) or {"copy_gbs": -1})["copy_gbs"]))


def limits(records):
    """A device's chapter-0 limits, or None when chapter 0 was not recorded there."""
    entry = records.get("00_device")
    return entry["data"]["limits"] if entry else None


def mma_roof(records, kind):
    """A device's tensor-core roof in GFLOP/s ('tf32' or 'f64'), chapter 0's mma
    loop as recorded; None where chapter 0 did not measure it (not NVIDIA)."""
    lim = limits(records)
    return None if lim is None else lim.get(MMA_KEYS[kind])


def name(records):
    return next(iter(records.values()))["device"]


def chapter_files(records):
    """The record files of CHAPTERS that a device has (not chapter 0, the machine or vendor.json)."""
    return [c.file for c in CHAPTERS if c.file in records]


def kind(records):
    """'GPU', 'CPU', ... as chapter 0 recorded it, else 'unknown'."""
    entry = records.get("00_device")
    return entry["data"]["summary"].get("type", "unknown") if entry else "unknown"


def by_file(file):
    """The CHAPTERS entry of a record file."""
    return next(c for c in CHAPTERS if c.file == file)


def present(results):
    """The chapters recorded on at least one device, in the book's order."""
    return [c for c in CHAPTERS if any(c.file in r for r in results.values())]


def steps(chapter, records):
    """[(step, figure, share of the device's limit or None)]; [] when not recorded."""
    entry = records.get(chapter.file)
    if entry is None:
        return []
    lim = limits(records)
    bound = chapter.limit.of(lim, entry["data"]) if chapter.limit and lim else None
    return [(s, v, v / bound if bound else None) for s, v in chapter.steps(entry["data"])]


def step_figures(chapter, records):
    """{step: figure} of a chapter on one device."""
    return {s: v for s, v, _ in steps(chapter, records)}


def headline(chapter, records):
    """(last step, figure, share) of a chapter on one device, or None."""
    found = steps(chapter, records)
    return found[-1] if found else None


def _vendor(chapter, figure):
    if figure is None:
        return chapter.vendor
    found = [v for v in chapter.vendors if v.figure == figure]
    if not found:
        raise ValueError(f"{chapter.title} has no vendor figure {figure!r}; it has "
                         f"{', '.join(v.figure for v in chapter.vendors) or 'none'}")
    return found[0]


def vendor_entry(chapter, records, figure=None):
    """The vendor.json entry of one of the chapter's vendor figures (by default the
    one doing the same job) at the chapter's shape, or None."""
    vendor = _vendor(chapter, figure)
    if vendor is None or chapter.file not in records or "vendor" not in records:
        return None
    entry = records["vendor"]["data"].get(vendor.figure)
    shape = vendor.shape(records[chapter.file]["data"])
    return entry if entry is not None and list(entry["shape"]) == list(shape) else None


def vendor_figure(chapter, records, figure=None):
    """A vendor figure (by default the one doing the chapter's own job) in the
    chapter's unit, or None where none was recorded at the chapter's shape."""
    entry = vendor_entry(chapter, records, figure)
    return None if entry is None else _vendor(chapter, figure).work(records[chapter.file]["data"]) / entry["median_s"]


def ratios(results, a, b):
    """[(chapter, headline on a / on b, limit on a / on b)] for chapters both devices recorded."""
    out = []
    for c in present(results):
        ha, hb = headline(c, results[a]), headline(c, results[b])
        if ha and hb:
            la, lb = ha[1] / ha[2] if ha[2] else None, hb[1] / hb[2] if hb[2] else None
            out.append((c, ha[1] / hb[1], la / lb if la and lb else None))
    return out


def recorded_numbers(value):
    """Every number stored in a record (its leaves), to check figures against."""
    if isinstance(value, dict):
        return set().union(*map(recorded_numbers, value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*map(recorded_numbers, value)) if value else set()
    return {value} if isinstance(value, (int, float)) and not isinstance(value, bool) else set()


def fmt(value):
    return "—" if value is None else f"{value:,.0f}" if value >= 10 else f"{value:.2g}"


def pct(share):
    return "" if share is None else f"{100 * share:,.0f}%" if share >= 0.01 else f"{100 * share:.2g}%"


# ---- tables (rows for gpubook.show.markdown_table) and the figure ----

def headline_rows(results):
    """Per chapter, the last step's figure on every device with its share of that device's limit."""
    rows = [["chapter", "last step", "unit (share of)"] + [name(r) for r in results.values()]]
    for c in present(results):
        found = [headline(c, r) for r in results.values()]
        step = next(h[0] for h in found if h)
        cells = ["—" if h is None else f"{fmt(h[1])} ({pct(h[2])})" if h[2] else fmt(h[1]) for h in found]
        rows.append([c.title, step, c.unit + (f" ({c.limit.label})" if c.limit else "")] + cells)
    return rows


def vendor_rows(results):
    """Per chapter with a vendor figure recorded on some device: one line per
    vendor figure, the one doing the chapter's own job first (named even where no
    device recorded it yet), the PyTorch calls after it; each cell the vendor's
    figure in the chapter's unit and the chapter's last step as a multiple of it."""
    devices = [r for r in results.values() if "vendor" in r]
    rows = [["chapter", "vendor library", "unit"] + [name(r) for r in devices]]
    for c in present(results):
        if not any(vendor_entry(c, r, v.figure) for r in devices for v in c.vendors):
            continue
        for k, v in enumerate(c.vendors):
            entries = [vendor_entry(c, r, v.figure) for r in devices]
            if k and not any(entries):
                continue
            label = next((e["label"] for e in entries if e), None) or vendor_label(v.figure)
            cells = []
            for r in devices:
                figure, h = vendor_figure(c, r, v.figure), headline(c, r)
                cells.append("not recorded" if figure is None else f"{fmt(figure)} (last step {h[1] / figure:.2f}×)")
            rows.append([c.title if k == 0 else "", label if k == 0 else f"second line: {label}", c.unit] + cells)
    return rows


_VENDOR_LABELS = {  # what each figure calls, for the lines no device has recorded yet
    "syrk": "cuBLAS SSYRK (cupy.cublas.syrk), lower, float32",
    "cub_sum": "CUB DeviceReduce::Sum, called directly, float32",
    "cub_scan": "CUB DeviceScan::InclusiveSum, called directly, float32",
}


def vendor_label(figure):
    """The vendor module's label of a figure, else what it calls."""
    try:  # chapter 9 reads records only: it must run where the vendor module cannot load
        from ..vendor import FIGURES
    except ImportError:
        FIGURES = {}
    known = FIGURES.get(figure)
    return known.label if known is not None else _VENDOR_LABELS.get(figure, figure)


def vendor_ratio(chapter, records):
    """(the chapter's last step over the vendor figure doing its job, that figure's
    label); where that figure is not recorded, the first second line's, labelled so."""
    for k, v in enumerate(chapter.vendors):
        figure = vendor_figure(chapter, records, v.figure)
        if figure is not None:
            label = vendor_entry(chapter, records, v.figure)["label"]
            return headline(chapter, records)[1] / figure, label if k == 0 else f"{label}, a second line"
    return None, None


def ratio_rows(results, a, b):
    """Per chapter, device a's last step over device b's, beside the ratio of their limits."""
    rows = [["chapter", "last step", f"{name(results[a])} / {name(results[b])}", "ratio of the limits"]]
    for c, ratio, limit_ratio in ratios(results, a, b):
        rows.append([c.title, headline(c, results[a])[0], f"{ratio:.2f}",
                     f"{limit_ratio:.2f} ({c.limit.label})" if limit_ratio else ""])
    return rows


LIMIT_ROWS = [  # (quantity, how to read it from chapter 0's record and the datasheet, what it decides)
    ("memory bandwidth, datasheet (GB/s)", lambda d, peaks: peaks and peaks[0],
     "the ceiling of every kernel that streams memory"),
    ("copy bandwidth, measured (GB/s, read + write)", lambda d, peaks: d["limits"]["copy_gbs"],
     "the limit of chapters 3 (sum), 5 and 7"),
    ("FP32, datasheet (GFLOP/s)", lambda d, peaks: peaks and peaks[1], "the ceiling of arithmetic"),
    ("FP32 multiply-add, measured (GFLOP/s)", lambda d, peaks: d["limits"]["fp32_gflops"],
     "the limit of chapter 6"),
    ("kernel launch, back to back (µs)", lambda d, peaks: d["limits"]["launch_us"],
     "the launch bound of chapters 1-4; short arrays"),
    ("host → device (GB/s)", lambda d, peaks: d["limits"]["h2d_gbs"], "chapter 6's streamed data"),
    ("compute units", lambda d, peaks: d["summary"]["compute units"], "chapters 1-4 run on one"),
    ("max clock (MHz)", lambda d, peaks: d["summary"]["max clock (MHz)"], "how fast that one runs"),
]


MMA_ROWS = [  # (quantity, tensor.mma_peak's kind, what it decides)
    ("TF32 mma loop, tensor cores (GFLOP/s)", "tf32", "the roof of chapter 6's steps on tensor cores"),
    ("FP64 mma loop, tensor cores (GFLOP/s)", "f64", "the roof of FP64 products on tensor cores (chapter 8)"),
]


def _measured(value):
    return "not measured" if value is None else fmt(value)


def limit_rows(results):
    """What differs between the devices: chapter 0's measured limits beside the datasheet's,
    FP64 from chapter 8, and the tensor cores' roofs where chapter 0 measured them."""
    devices = [r for r in results.values() if limits(r)]
    rows = [["quantity"] + [name(r) for r in devices] + ["what it limits"]]
    for label, read, decides in LIMIT_ROWS:
        cells = []
        for r in devices:
            data = r["00_device"]["data"]
            value = read(data, published_peaks(name(r)))
            cells.append(f"{value:,.2f}" if isinstance(value, float) and value < 100 else fmt(value or None))
        rows.append([label] + cells + [decides])
        if label.startswith("FP32 multiply-add"):  # chapter 0 has no FP64; chapter 8 measures it
            fp64 = [r.get("08_lsq", {}).get("data", {}).get("fp64_gflops") for r in devices]
            rows.append(["FP64 multiply-add, measured in chapter 8 (GFLOP/s)"] + [fmt(v) for v in fp64]
                        + ["the limit of chapter 8"])
            for label, kind, decides in MMA_ROWS:  # the tensor cores, where chapter 0 reached them
                rows.append([label] + [_measured(mma_roof(r, kind)) for r in devices] + [decides])
    rows.append(["scale of the records"] + [r["00_device"]["scale"] for r in devices] + [""])
    return rows


MACHINE_ROWS = [  # (quantity, how to read it from the machine chapter's record)
    ("latency of one load, smallest working set (ns)", lambda m: fmt(m["latency_curve"][0]["ns"])),
    ("latency of one load, device memory (ns)", lambda m: fmt(m["latency_ns"])),
    ("latency's half-way edge (working set)", lambda m: human_bytes(edge(m["latency_curve"], "ns"))),
    ("best read bandwidth, in a cache (GB/s)", lambda m: fmt(max(r["rate"] for r in m["bandwidth_curve"]))),
    ("read bandwidth, device memory (GB/s)", lambda m: fmt(m["read_gbs"])),
    ("bandwidth's half-way edge (working set)", lambda m: human_bytes(edge(m["bandwidth_curve"], "rate"))),
    ("local memory, stride 1 (GB/s)", lambda m: fmt(m["local_gbs"])),
    ("bytes in flight, whole device (Little's law)", lambda m: human_bytes(m["little"]["device_bytes"])),
    ("bytes in flight per compute unit", lambda m: human_bytes(m["little"]["per_cu_bytes"])),
]


def machine_rows(results):
    """The machine chapter's measurements on every device that recorded it: the
    latency and bandwidth curves read at their ends and edges, and Little's law.
    The header alone where no device recorded that chapter."""
    devices = [r for r in results.values() if MACHINE in r]
    rows = [["quantity"] + [name(r) for r in devices]]
    for label, read in MACHINE_ROWS:
        rows.append([label] + [read(r[MACHINE]["data"]) for r in devices])
    return rows if devices else rows[:1]


def with_shares(results):
    """The chapters that some device has a share of its limit for (the figure's panels)."""
    return [c for c in present(results)
            if c.limit and any(s[2] is not None for r in results.values() for s in steps(c, r))]


def multi_rows(root=None):
    """Chapter 10 on every host that recorded it: the devices, the covariance on
    one and on all of them with the speed-up the bounds allow, the subset
    search's speed-up, and Dask against the threads with the rows where the
    threads have them (in pinned memory; older records lack it) and through the
    same store."""
    rows = [["host's devices", "covariance, 1 device (ms)", "all devices (ms)", "speed-up (bounds allow)",
             "subset search speed-up", "Dask / threads, rows in memory", "Dask / threads, same store"]]
    for entry in load_results("10_multi_gpu", root).values():
        d, g = entry["data"], str(entry["data"]["devices"])
        cov, bound = d["covariance"], {k: max(d["compute_bound_s"][k], d["transfer_bound_s"][k]) for k in d["covariance"]}
        sub = d["subsets"]["seconds"]
        rows.append([entry["device"], fmt(cov["1"]["seconds"] * 1e3), fmt(cov[g]["seconds"] * 1e3),
                     f"{cov['1']['seconds'] / cov[g]['seconds']:.2f}× ({bound['1'] / bound[g]:.2f}×)",
                     f"{sub['1'] / sub[g]:.2f}×",
                     f"{cov[g]['seconds'] / d['dask']['held_s']:.2f}×" if "held_s" in d["dask"] else "—",
                     f"{d['dask']['store_threads_s'] / d['dask']['seconds']:.2f}×"])
    return rows
