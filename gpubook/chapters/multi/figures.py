"""Chapter 10's figure of its idea: the blocks of rows that each device took
from the shared queue (gpubook.chapters.multi.Work), drawn from a run's log
(`multi.Covariance.taken`: per device, its (first row, rows) blocks in the
order it took them), for any number of devices.
"""
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from ...plot import new_figure
from ...show import counted

LABELLED = 48          # blocks up to which each one carries its number


def take_order(taken):
    """(device, first row, rows, n) for every block, n its place in the queue.
    The queue hands blocks out in row order, so a block's place is its rank by
    first row; the check that no row is lost or repeated is multi.check_rows."""
    flat = [(d, i0, rows) for d, blocks in enumerate(taken) for i0, rows in blocks]
    if not flat:
        raise ValueError("the log holds no blocks: nothing was taken")
    rank = {i0: n for n, i0 in enumerate(sorted(i0 for _, i0, _ in flat))}
    if len(rank) != len(flat):
        raise ValueError("a block appears twice in the log")
    return [(d, i0, rows, rank[i0]) for d, i0, rows in flat]


def _colour(d):
    return plt.get_cmap("tab10")(d % 10)


def draw_taken(taken, names=None, title="Blocks of rows taken from the shared queue"):
    """Top: the data's rows, each block coloured by the device that took it and
    numbered by its place in the queue. Below: one lane per device, its blocks
    in the order it took them."""
    blocks = take_order(taken)
    devices = len(taken)
    names = list(names) if names is not None else [f"device {d}" for d in range(devices)]
    if len(names) != devices:
        raise ValueError(f"{len(names)} names for {devices} devices")
    m = max(i0 + rows for _, i0, rows, _ in blocks)
    count = len(blocks)
    fig, (top, lanes) = new_figure(2, 1, height=2.2 + 0.4 * devices,
                                   gridspec_kw={"height_ratios": [1, 0.25 + 0.45 * devices]})
    for d, i0, rows, n in blocks:
        top.add_patch(Rectangle((i0, 0), rows, 1, facecolor=_colour(d), edgecolor="white", linewidth=0.8))
        if count <= LABELLED:
            top.text(i0 + rows / 2, 0.5, str(n), ha="center", va="center", fontsize=7)
    top.set_xlim(0, m)
    top.xaxis.set_major_locator(plt.MaxNLocator(5))
    top.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:,.0f}"))
    top.set_ylim(0, 1)
    top.set_yticks([])
    top.set_xlabel("row of the data (the queue hands out blocks in this order)")
    top.set_title(f"{title}: {counted(count, 'block')}, {counted(devices, 'device')}")

    width = max(sum(rows for _, rows in b) for b in taken) or 1  # each lane in rows
    for d, mine in enumerate(taken):
        y, x0 = devices - 1 - d, 0
        for i0, rows in mine:
            n = next(n for dd, ii, _, n in blocks if dd == d and ii == i0)
            lanes.add_patch(Rectangle((x0, y + 0.1), rows, 0.8, facecolor=_colour(d), edgecolor="white"))
            if count <= LABELLED:
                lanes.text(x0 + rows / 2, y + 0.5, str(n), ha="center", va="center", fontsize=7)
            x0 += rows
        lanes.text(width * 1.02, y + 0.5, f"{len(mine)} blocks, {x0:,} rows ({x0 / m:.0%})",
                   va="center", fontsize=8)
    lanes.set_xlim(0, width * 1.45)
    lanes.set_ylim(0, devices)
    lanes.set_yticks(np.arange(devices) + 0.5, names[::-1], fontsize=8)
    lanes.set_xticks([])
    lanes.set_xlabel("blocks in the order each device took them, as wide as their rows"
                     + " (numbers: place in the queue)" * (count <= LABELLED))
    for spine in ("top", "right"):
        lanes.spines[spine].set_visible(False)
    fig.tight_layout()
    return fig


def plot_speedup(ax, counts, speedups, bound, title, amdahl=None):
    """Speed-up against the number of devices, with the ideal line, the
    speed-up the bounds allow and, given, Amdahl's law's."""
    ax.plot(counts, counts, color="0.6", linestyle=":", label="ideal (× devices)")
    ax.plot(counts, bound, color="C1", linestyle="--", marker="s", label="allowed by the bounds")
    if amdahl is not None:
        ax.plot(counts, amdahl, color="C2", linestyle="-.", marker="^", label="Amdahl, measured serial part")
    ax.plot(counts, speedups, color="C0", marker="o", label="measured")
    ax.set_xticks(counts)
    ax.set_xlabel("devices used")
    ax.set_ylabel("speed-up over one device (×)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    return ax


def plot_weak(ax, counts, times_ms, bound_ms, rows_each, title):
    """Weak scaling: time against devices with the same rows on each device;
    the ideal is flat at one device's time, and the transfers' bound for each
    count is drawn beside it."""
    ax.axhline(times_ms[0], color="0.6", linestyle=":", label="ideal (flat)")
    ax.plot(counts, bound_ms, color="C1", linestyle="--", marker="s", label="bound of the transfers and compute")
    ax.plot(counts, times_ms, color="C0", marker="o", label="measured")
    ax.set_xticks(counts)
    ax.set_ylim(0, max(max(times_ms), max(bound_ms)) * 1.2)
    ax.set_xlabel(f"devices used, {rows_each:,} rows each")
    ax.set_ylabel("time (ms)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    return ax


def scaling_figure(counts, cov_speedups, cov_bound, amdahl_line, sub_speedups, cov_title, sub_title,
                   group):
    """Strong scaling of both jobs side by side (the book's full width): speed-up
    against the devices that ran, with the ideal, the bounds and Amdahl's law."""
    fig, axes = new_figure(1, 2, height=3.8, full=True, sharey=True)
    plot_speedup(axes[0], counts, cov_speedups, cov_bound, cov_title, amdahl=amdahl_line)
    plot_speedup(axes[1], counts, sub_speedups, counts, sub_title)
    fig.suptitle(group)
    fig.tight_layout()
    return fig


def weak_figure(counts, times_ms, bound_ms, rows_each, title):
    """Weak scaling in the column: time against the devices that ran."""
    fig, ax = new_figure(height=3.8)
    plot_weak(ax, counts, times_ms, bound_ms, rows_each, title)
    fig.tight_layout()
    return fig


def amdahl(serial_fraction, counts):
    """Amdahl's law: the speed-up on g devices when a fraction s of one device's
    time is serial, 1 / (s + (1 - s) / g)."""
    s = float(serial_fraction)
    if not 0 <= s <= 1:
        raise ValueError(f"a serial fraction is between 0 and 1, not {s}")
    return [1.0 / (s + (1.0 - s) / g) for g in counts]
