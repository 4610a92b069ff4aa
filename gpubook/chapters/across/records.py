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

from ...limits import MMA_KEYS
from ...flops import qr_flops
from ...records import load_results


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


MACHINE = "00_machine"  # the machine page's record

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


def inventory(results):
    """One line per device: its name and kind, how many chapter records it has and where,
    and the days they were last written (devices recorded on different days may have
    run different code)."""
    lines = []
    for slug, records in results.items():
        files = chapter_files(records)
        days = sorted({records[f]["date"] for f in files if records[f].get("date")})
        when = ("" if not days else f", written on {days[0]}" if len(days) == 1
                else f", written from {days[0]} to {days[-1]}")
        plural = "" if len(files) == 1 else "s"
        lines.append(f"{name(records)} ({kind(records)}): {len(files)} chapter record{plural} "
                     f"in results/{slug}/{when}")
    return lines


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


def at_full_scale(records, file="00_device"):
    """Whether a device's record of `file` ran at full scale: a small-scale run (the
    default on a CPU) is too short to reach the device's limits, so no share is taken
    of limits measured there."""
    entry = records.get(file)
    return bool(entry) and entry.get("scale") == "full"


def share_refusals(results):
    """One line per device whose records hold no shares because they ran at small scale:
    chapter 0 (then none of its limits was reached) or some chapters (then those chapters'
    figures are not set against the limits). [] where every record ran at full scale."""
    lines = []
    for records in results.values():
        small = [c.file for c in CHAPTERS if c.file in records and not at_full_scale(records, c.file)]
        if "00_device" in records and not at_full_scale(records):
            lines.append(f"{name(records)}: no shares of its limits, since its chapter 0 record ran at "
                         f"the {records['00_device'].get('scale', 'unknown')} scale, too short to reach "
                         "them (GPUBOOK_SCALE=full records them)")
        elif small:
            lines.append(f"{name(records)}: no shares for {', '.join(small)}, recorded at the small scale "
                         "(GPUBOOK_SCALE=full records them)")
    return lines


def _numbers(nums):
    nums = list(dict.fromkeys(nums))
    return nums[0] if len(nums) == 1 else ", ".join(nums[:-1]) + " and " + nums[-1]


def scale_note(records):
    """What scale a device's records ran at, as its records give it: chapter 0's (its
    copy and FMA loops, whose limits the shares divide by) and the chapters', grouped by
    scale in the book's order, then what that means for the shares."""
    ch0 = records.get("00_device", {}).get("scale")
    by_scale = {}
    for c in CHAPTERS:
        if c.file in records:
            by_scale.setdefault(records[c.file].get("scale", "unknown"), []).append(c.title.split(".")[0])
    parts = [f"chapter 0's copy and FMA loops at the {ch0} scale"] if ch0 else []
    parts += [f"chapter{'s' if len(set(n)) > 1 else ''} {_numbers(n)} at the {sc} scale"
              for sc, n in by_scale.items()]
    text = ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else "".join(parts)
    small = [c.file for c in CHAPTERS if c.file in records and not at_full_scale(records, c.file)]
    if not ch0:
        return text + ": it has no chapter 0 record, so no share of its limits is taken"
    if not at_full_scale(records):
        return text + ": a run that short does not reach its limits, so no share of them is taken"
    if small:
        return (text + ": runs at the small scale do not reach its limits, so the tables give "
                "those chapters' figures without a share of them")
    return text + ", so every figure is set against its limits"


# A step or vendor figure whose name holds one of these runs on the tensor cores: its
# roof is the mma loop's of its precision (where chapter 0 measured it), not the FMA chains'.
ON_TENSOR_CORES = ("tensor", "tf32", "dmma")


def on_tensor_cores(step):
    """Whether a step's (or a vendor figure's) name says it runs on the tensor cores."""
    return any(word in step.lower() for word in ON_TENSOR_CORES)


def mma_kind(chapter, step):
    """The tensor-core roof ('f64', 'tf32') a step of an arithmetic chapter is held
    against, or None: a step on the FMA units, or a chapter limited by something else."""
    if chapter.limit not in (FP64, FP32) or not on_tensor_cores(step):
        return None
    return "f64" if chapter.limit is FP64 else "tf32"


def limit_label(chapter, step, records):
    """The label of the limit a step's share is taken of: its chapter's, or the
    tensor cores' roof of its precision for a step on them where chapter 0 measured it."""
    kind = mma_kind(chapter, step)
    if kind and mma_roof(records, kind):
        return "FP64 tensor cores" if kind == "f64" else "TF32 tensor cores"
    return chapter.limit.label if chapter.limit else None


def roof(chapter, step, records):
    """The roof a step's share is taken of, in the unit of its chapter's figures: the
    tensor cores' of its precision for a step on them where chapter 0 measured it,
    the chapter's limit otherwise. None where the chapter or chapter 0 ran at small
    scale: neither the step's figure nor the limit is one a run that short reaches."""
    entry = records.get(chapter.file)
    if entry is None or not (at_full_scale(records, chapter.file) and at_full_scale(records)):
        return None
    kind = mma_kind(chapter, step)
    lim = limits(records)
    bound = chapter.limit.of(lim, entry["data"]) if chapter.limit and lim else None
    return (mma_roof(records, kind) if kind else None) or bound


def steps(chapter, records):
    """[(step, figure, share of its roof (`roof`) or None)]; [] when not recorded."""
    entry = records.get(chapter.file)
    if entry is None:
        return []
    return [(s, v, v / r if (r := roof(chapter, s, records)) else None)
            for s, v in chapter.steps(entry["data"])]


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
    """[(chapter, headline on a / on b, limit on a / on b)] for chapters both devices
    recorded; no limit ratio where the two last steps are held against different roofs."""
    out = []
    for c in present(results):
        ha, hb = headline(c, results[a]), headline(c, results[b])
        if ha and hb:
            la, lb = ha[1] / ha[2] if ha[2] else None, hb[1] / hb[2] if hb[2] else None
            if limit_label(c, ha[0], results[a]) != limit_label(c, hb[0], results[b]):
                la = lb = None  # one on the tensor cores, one not: no ratio of like limits
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





def with_shares(results):
    """The chapters that some device has a share of its limit for (the figure's panels)."""
    return [c for c in present(results)
            if c.limit and any(s[2] is not None for r in results.values() for s in steps(c, r))]

