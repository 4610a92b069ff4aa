"""The roofline of chapter 9: every recorded step at its arithmetic intensity,
under its device's copy-bandwidth roof and arithmetic peak, from results/ alone.

INTENSITY says, per record file, how many flops a step does per byte of its
compulsory traffic and how its figure becomes GFLOP/s; `roofline` places one
device's steps (and the vendor figures for the same jobs) against its chapter-0
limits, with the tensor cores' roofs where chapter 0 measured them (its mma
loops, NVIDIA only), `discussed` picks the points the chapter's text names, and
`roofline_rows` lists the points near their roof.
"""
from ...flops import qr_flops
from .records import (CHAPTERS, FP64, fmt, limits, mma_kind, mma_roof, name, pct, step_figures,
                      vendor_figure)


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


def _peak(chapter, step, roofs):
    """The arithmetic roof of one step: FP64 or FP32 on the FMA units, or the tensor
    cores' of its precision where `mma_kind` holds the step against them and chapter 0
    measured them."""
    fma = roofs["FP64 GFLOP/s" if chapter.limit is FP64 else "FP32 GFLOP/s"]
    kind = mma_kind(chapter, step)
    mma = roofs["FP64 mma GFLOP/s" if kind == "f64" else "TF32 mma GFLOP/s"] if kind else None
    return mma if mma is not None else fma


def roofline(records):
    """One device's roofline: ({roof: GFLOP/s or GB/s, None where not measured},
    [points]); each point is a dict of chapter, step, ai (flop/byte), gflops,
    roof (the lower of the bandwidth roof at that intensity and the step's
    arithmetic peak: the tensor cores' for a step on them) and vendor."""
    lim = limits(records)
    if lim is None:
        return None, []
    fp64 = records.get("08_lsq", {}).get("data", {}).get("fp64_gflops")
    roofs = {"copy GB/s": lim["copy_gbs"], "FP32 GFLOP/s": lim["fp32_gflops"], "FP64 GFLOP/s": fp64,
             "TF32 mma GFLOP/s": mma_roof(records, "tf32"), "FP64 mma GFLOP/s": mma_roof(records, "f64")}
    points = []
    for c in CHAPTERS:
        if c.file not in records or c.file not in INTENSITY:
            continue
        ai_of, gflops_of, _ = INTENSITY[c.file]
        d = records[c.file]["data"]
        found = [(s, s, f, False) for s, f in step_figures(c, records).items()]
        for k, vendor in enumerate(c.vendors if found else ()):  # the vendor's call does the last step's job
            v = vendor_figure(c, records, vendor.figure)
            if v is not None:
                found.append((vendor.figure, found[-1][0], v, "same job" if k == 0 else "second line"))
        for label, step, figure, vendor in found:
            ai, peak = ai_of(d, step), _peak(c, label, roofs)
            if ai is None or peak is None:
                continue
            g = gflops_of(d, step, figure)
            roof = min(lim["copy_gbs"] * ai, peak)
            points.append({"chapter": c.title, "step": label, "ai": ai, "gflops": g, "roof": roof,
                           "share": g / roof, "vendor": vendor})
    return roofs, points


# The roofline points the text discusses: (chapter file, steps, label, where the label goes
# in points from the point); the first of `steps` that a device has is labelled, so a
# vendor figure doing the same job replaces its PyTorch second line.
DISCUSSED = [
    ("01_loop_order", ("merged",), "ch1 merged", (6, -12)),
    ("03_device_reduction", ("5 unrolled",), "ch3 sum", (-10, 10)),
    ("03_device_reduction", ("cub_sum", "sum"), "CUB sum", (8, -14)),
    ("05_transpose", ("scores: cols",), "ch5 scores by columns", (-20, 14)),
    ("05_transpose", ("iteration: fused",), "ch5 fused iteration", (8, -4)),
    ("06_covariance", ("register tiles",), "ch6 register tiles", (-40, 10)),
    ("06_covariance", ("syrk", "xtx"), "cuBLAS SSYRK", (-30, -16)),
    ("07_scan", ("4 single pass",), "ch7 scan", (-12, -16)),
    ("08_lsq", ("5 tiled",), "ch8 tiled QR", (8, -10)),
]
_SECOND = {"sum": "CUB sum through torch.sum", "xtx": "cuBLAS GEMM through torch.matmul"}


def discussed(records):
    """[(label, offset, point)] of the DISCUSSED points a device has."""
    titles = {c.title: c.file for c in CHAPTERS}
    points = {(titles[p["chapter"]], p["step"]): p for p in roofline(records)[1]}
    out = []
    for file, alternatives, label, offset in DISCUSSED:
        step = next((s for s in alternatives if (file, s) in points), None)
        if step is not None:
            out.append((_SECOND.get(step, label), offset, points[file, step]))
    return out


def roofline_rows(results, at_least=0.9):
    """The points at or above `at_least` of their roof, on every device."""
    rows = [["device", "chapter", "step", "flop/byte", "GFLOP/s", "share of its roof"]]
    for r in results.values():
        for p in roofline(r)[1]:
            if p["share"] >= at_least:
                rows.append([name(r), p["chapter"], p["step"] + (f" (vendor, {p['vendor']})" if p["vendor"] else ""),
                             f"{p['ai']:.3g}", fmt(p["gflops"]), pct(p["share"])])
    return rows
