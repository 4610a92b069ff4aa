"""Chapter 9's tables, as rows for gpubook.show.markdown_table: the last step of
every chapter on every device, the vendors' libraries, two devices against each
other, the limits and the machine's curves, and chapter 10's hosts."""
from ...curves import edge, human_bytes, middle_level
from ...peaks import published_peaks
from ...records import load_results
from .records import (MACHINE, at_full_scale, fmt, headline, limit_label, limits, mma_roof, name, pct,
                      present, ratios, vendor_entry, vendor_figure)


def headline_rows(results):
    """Per chapter, the last step's figure on every device with its share of that device's
    limit. Where the devices' records end on different steps (a record made before a
    step was added, or a variant that won on one device only), each cell names its own.
    A step on the tensor cores is held against their roof, and its cell says so."""
    rows = [["chapter", "last step", "unit (share of)"] + [name(r) for r in results.values()]]
    for c in present(results):
        found = [headline(c, r) for r in results.values()]
        named = list(dict.fromkeys(h[0] for h in found if h))
        of = [h and limit_label(c, h[0], r) for h, r in zip(found, results.values())]
        cells = ["—" if h is None else (f"{fmt(h[1])} ({pct(h[2])}"
                                        + ("" if lab == c.limit.label else f" of the {lab}") + ")"
                                        if h[2] else fmt(h[1]))
                 + ("" if len(named) == 1 else f", step {h[0]}") for h, lab in zip(found, of)]
        step = named[0] if len(named) == 1 else "differs by device (named in each cell)"
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
        from ...vendor import FIGURES
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
        step = headline(c, results[a])[0]
        rows.append([c.title, step, f"{ratio:.2f}",
                     f"{limit_ratio:.2f} ({limit_label(c, step, results[a])})" if limit_ratio else ""])
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


MEASURED = {label for label, _, _ in LIMIT_ROWS if "measured" in label or "launch" in label or "→" in label}

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
            cell = f"{value:,.2f}" if isinstance(value, float) and value < 100 else fmt(value or None)
            if value and label in MEASURED and not at_full_scale(r):
                cell += " (small scale: not a limit)"
            cells.append(cell)
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
    ("latency's middle level (ns, working sets)", lambda m: _middle(m["latency_curve"])),
    ("best read bandwidth, in a cache (GB/s)", lambda m: fmt(max(r["rate"] for r in m["bandwidth_curve"]))),
    ("read bandwidth, work-groups rotated, 1 to 8 MiB (GB/s)", lambda m: _spread(m.get("rotated_curve"))),
    ("read bandwidth, device memory (GB/s)", lambda m: fmt(m["read_gbs"])),
    ("bandwidth's half-way edge (working set)", lambda m: human_bytes(edge(m["bandwidth_curve"], "rate"))),
    ("local memory, stride 1 (GB/s)", lambda m: fmt(m["local_gbs"])),
    ("latency Little's law takes (ns; under load where timed)",
     lambda m: fmt(m["little"]["latency_ns"])),
    ("bytes in flight, whole device (Little's law)", lambda m: human_bytes(m["little"]["device_bytes"])),
    ("bytes in flight per compute unit", lambda m: human_bytes(m["little"]["per_cu_bytes"])),
]


def _middle(latency):
    """The level the machine page's latency curve holds between its smallest set's and
    device memory's (curves.middle_level, over two neighbouring sets at least; on the
    reference GPUs the L2's), or that it shows none."""
    mid = middle_level(latency, "ns")
    if not mid or mid["sets"] < 2:
        return "none"
    return f"{fmt(mid['level'])} ({human_bytes(mid['lo'])} to {human_bytes(mid['hi'])})"


def _spread(rotated):
    """The median rate of the machine page's rotated read sweep over 1 to 8 MiB working
    sets (past an L1, inside an L2), or why there is none."""
    rates = sorted(r["rate"] for r in rotated or [] if 2**20 <= r["bytes"] <= 2**23)
    if rotated is None:
        return "not recorded"
    return fmt(rates[len(rates) // 2]) if rates else "not run (CPU order)"


def machine_rows(results):
    """The machine chapter's measurements on every device that recorded it: the
    latency and bandwidth curves read at their ends and edges, and Little's law.
    The header alone where no device recorded that chapter."""
    devices = [r for r in results.values() if MACHINE in r]
    rows = [["quantity"] + [name(r) for r in devices]]
    for label, read in MACHINE_ROWS:
        rows.append([label] + [read(r[MACHINE]["data"]) for r in devices])
    return rows if devices else rows[:1]


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
