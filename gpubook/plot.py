"""One plot style for every chapter: rates with their 20-80% band, other
recorded devices faint behind this one, and the device limit as a line."""
import matplotlib.pyplot as plt
import numpy as np

# Other recorded devices: the same colour as this device's curve of the same
# variant, faint and dashed, one marker per device, and one legend entry per
# device rather than per curve, so that the reader's own device stays in front.
REF_STYLE = {"linestyle": "--", "linewidth": 1.0, "alpha": 0.45}
REF_MARKERS = ("s", "^", "v", "D", "P", "X")


def _curves(ax, records, x_name, value, label_suffix="", style=None, band=True, colors=None, marker="o"):
    """Draw one curve per variant; returns {variant: colour}."""
    variants = list(dict.fromkeys(r["variant"] for r in records))
    drawn = {}
    for variant in variants:
        rows = sorted((r for r in records if r["variant"] == variant), key=lambda r: r[x_name])
        xs = [r[x_name] for r in rows]
        ys = [r[value] for r in rows]
        extra = dict(style or {})
        if colors is not None:
            extra["color"] = colors.get(variant, "gray")
        label = f"{variant}{label_suffix}" if label_suffix is not None else None
        line, = ax.plot(xs, ys, marker=marker, markersize=3, label=label, **extra)
        drawn[variant] = line.get_color()
        if band and f"{value}_lo" in rows[0]:
            ax.fill_between(xs, [r[f"{value}_lo"] for r in rows], [r[f"{value}_hi"] for r in rows],
                            color=line.get_color(), alpha=0.2, linewidth=0)
    return drawn


def plot_sweep(records, x_name, xlabel, ylabel, title, device_name, value="rate",
               references=None, limits=(), logx=True, logy=False, ax=None):
    """Plot a sweep's rates against x.

    references: {device name: records} from other recorded devices, drawn faint
    and dashed in the colour of the matching variant, one legend entry each.
    limits: (value, label) pairs drawn as horizontal lines.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.5))
    colors = _curves(ax, records, x_name, value)
    for i, (name, recs) in enumerate((references or {}).items()):
        marker = REF_MARKERS[i % len(REF_MARKERS)]
        _curves(ax, recs, x_name, value, label_suffix=None, style=REF_STYLE, band=False, colors=colors,
                marker=marker)
        ax.plot([], [], color="gray", marker=marker, markersize=3, label=f"{name} (recorded)", **REF_STYLE)
    _limit_lines(ax, limits)
    if logx:
        ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(f"{title}\n{device_name}", fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    # below the axes, where it can hide neither a curve nor a limit's label
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
    return ax


def _limit_lines(ax, limits, close=1.5):
    """Horizontal lines with their labels at the left edge: above the line, or
    below it when the next higher line is within a factor `close` (so that two
    near lines do not print their labels on top of each other)."""
    values = sorted(y for y, _ in limits)
    for y, label in limits:
        higher = [v for v in values if v > y]
        below = bool(higher) and min(higher) < close * y
        ax.axhline(y, color="black", linestyle=":", linewidth=1)
        ax.annotate(label, xy=(0.01, y), xycoords=("axes fraction", "data"),
                    xytext=(0, -3 if below else 3), textcoords="offset points",
                    va="top" if below else "bottom", fontsize=8)


def plot_time_bars(runs, title, device_name, ax=None):
    """Stacked horizontal bars: for each labelled run, device seconds per kernel
    ({label: {kernel: seconds}}), one colour per kernel name."""
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 0.45 * len(runs) + 2.4))
    names = list(dict.fromkeys(k for by_kernel in runs.values() for k in by_kernel))
    colours = plt.get_cmap("tab10" if len(names) <= 10 else "tab20").colors   # one per kernel, none repeated
    if len(names) > len(colours):
        raise ValueError(f"{len(names)} kernels, but only {len(colours)} distinct colours")
    left = np.zeros(len(runs))
    for name, colour in zip(names, colours):
        secs = np.array([by_kernel.get(name, 0.0) for by_kernel in runs.values()])
        ax.barh(list(runs), secs, left=left, label=name, color=colour)
        left += secs
    ax.set_xlabel("device time of one factorisation, seconds (sum of kernel events)")
    ax.set_title(f"{title}\n{device_name}", fontsize=11)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=3, frameon=False)
    return ax
