"""Every chapter's recorded results side by side (chapter 9), from results/ alone.

Per device: each chapter's steps and the figure of its last one, each figure's
share of that device's own limit from chapter 0, and the vendor library's figure
for the same job where results/<device>/vendor.json holds one. Nothing here
opens an OpenCL device. CHAPTERS says, per record file, which fields are the
steps, in what unit, and which limit they are compared with; a chapter whose
record a device lacks is simply absent for that device.
"""
from dataclasses import dataclass
from typing import Callable, Optional

from .lsq import qr_flops
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
    """How to read one record file: its steps in order (the last is the headline)."""
    file: str        # results/<device>/<file>.json
    title: str
    unit: str
    steps: Callable  # record data -> [(step, figure in `unit`)]
    limit: Optional[Limit] = None
    vendor: Optional[Vendor] = None


COPY = Limit("copy bandwidth", lambda lim, d: lim["copy_gbs"])
FP32 = Limit("FP32 throughput", lambda lim, d: lim["fp32_gflops"])
# Chapter 4's dotted line: training with one launch per iteration over the whole
# device can go no faster than launches are issued, nor than X (4·J·K bytes) is read.
# Chapter 0 records FP32 only; chapter 8 measures FP64 with the same FMA chains.
FP64 = Limit("FP64 throughput", lambda lim, d: d.get("fp64_gflops"))
LAUNCH = Limit("launch bound",
               lambda lim, d: min(1e6 / lim["launch_us"], lim["copy_gbs"] * 1e9 / (4 * d["J"] * d["K"])))


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
            Vendor("sum", lambda d: [d["n"]], lambda d: 4 * d["n"] / 1e9)),
    Chapter("04_vector_types", "4. Vector types and beyond", "iterations/s",
            lambda d: [("tree", _best(d["sweep"], "tree reduction (step 3)")), ("float4", d["float4_best"]),
                       ("fastest found", d["fast_rate"])], LAUNCH),
    Chapter("05_transpose", "5. Many work-groups", "GB/s",
            lambda d: [(f"{part}: {v}", _at_largest(d[part], v, "J")) for part, v in TRANSPOSE_STEPS], COPY),
    Chapter("06_covariance", "6. Covariance", "useful GFLOP/s",
            lambda d: [(s.replace("_", " "), d["useful_gflops"][s]) for s in d["steps"]], FP32,
            Vendor("xtx", lambda d: [d["m"], d["n"]], lambda d: d["m"] * d["n"] * (d["n"] + 1) / 1e9)),
    Chapter("07_scan", "7. Device-wide scan", "GB/s read + written",
            lambda d: _numbered(d["scan_sweep"], "floats", d["n_scan"]), COPY,
            Vendor("cumsum", lambda d: [d["n_scan"]], lambda d: 8 * d["n_scan"] / 1e9)),
    Chapter("08_lsq", "8. Least squares by QR updates", "GFLOP/s, float64", _lsq_steps, FP64,
            Vendor("qr", lambda d: [d["m"], d["n"]], lambda d: qr_flops(d["m"], d["n"]) / 1e9)),
]


def load(root=None):
    """{device slug: {file: entry}} for chapter 0, vendor.json and every file of
    CHAPTERS; devices with the most copy bandwidth first, those without chapter 0 last."""
    found = {}
    for file in ["00_device", "vendor"] + [c.file for c in CHAPTERS]:
        for slug, entry in load_results(file, root).items():
            found.setdefault(slug, {})[file] = entry
    return dict(sorted(found.items(), key=lambda kv: -(limits(kv[1]) or {"copy_gbs": -1})["copy_gbs"]))


def limits(records):
    """A device's chapter-0 limits, or None when chapter 0 was not recorded there."""
    entry = records.get("00_device")
    return entry["data"]["limits"] if entry else None


def name(records):
    return next(iter(records.values()))["device"]


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


def vendor_entry(chapter, records):
    """The vendor.json entry for the chapter's job at the chapter's shape, or None."""
    if chapter.vendor is None or chapter.file not in records or "vendor" not in records:
        return None
    entry = records["vendor"]["data"].get(chapter.vendor.figure)
    shape = chapter.vendor.shape(records[chapter.file]["data"])
    return entry if entry is not None and list(entry["shape"]) == list(shape) else None


def vendor_figure(chapter, records):
    """The vendor library's figure in the chapter's unit, or None where none was recorded."""
    entry = vendor_entry(chapter, records)
    return None if entry is None else chapter.vendor.work(records[chapter.file]["data"]) / entry["median_s"]


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
    """Per chapter with a vendor figure: the vendor's figure on each device that recorded one,
    and the chapter's last step as a multiple of it."""
    devices = [r for r in results.values() if "vendor" in r]
    rows = [["chapter", "vendor library", "unit"] + [name(r) for r in devices]]
    for c in present(results):
        entries = [vendor_entry(c, r) for r in devices]
        if not any(entries):
            continue
        cells = []
        for r in devices:
            v, h = vendor_figure(c, r), headline(c, r)
            cells.append("—" if v is None else f"{fmt(v)} (last step {h[1] / v:.2f}×)")
        rows.append([c.title, next(e["label"] for e in entries if e), c.unit] + cells)
    return rows


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


def limit_rows(results):
    """What differs between the devices: chapter 0's measured limits beside the datasheet's."""
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
    rows.append(["scale of the records"] + [r["00_device"]["scale"] for r in devices] + [""])
    return rows


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


# ---- the roofline: every step at its arithmetic intensity ----

def _per_iteration(d, step, figure):
    return figure * 4 * d["J"] * d["K"] / 1e9  # 2 flops for the score, 2 for the gradient, per element of X


_TRANSPOSE_AI = {"scores": 0.5, "gradient": 0.5, "iteration": 1.0, "transpose": None}

# file: (flop per byte of the step's compulsory traffic, or None for no arithmetic;
#        its GFLOP/s from its figure; what is counted)
INTENSITY = {
    **{f: (lambda d, s: 1.0, _per_iteration,
           "an iteration: 4 flops per element of X (score and gradient), X read once (4 bytes)")
       for f in ("01_loop_order", "02_work_items", "03_reduction", "04_vector_types")},
    "03_device_reduction": (lambda d, s: 0.25, lambda d, s, f: 0.25 * f, "1 add per float read (4 bytes)"),
    "05_transpose": (lambda d, s: _TRANSPOSE_AI[s.split(":")[0]],
                     lambda d, s, f: f * (_TRANSPOSE_AI[s.split(":")[0]] or 0),
                     "2 flops per element of X for scores or gradient, 4 for an iteration, per 4 bytes of X; "
                     "a transpose does no arithmetic (off the plot)"),
    "06_covariance": (lambda d, s: d["m"] * d["n"] * (d["n"] + 1) / (4 * d["m"] * d["n"] + 4 * d["n"] ** 2),
                      lambda d, s, f: f, "the useful flops m·n·(n+1) per byte of X read and C written once"),
    "07_scan": (lambda d, s: 0.125, lambda d, s, f: 0.125 * f, "1 add per float read and written (8 bytes)"),
    "08_lsq": (lambda d, s: qr_flops(d["m"], d["n"]) / (16 * d["m"] * d["n"]), lambda d, s, f: f,
               "the QR's flops per byte of the m x n float64 matrix read and written once"),
}


def roofline(records):
    """One device's roofline: ({roof: GFLOP/s or GB/s}, [points]); each point is
    a dict of chapter, step, ai (flop/byte), gflops, roof (the lower of the
    bandwidth roof at that intensity and the arithmetic peak) and vendor."""
    lim = limits(records)
    if lim is None:
        return None, []
    fp64 = records.get("08_lsq", {}).get("data", {}).get("fp64_gflops")
    roofs = {"copy GB/s": lim["copy_gbs"], "FP32 GFLOP/s": lim["fp32_gflops"], "FP64 GFLOP/s": fp64}
    points = []
    for c in CHAPTERS:
        if c.file not in records or c.file not in INTENSITY:
            continue
        ai_of, gflops_of, _ = INTENSITY[c.file]
        d = records[c.file]["data"]
        peak = fp64 if c.limit is FP64 else lim["fp32_gflops"]
        found = [(s, s, f, False) for s, f in step_figures(c, records).items()]
        v = vendor_figure(c, records)
        if v is not None and found:  # the vendor's call does the last step's job
            found.append((c.vendor.figure, found[-1][0], v, True))
        for label, step, figure, vendor in found:
            ai = ai_of(d, step)
            if ai is None or peak is None:
                continue
            g = gflops_of(d, step, figure)
            roof = min(lim["copy_gbs"] * ai, peak)
            points.append({"chapter": c.title, "step": label, "ai": ai, "gflops": g, "roof": roof,
                           "share": g / roof, "vendor": vendor})
    return roofs, points


def roofline_rows(results, at_least=0.9):
    """The points at or above `at_least` of their roof, on every device."""
    rows = [["device", "chapter", "step", "flop/byte", "GFLOP/s", "share of its roof"]]
    for r in results.values():
        for p in roofline(r)[1]:
            if p["share"] >= at_least:
                rows.append([name(r), p["chapter"], p["step"] + (" (vendor)" if p["vendor"] else ""),
                             f"{p['ai']:.3g}", fmt(p["gflops"]), pct(p["share"])])
    return rows
