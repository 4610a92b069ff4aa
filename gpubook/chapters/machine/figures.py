"""Figures of ideas for chapters 0 and 00_machine, drawn from the device's own
numbers and from the run's measurements (white background, for the site's dark mode).

- execution_model: what the host launches (an NDRange of work-groups of
  work-items) and where it runs (a device of compute units that issue warps);
- hierarchy: each level of memory with its size and what this run measured;
- occupancy_curves: resident warps against registers and local memory, from
  gpubook.resources.occupancy for a known architecture;
- event_timeline: what an OpenCL event's QUEUED/SUBMIT/START/END stamps measure
  against the host's wall clock (chapter 0).
"""
import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch, Rectangle

from ...plot import new_figure

WHITE = {"facecolor": "white"}


def _box(ax, x, y, w, h, text=None, color="#dddddd", edge="black", size=9, va="top", lw=1.0):
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.005,rounding_size=0.01",
                                facecolor=color, edgecolor=edge, linewidth=lw))
    if text:
        ty = y + h - 0.012 if va == "top" else y + h / 2
        ax.text(x + w / 2, ty, text, ha="center", va=va, fontsize=size)


def _blank(ax):
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.axis("off")


def local_label(f):
    """A compute unit's local memory as the figure labels it: per compute unit (the data
    sheet's, where known) and the most one work-group may take (what OpenCL reports)."""
    if f.get("local_cu_kib"):
        return f"local {f['local_cu_kib']} KiB\n(≤ {f['local_kib']} KiB per group)"
    return f"local ≤ {f['local_kib']} KiB\nper group"


def cache_label(f):
    """The cache in front of global memory: the data sheet's L2 where known, and what
    OpenCL reports as its global-memory cache, for what it is."""
    from ...curves import human_bytes

    reported = f"OpenCL reports a global-memory cache of {human_bytes(f['cache_bytes'])}"
    if f.get("cache_per_cu_bytes"):
        reported += f"\n({f['compute_units']} x {human_bytes(f['cache_per_cu_bytes'])}, per compute unit)"
    if f.get("l2_bytes"):
        return f"behind an L2 of {human_bytes(f['l2_bytes'])} (data sheet);\n{reported}"
    return f"behind caches; {reported}"


def cache_lines(ax, f):
    """Vertical lines on a working-set axis: what OpenCL reports as the global-memory
    cache (dotted) and the data sheet's L2 (dashed), each labelled for what it is."""
    from ...curves import human_bytes

    lines = []
    if f.get("cache_bytes"):
        per_cu = f" = {f['compute_units']} x {human_bytes(f['cache_per_cu_bytes'])}" if f.get("cache_per_cu_bytes") else ""
        lines.append((f["cache_bytes"], ":", f"OpenCL's global-memory cache{per_cu}"))
    if f.get("l2_bytes"):
        lines.append((f["l2_bytes"], "--", f"L2, data sheet ({human_bytes(f['l2_bytes'])})"))
    for x, style, text in lines:
        _ = ax.axvline(x, color="gray", linestyle=style, linewidth=1)
        _ = ax.annotate(text, xy=(x, 0.97), xycoords=("data", "axes fraction"), fontsize=8, ha="right",
                        va="top", rotation=90)


def execution_model(f, groups_shown=12, group_size=256):
    """Two panels: the NDRange the host launches (work-groups of `group_size`
    work-items, split into warps of f['warp']) and the device that runs it
    (f: gpubook.chapters.machine.facts)."""
    fig, (left, right) = new_figure(1, 2, height=5.6, full=True, gridspec_kw={"width_ratios": [1, 1.25]})
    fig.subplots_adjust(left=0.01, right=0.99, top=0.93, bottom=0.09, wspace=0.04)
    for ax in (left, right):
        _blank(ax)
    warp, word = f["warp"], f["warp_word"]
    group_size = min(group_size, f["max_group"])
    # left: the NDRange
    left.set_title("what the host launches: an NDRange", fontsize=11)
    _box(left, 0.02, 0.50, 0.96, 0.44, f"global size = {groups_shown} work-groups x {group_size}\nwork-items (groups numbered)",
         color="#f4f4f4")
    cols = 6
    for g in range(groups_shown):
        r, c = divmod(g, cols)
        _box(left, 0.05 + c * 0.155, 0.73 - r * 0.18, 0.13, 0.11, f"{g}", color=f"C{g % 10}", size=8,
             va="center")
    _box(left, 0.02, 0.03, 0.96, 0.42, f"one work-group: {group_size} work-items "
         f"= {max(1, group_size // warp)} {word} of {warp}", color="#f4f4f4")
    rows = min(4, max(1, group_size // warp))
    lanes = min(warp, 32)
    for r in range(rows):
        for lane in range(lanes):
            left.add_patch(Rectangle((0.06 + lane * 0.027, 0.31 - r * 0.065), 0.022, 0.05,
                                     facecolor="C0" if r % 2 == 0 else "C9", edgecolor="none"))
        left.text(0.06 + lanes * 0.027 + 0.005, 0.335 - r * 0.065, f"{word} {r}", fontsize=7, va="center")
    if group_size // warp > rows:
        left.text(0.5, 0.06, f"... {group_size // warp - rows} more; each square is one work-item",
                  ha="center", fontsize=8)
    else:
        left.text(0.5, 0.06, "each square is one work-item", ha="center", fontsize=8)
    # right: the platform, the device and its compute units
    right.set_title("where it runs", fontsize=11)
    _box(right, 0.01, 0.01, 0.98, 0.97, f"platform: {f['platform']}", color="#f7f7f7")
    _box(right, 0.04, 0.04, 0.92, 0.86, f"device: {f['device']}  ({f['compute_units']} compute units)",
         color="#eef3fb")
    shown = min(3, f["compute_units"])
    for i in range(shown):
        last = i == shown - 1 and f["compute_units"] > shown
        label = f"CU {f['compute_units'] - 1}" if last else f"CU {i}"
        x = 0.07 + i * 0.3
        _box(right, x, 0.33, 0.26, 0.5, label, color="#ffffff", size=8)
        for w in range(3):
            _box(right, x + 0.015, 0.7 - w * 0.09, 0.23, 0.07, f"{word}", color=f"C{(i + 3 * w) % 10}",
                 size=7, va="center")
        _box(right, x + 0.015, 0.35, 0.23, 0.11, local_label(f), color="#fff2cc", size=7,
             va="center")
    if f["compute_units"] > shown:
        right.text(0.07 + (shown - 1) * 0.3 - 0.02, 0.58, "...", fontsize=14, ha="center")
    _box(right, 0.07, 0.07, 0.86, 0.2, f"global memory {f['global_gib']:.0f} GiB, " + cache_label(f),
         color="#e2f0d9", size=8, va="center")
    fig.text(0.5, 0.005, f"Work-groups go to compute units in an order the hardware chooses;\neach compute "
             f"unit issues one instruction for a whole {word} ({warp} work-items) at a time.",
             ha="center", fontsize=8.5)
    return fig


def hierarchy(levels, title, device_name):
    """levels: [(name, size text, bandwidth text, latency text)], fastest first:
    a ladder of widening boxes on the left, what was measured of each level on the right."""
    fig, ax = new_figure(height=0.75 * len(levels) + 1.2, full=True)
    fig.subplots_adjust(left=0.01, right=0.99, top=0.88, bottom=0.02)
    _blank(ax)
    n = len(levels)
    height = 0.88 / n
    columns = ((0.5, "size"), (0.72, "bandwidth"), (0.9, "latency"))
    for x, head in columns:
        ax.text(x, 0.96, head, ha="center", va="center", fontsize=9, fontweight="bold")
    for i, (name, *cells) in enumerate(levels):
        w = 0.22 + 0.1 * i / max(1, n - 1)
        y = 0.92 - (i + 1) * height
        _box(ax, 0.18 - w / 2, y + 0.01, w, height - 0.02, name, va="center", size=8.5,
             color=plt.get_cmap("Blues")(0.12 + 0.5 * i / n))
        for (x, _), text in zip(columns, cells):
            ax.text(x, y + height / 2, text, ha="center", va="center", fontsize=8.5)
    ax.set_title(f"{title}\n{device_name}", fontsize=11)
    return fig


def occupancy_curves(arch, occupancy, group_size, local_bytes=0, registers=32):
    """Occupancy (share of resident warps) against registers per work-item, and
    against local memory per work-group, on one architecture (`occupancy`:
    gpubook.resources.occupancy)."""
    fig, (a, b) = new_figure(1, 2, height=3.8, full=True)
    fig.patch.set_facecolor("white")
    regs = list(range(16, arch.max_registers + 1, 8))
    occ = [occupancy(arch, r, local_bytes, group_size)["occupancy"] for r in regs]
    _ = a.step(regs, occ, where="post")
    a.set_xlabel("registers per work-item")
    a.set_ylabel("occupancy (share of resident warps)")
    a.set_title(f"{group_size} work-items per group, {local_bytes} B local", fontsize=10)
    kib = [k * 1024 for k in range(0, arch.local_per_group // 1024 + 1, 4)]
    occ = [occupancy(arch, registers, k, group_size)["occupancy"] for k in kib]
    _ = b.step([k / 1024 for k in kib], occ, where="post")
    b.set_xlabel("local memory per work-group (KiB)")
    b.set_title(f"{group_size} work-items per group, {registers} registers", fontsize=10)
    for ax in (a, b):
        ax.set_ylim(0, 1.05)
        ax.grid(True, alpha=0.3)
    fig.suptitle(arch.name, fontsize=11)
    fig.tight_layout()
    return fig


STAMPS = ("queued", "submit", "start", "end")


def event_timeline(runs, title, device_name):
    """runs: {label: {"queued", "submit", "start", "end" (ns, the device's clock),
    "wall" (s, the host's wall clock from enqueue to wait's return)}}: one row per
    launch, in µs from its QUEUED stamp (the host clock starts at the enqueue call)."""
    fig, axes = new_figure(len(runs), 1, height=1.6 * len(runs) + 0.8, squeeze=False)
    fig.patch.set_facecolor("white")
    parts = [("queued", "submit", "queued → submitted", "#bbbbbb"),
             ("submit", "start", "submitted → started", "#f4b183"),
             ("start", "end", "kernel runs (event time)", "C0")]
    for ax, (label, stamps) in zip(axes[:, 0], runs.items()):
        t0 = stamps["queued"]
        for a, b, name, color in parts:
            _ = ax.barh(1, (stamps[b] - stamps[a]) * 1e-3, left=(stamps[a] - t0) * 1e-3, color=color,
                        label=name, height=0.6)
        _ = ax.barh(0, stamps["wall"] * 1e6, left=0, color="#70ad47", height=0.6,
                    label="host wall clock: enqueue → wait returns")
        ax.set_yticks([0, 1], ["host", "device\nevent"])
        ax.set_title(label, fontsize=9, loc="left")
        ax.set_xlabel("µs since the kernel was queued")
        ax.grid(True, axis="x", alpha=0.3)
    h, lab = axes[0, 0].get_legend_handles_labels()
    fig.legend(h, lab, fontsize=7.5, loc="lower center", ncol=2, frameon=False)
    fig.suptitle(f"{title}\n{device_name}", fontsize=11)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig
