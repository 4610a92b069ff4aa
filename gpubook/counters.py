"""Hardware counters for the book's OpenCL kernels, read by Nsight Compute.

Nsight Compute (`ncu`) does not see OpenCL kernels. It sees the CUDA driver's,
so the book replays a kernel there from the very PTX that NVIDIA's OpenCL
compiler made of its source (`program.binaries`), which keeps the kernel
identical, instruction for instruction. Three things in that PTX are OpenCL's:
- its target line says `texmode_independent`, which the CUDA driver refuses;
- work-item functions read launch values from `%envreg` registers, which the
  OpenCL driver sets (tools/probe_envreg.py, NVIDIA's 580 driver, 2026-11-27):
  %envreg0-2 the first work-group's index in x, y, z and %envreg3-5 the first
  work-item's (both 0 for a launch the driver does not split), %envreg6-8 the
  number of work-groups in x, y, z, %envreg9 the number of dimensions;
- a `__local` argument is a `.ptr .shared` parameter, which the replay gives
  as dynamic shared memory instead.
`loadable_ptx` rewrites those. A profiled kernel counts only where the replay's
time is within 10% of the OpenCL time and its output is byte for byte the same
(`trusted`); otherwise the table says the build differs and nothing is read.
"""
import csv
import io
import re
import shutil

TOLERANCE = 0.10          # |cuda_s / opencl_s - 1| within which a replay is trusted
LOCAL_SYMBOL = "gpubook_local"

PROFILE_MAX_S = 0.25      # longer replays are not profiled: ncu runs a kernel once per pass

# summary key -> the raw metric names that give it, first found wins
METRICS = {
    "duration_s": ("gpu__time_duration.sum",),
    "occupancy_pct": ("sm__warps_active.avg.pct_of_peak_sustained_active",),
    "sm_pct": ("sm__throughput.avg.pct_of_peak_sustained_elapsed",),
    "dram_pct": ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                 "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
    "l2_pct": ("lts__throughput.avg.pct_of_peak_sustained_elapsed",),
    "l1_pct": ("l1tex__throughput.avg.pct_of_peak_sustained_active",
               "l1tex__throughput.avg.pct_of_peak_sustained_elapsed"),
    "l2_hit_pct": ("lts__t_sector_hit_rate.pct",),
    "issue_pct": ("smsp__issue_active.avg.pct_of_peak_sustained_active",
                  "sm__inst_issued.avg.pct_of_peak_sustained_active"),
    "instructions": ("smsp__inst_executed.sum", "sm__inst_executed.sum"),
    "shared_ld_conflicts": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",),
    "shared_st_conflicts": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",),
    "shared_ld_wavefronts": ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",),
    "shared_st_wavefronts": ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",),
}
STALL = re.compile(r"smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")
STALL_REASONS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss",
                 "lg_throttle", "long_scoreboard", "math_pipe_throttle", "membar",
                 "mio_throttle", "misc", "no_instruction", "not_selected", "selected",
                 "short_scoreboard", "sleeping", "tex_throttle", "wait")


def metric_names():
    """Every raw metric `summary` reads, for `ncu --metrics` (names as Nsight
    Compute 2025.3 gives them on Hopper: a CSV of its sections, 2026-11-27)."""
    names = [n for group in METRICS.values() for n in group]
    return names + [f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio"
                    for r in STALL_REASONS]


class CountersError(RuntimeError):
    """A kernel's PTX cannot be replayed as it is; the message says why."""


# --- the PTX ---------------------------------------------------------------------

def _envreg_value(index, groups, work_dim):
    if 0 <= index <= 5:
        return 0
    if 6 <= index <= 8:
        return groups[index - 6] if index - 6 < len(groups) else 1
    if index == 9:
        return work_dim
    raise CountersError(f"its PTX reads %envreg{index}, whose launch value is not known")


def _entry(text, name):
    found = re.search(r"\.entry\s+" + re.escape(name) + r"\s*\((.*?)\)", text, re.S)
    if not found:
        raise CountersError(f"its PTX has no entry named {name}")
    return found


def loadable_ptx(ptx, name, groups, work_dim, local_sizes):
    """The PTX of NVIDIA's OpenCL compiler made loadable by the CUDA driver, for one
    launch of kernel `name` over `groups` work-groups per dimension.

    local_sizes: the bytes of each `__local` argument, in order. Returns
    (text, shared bytes): the dynamic shared memory the launch must ask for."""
    text = ptx.decode("utf-8", "replace") if isinstance(ptx, bytes) else ptx
    text = text.rstrip("\0\n ") + "\n"
    text = re.sub(r"(\.target\s+\w+)\s*,\s*texmode_independent", r"\1", text)
    text = re.sub(r"%envreg(\d+)",
                  lambda m: str(_envreg_value(int(m.group(1)), groups, work_dim)), text)
    entry = _entry(text, name)
    params = [p.strip() for p in entry.group(1).split(",") if p.strip()]
    shared = [p for p in params if ".ptr .shared" in p or ".ptr.shared" in p]
    if len(shared) != len(local_sizes):
        raise CountersError(f"its PTX has {len(shared)} shared parameters for "
                            f"{len(local_sizes)} __local arguments")
    if not shared:
        return text, 0
    kept = [p for p in params if p not in shared]
    head = text[:entry.start(1)] + "\n\t" + ",\n\t".join(kept) + "\n" + text[entry.end(1):]
    offset, offsets = 0, {}
    for p, size in zip(shared, local_sizes):
        align = int(re.search(r"\.align\s+(\d+)", p).group(1)) if ".align" in p else 16
        offset = -(-offset // align) * align
        offsets[p.split()[-1]] = offset
        offset += int(size)

    def load(m):
        reg, width, param = m.group(2), m.group(1), m.group(3)
        if param not in offsets:
            return m.group(0)
        return (f"mov.u{width} \t{reg}, {LOCAL_SYMBOL};\n\t"
                f"add.u{width} \t{reg}, {reg}, {offsets[param]};")

    body = re.sub(r"ld\.param\.u(32|64)\s+(%\w+),\s*\[(\w+)\];", load, head)
    declare = f".extern .shared .align 16 .b8 {LOCAL_SYMBOL}[];\n"
    at = re.search(r"^\s*(//\s*\.globl|\.visible|\.entry)", body, re.M)
    at = at.start() if at else body.index(".entry")
    return body[:at] + declare + body[at:], offset


# --- the report ------------------------------------------------------------------

def _number(text):
    text = (text or "").replace(",", "").strip()
    try:
        return float(text)
    except ValueError:
        return None


def read_csv(text):
    """The rows of `ncu --csv --page raw`, one dict per profiled kernel launch, in
    launch order: {"kernel": name, "metrics": {raw name: number}}. Lines that
    are not the CSV (the profiler's ==PROF== notes) are skipped."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if not lines:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    header, data = rows[0], rows[1:]
    if data and data[0] and data[0][0] == "":        # the units row
        data = data[1:]
    out = []
    for row in data:
        cells = dict(zip(header, row))
        metrics = {k: v for k, v in ((k, _number(v)) for k, v in cells.items())
                   if v is not None and "__" in k}
        out.append({"kernel": cells.get("Kernel Name", ""), "metrics": metrics})
    return out


def summary(metrics, stalls=4):
    """The book's counters from one launch's raw metrics: throughputs as % of peak,
    occupancy, L2 hit rate, shared-memory bank conflicts (and the share of shared
    wavefronts they add), issue-slot use, instructions, and the `stalls` largest
    warp-stall reasons with their shares of all stall cycles per issue."""
    out = {}
    for key, names in METRICS.items():
        value = next((metrics[n] for n in names if n in metrics), None)
        if value is not None:
            out[key] = value * 1e-9 if key == "duration_s" else value
    waves = out.get("shared_ld_wavefronts", 0) + out.get("shared_st_wavefronts", 0)
    conflicts = out.get("shared_ld_conflicts", 0) + out.get("shared_st_conflicts", 0)
    if waves:
        out["shared_conflict_share"] = conflicts / waves
    reasons = {m.group(1): v for k, v in metrics.items() for m in [STALL.match(k)] if m}
    reasons.pop("selected", None)      # issuing, not a stall
    total = sum(reasons.values())
    if total > 0:
        top = sorted(reasons.items(), key=lambda kv: -kv[1])[:stalls]
        out["stalls"] = {k: v / total for k, v in top}
    return out


def trusted_metrics(row):
    """A record's counters row's metrics where its replay is trusted (no `why_not`, and
    metrics taken), else None: the one test the pages' claims read counters through."""
    if not row or row.get("why_not") or "metrics" not in row:
        return None
    return row["metrics"]


def trusted(entry):
    """Why a profiled replay says nothing about the OpenCL kernel, or None when
    it does (its time within TOLERANCE of the OpenCL time, its output equal)."""
    if entry.get("error"):
        return entry["error"]
    if not entry.get("same_output"):
        return "its CUDA replay's output differs from the OpenCL output"
    ratio = entry["cuda_s"] / entry["opencl_s"]
    if abs(ratio - 1) > TOLERANCE:
        return f"its CUDA replay takes {ratio:.2f}x the OpenCL time"
    return None


# --- where counters can be taken -----------------------------------------------

def why_none_here(device):
    """One line saying why this device gives no counters, or None where it can."""
    if "NVIDIA" not in device.platform.name:
        return f"{device.name.strip()} is not an NVIDIA GPU: Nsight Compute reads only those"
    if shutil.which("ncu") is None:
        return "Nsight Compute (ncu) is not on the PATH"
    try:
        import cupy  # noqa: F401
    except ImportError:
        return "CuPy, which replays the kernel through the CUDA driver, is not installed"
    return _profiling_permitted()


def _profiling_permitted():
    try:
        with open("/proc/driver/nvidia/params") as f:
            text = f.read()
    except OSError:
        return None
    if re.search(r"RmProfilingAdminOnly:\s*1", text):
        return "the driver keeps the counters to administrators (RmProfilingAdminOnly: 1)"
    return None


def record_path(folder, notebook):
    """The chapter record (in a device's results folder) that a notebook writes:
    its own name where it exists (03_reduction), else the one record of its
    chapter's number (06_2_out_of_core -> 06_covariance, 08_3_cholqr2 -> 08_lsq)."""
    own = folder / f"{notebook}.json"
    if own.exists():
        return own
    found = sorted(folder.glob(f"{notebook[:2]}_*.json"))
    if len(found) != 1:
        raise CountersError(f"no single record of chapter {notebook[:2]} in {folder}")
    return found[0]


# --- the page --------------------------------------------------------------------

# (summary key, column heading) of the table a page shows beside a step
COLUMNS = (("occupancy_pct", "occupancy %"), ("sm_pct", "SM %"), ("dram_pct", "DRAM %"),
           ("l2_pct", "L2 %"), ("l1_pct", "L1 %"), ("l2_hit_pct", "L2 hit %"),
           ("shared_conflict_share", "bank conflicts / shared wavefronts"),
           ("issue_pct", "issue slots %"), ("stalls", "largest stall"))


def stored(chapter, device, root=None):
    """(whose, rows, why) for a page: the counters of `chapter`'s record of this
    device where it has them; else those of the first recorded device that has
    them, with `why` the one line saying why this device has none (a device that
    could take them but has not yet: "not recorded here yet")."""
    from .records import device_slug, load_results

    found = load_results(chapter, root)
    mine = found.get(device_slug(device), {})
    if mine.get("counters"):
        return mine["device"], mine["counters"], None
    why = (why_none_here(device) if hasattr(device, "platform") else None) or \
        "no counters are recorded for this device yet (tools/counters.py)"
    for entry in found.values():
        if entry.get("counters"):
            return entry["device"], entry["counters"], why
    return None, {}, why


def _cell(key, value):
    if key == "stalls":
        name, share = next(iter(value.items()))
        return f"{name.replace('_', ' ')} {100 * share:.0f}%"
    if key == "shared_conflict_share":
        return f"{100 * value:.1f}%"
    return f"{value:.0f}"


def folded(rows_table, title=None):
    """A table of `table` in a dropdown (gpubook.show.folded): the counters support a
    step's cause, which its claim states on the page."""
    from .show import counted, folded as fold, markdown_table

    kernels = len(rows_table) - 1
    return fold(markdown_table(rows_table),
                title or f"The counters, kernel by kernel ({counted(kernels, 'kernel')})")


def _reason(why):
    """A stored reason as a table shows it: without a leading exception class name
    ("CountersError: not replayed: ..." -> "not replayed: ..."); the record keeps it."""
    return re.sub(r"^[A-Za-z_]\w*(?:Error|Exception):\s*", "", why) if why else why


def table(rows, labels):
    """Rows for gb.markdown_table: one per label (a kernel label, or a
    (heading, label) pair), its counters where its replay is trusted, else the
    reason it says nothing; a label with no row says so. Never an empty table."""
    out = [["kernel", "CUDA / OpenCL time"] + [h for _, h in COLUMNS]]
    for item in labels:
        heading, label = item if isinstance(item, tuple) else (item.split(":")[-1], item)
        row = rows.get(label)
        if row is None:
            out.append([heading, "not profiled"] + [""] * len(COLUMNS))
            continue
        ratio = f"{row['cuda_s'] / row['opencl_s']:.2f}" if row.get("cuda_s") and \
            row.get("opencl_s") else ""
        if row.get("why_not") or "metrics" not in row:
            out.append([heading, ratio, _reason(row.get("why_not")) or "not profiled"]
                       + [""] * (len(COLUMNS) - 1))
            continue
        m = row["metrics"]
        out.append([heading, ratio] + [_cell(k, m[k]) if k in m else "" for k, _ in COLUMNS])
    return out
