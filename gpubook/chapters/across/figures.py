"""Chapter 9's figures, drawn from what `across` reads from the records."""
import math

from ...plot import new_figure
from .records import FP32, FP64, name, on_tensor_cores, steps, with_shares

# the tensor cores' roofs (chapter 0's mma loops, NVIDIA only): (roofline key, label, colour)
MMA_ROOFS = (("TF32 mma GFLOP/s", "TF32 mma loop (tensor cores)", "tab:purple"),
             ("FP64 mma GFLOP/s", "FP64 mma loop (tensor cores)", "tab:brown"))


def plot_progress(results, ncols=3):
    """One panel per chapter: every step's share of each device's own limit (log scale)."""
    from matplotlib.ticker import FuncFormatter

    chapters = with_shares(results)
    nrows = math.ceil(len(chapters) / ncols)
    fig, axes = new_figure(nrows, ncols, height=3.2 * nrows + 0.6, full=True, sharey=True, squeeze=False)
    lines = {}
    for ax, c in zip(axes.flat, chapters):
        labels = []
        for i, r in enumerate(results.values()):
            found = [s for s in steps(c, r) if s[2] is not None]
            if found:  # a small sideways shift per device keeps equal points apart
                labels = labels if len(labels) >= len(found) else [s[0] for s in found]
                lines[name(r)], = ax.plot([k + 0.04 * (i - 1) for k in range(len(found))],
                                          [100 * s[2] for s in found], marker="osD^v<>"[i % 7],
                                          markersize=4, color=f"C{i}", label=name(r))
        lines["the device's limit (100%)"] = ax.axhline(100, color="black", linestyle=":", linewidth=1)
        ax.set_xticks(range(len(labels)), labels, rotation=40, ha="right", fontsize=7)
        ax.set_xlim(-0.5, len(labels) - 0.5)
        mma = c.limit in (FP32, FP64) and any(on_tensor_cores(s) for s in labels)
        ax.set_title(f"{c.title}\n{c.unit}, share of {c.limit.label}"
                     + ("\n(steps on tensor cores: of their roof)" if mma else ""), fontsize=8)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}%"))
        ax.grid(True, which="major", alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("share of the device's limit (%)")
    for ax in axes.flat[len(chapters):]:
        ax.remove()
    fig.suptitle("How far each step got: share of each device's own chapter-0 limit", fontsize=11)
    fig.legend(list(lines.values()), list(lines), loc="lower center", ncol=min(len(lines), 4),
               fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 0.97))
    return fig


def plot_roofline(results):
    """All devices' rooflines side by side in one full-width figure (one panel per
    device, one legend); `plot_rooflines` draws the same as one figure per device."""
    devices = _roofline_devices(results)
    fig, axes = new_figure(1, len(devices), height=4.6, full=True, squeeze=False)
    chapters = _chapters(devices)
    handles = {}
    for ax, device in zip(axes[0], devices):
        _roofline_panel(ax, device, chapters, handles)
    _roofline_legend(fig, handles, chapters, ncol=3)
    fig.tight_layout(rect=(0, 0.16, 1, 1))
    return fig


def plot_rooflines(results):
    """One roofline figure per device with chapter 0's limits (a column wide each,
    its own legend below): the copy-bandwidth roof (a line of slope 1) under the
    FP32 and FP64 peaks, and every chapter's steps at their arithmetic intensity;
    where chapter 0 measured them, the tensor cores' roofs as dashed, coloured,
    labelled lines from where the copy roof meets them; the vendor libraries'
    points as stars (doing the same job) and crosses (PyTorch's calls, second
    lines). The points the text discusses (`roofline.DISCUSSED`) carry a label;
    the legend holds only what is drawn. Colours of chapters are the same in
    every figure. Returns the figures."""
    devices = _roofline_devices(results)
    chapters = _chapters(devices)
    figs = []
    for device in devices:
        fig, ax = new_figure(height=6.4)
        handles = {}
        _roofline_panel(ax, device, chapters, handles)
        _roofline_legend(fig, handles, chapters, ncol=2)
        fig.tight_layout(rect=(0, 0.2, 1, 1))
        figs.append(fig)
    return figs


KINDS = {"same job": "vendor library, the same job (star)",
         "second line": "vendor library through PyTorch, a second line (cross)"}
MARKER = {False: ("o", 22), "same job": ("*", 110), "second line": ("X", 50)}


def _roofline_devices(results):
    from .roofline import roofline

    devices = [(name(r), r, *roofline(r)) for r in results.values()]
    return [d for d in devices if d[2]]


def _chapters(devices):
    """{chapter: colour}, the same on every device's panel."""
    chapters = list(dict.fromkeys(p["chapter"] for *_, pts in devices for p in pts))
    return {c: f"C{i}" for i, c in enumerate(chapters)}


def _roofline_panel(ax, device_entry, colours, handles):
    """One device's roofline on ax; adds what it draws to handles {legend label: artist}."""
    import numpy as np

    from .roofline import discussed

    device, records, roofs, points = device_entry
    x = np.logspace(-1.5, 4, 200)
    bw = roofs["copy GB/s"]
    for label, peak, style in (("FP32", roofs["FP32 GFLOP/s"], "-"), ("FP64", roofs["FP64 GFLOP/s"], "--")):
        if peak:
            handles[f"roof: copy bandwidth, then {label}"], = ax.plot(
                x, np.minimum(bw * x, peak), color="black", linestyle=style, linewidth=1)
    for key, label, colour in MMA_ROOFS:
        peak = roofs[key]
        if peak:  # flat from the ridge on (below it the copy roof holds), labelled left of the ridge
            ridge = min(peak / bw, x[-1])
            handles[f"roof: {label}"], = ax.plot([ridge, x[-1]], [peak, peak], color=colour, linestyle="--",
                                                 linewidth=1.2)
            _ = ax.text(ridge / 1.3, peak, f"{label}\n{peak:,.0f} GFLOP/s", color=colour, fontsize=7,
                        ha="right", va="center")
    for p in points:
        shape, size = MARKER[p["vendor"]]
        h = ax.scatter(p["ai"], p["gflops"], color=colours[p["chapter"]], marker=shape, s=size,
                       edgecolor="black" if p["vendor"] else "none", linewidth=0.6, zorder=3)
        handles.setdefault(KINDS[p["vendor"]] if p["vendor"] else p["chapter"], h)
    for label, (dx, dy), p in discussed(records):
        _ = ax.annotate(label, (p["ai"], p["gflops"]), xytext=(dx, dy), textcoords="offset points",
                        fontsize=7, ha="right" if dx < 0 else "left", va="center", zorder=4,
                        bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none",
                              "alpha": 0.8},
                        arrowprops={"arrowstyle": "-", "color": "gray", "linewidth": 0.6})
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (flop per byte of compulsory traffic)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(f"{device}\ncopy {bw:,.0f} GB/s, FP32 {roofs['FP32 GFLOP/s']:,.0f} GFLOP/s", fontsize=9)
    ax.grid(True, which="major", alpha=0.3)


def _roofline_legend(fig, handles, chapters, ncol):
    order = [k for k in handles if k.startswith("roof")] + [c for c in chapters if c in handles] + \
            [k for k in KINDS.values() if k in handles]
    fig.legend([handles[k] for k in order], order, loc="lower center", ncol=ncol, fontsize=7, frameon=False,
               bbox_to_anchor=(0.5, -0.02))
