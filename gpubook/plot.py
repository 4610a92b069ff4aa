"""One plot style for every chapter: figure sizes and fonts legible where the
site shows them, rates with their 20-80% band, other recorded devices drawn on
top in their own grey line style, and the device limit as a line.

The rule every figure follows (chapters' figures.py draw through it):

- Make a figure with `new_figure(...)` (or size it with `figure_size(...)`):
  COLUMN_IN inches wide at DPI, which the site shows in its column (COLUMN_PX CSS px
  at a 1,280 px window) at about 0.75 of its natural width, never below
  MIN_SCALE. A figure with several panels is one figure per panel, or
  `full=True` (FULL_IN inches), which the site shows across the full width
  (FULL_PX CSS px, never below MIN_SCALE_FULL of its natural width).
- A full-width figure is marked by its width: the site's script
  (_static/gpubook.js) widens the cell of every output image wider than
  COLUMN_PX / MIN_SCALE natural px, as the theme does for a cell tagged
  `full-width` (the tag works too, for a narrower figure that should span).
- No text below MIN_POINTS points (ticks, legends, annotations): at the sizes
  above that is at least MIN_CSS_PX CSS px on the page. `legibility(fig)` works
  out both numbers for a drawn figure; the figure tests call `check_legible`.
- Never set a figsize or dpi by hand; never a fontsize below MIN_POINTS.
- No tick labels that overlap (`overlapping_labels(ax)`, from matplotlib's text
  extents as drawn; `check_legible` fails on them). Long category labels wrap, or
  turn upright (`fit_tick_labels(ax)`).
"""
import io

import matplotlib
import matplotlib.pyplot as plt
import numpy as np

COLUMN_PX = 676        # CSS px of an output cell's width at a 1,280 px window
FULL_PX = 919          # a full-width cell's, at the same window (136% of the column)
DPI = 140              # PNG pixels per inch (fig.dpi: the inline backend saves at it)
COLUMN_IN = 6.4        # a column figure: 896 natural px, shown at ~0.75
FULL_IN = 9.0          # a full-width figure: 1,260 natural px, shown at ~0.73
MIN_SCALE = 0.7        # shown at no less than this share of its natural width
MIN_SCALE_FULL = 0.5   # the same for a full-width figure
MIN_CSS_PX = 9         # the smallest text as displayed
MIN_POINTS = 7         # the smallest font size a figure may use
STYLE = {"figure.dpi": DPI, "savefig.dpi": "figure", "figure.figsize": (COLUMN_IN, 4.0),
         "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "xtick.labelsize": 8,
         "ytick.labelsize": 8, "legend.fontsize": 8, "legend.title_fontsize": 8,
         "figure.titlesize": 10}
matplotlib.rcParams.update(STYLE)


def figure_size(height, full=False):
    """(width, height) in inches of a column figure, or of a full-width one."""
    return (FULL_IN if full else COLUMN_IN, float(height))


def new_figure(*args, height=4.0, full=False, **kwargs):
    """plt.subplots at the book's width and DPI (column, or full width for several
    panels side by side), on an opaque white background (the site has a dark mode)."""
    if "figsize" in kwargs:
        raise TypeError("new_figure sizes the figure: give height= and full=, not figsize")
    fig, axes = plt.subplots(*args, figsize=figure_size(height, full), dpi=DPI, **kwargs)
    on_white(fig)
    return fig, axes


def new_plain_figure(height=4.0, full=False):
    """plt.figure at the book's width and DPI (for figures laid out by hand)."""
    return on_white(plt.figure(figsize=figure_size(height, full), dpi=DPI))


def natural_width(fig):
    """The PNG width in px that the page stores for fig (saved as the inline backend
    saves it: at fig.dpi, cropped to what is drawn)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi, bbox_inches="tight")
    return int.from_bytes(buf.getvalue()[16:20], "big")


def legibility(fig):
    """How the site shows fig at a 1,280 px window: natural width (px), whether it is
    full-width, the share of its natural width shown, and its smallest text in
    points and in CSS px as displayed."""
    width = natural_width(fig)
    full = width > COLUMN_PX / MIN_SCALE
    scale = min(1.0, (FULL_PX if full else COLUMN_PX) / width)
    sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text)
             if t.get_visible() and t.get_text().strip() and t.get_figure() is not None]
    points = min(sizes) if sizes else float("inf")
    return {"natural_px": width, "full": full, "scale": scale, "points": points,
            "css_px": points * fig.dpi / 72 * scale}


def check_legible(fig, what="figure"):
    """Raise AssertionError unless fig follows the rule of this module's docstring."""
    got = legibility(fig)
    least = MIN_SCALE_FULL if got["full"] else MIN_SCALE
    assert got["scale"] >= least, f"{what}: shown at {got['scale']:.2f} of its width, below {least}: {got}"
    assert got["points"] >= MIN_POINTS, f"{what}: text at {got['points']} pt, below {MIN_POINTS}: {got}"
    assert got["css_px"] >= MIN_CSS_PX, f"{what}: text {got['css_px']:.1f} CSS px as shown: {got}"
    crowded = {ax.get_title() or f"axes {i}": pairs for i, ax in enumerate(fig.axes)
               if (pairs := overlapping_labels(ax))}
    assert not crowded, f"{what}: tick labels overlap: {crowded}"
    return got


def _drawn_ticklabels(axis):
    """The visible, non-empty tick labels (major and minor) that `axis` draws: those
    of ticks inside its view interval, at the positions of the last draw."""
    lo, hi = sorted(axis.get_view_interval())
    slack = 1e-9 * (abs(hi) + abs(lo) + 1.0)
    labels = []
    for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
        loc = tick.get_loc()
        if loc is None or not lo - slack <= loc <= hi + slack:
            continue
        for label in (tick.label1, tick.label2):
            if label.get_visible() and label.get_text().strip():
                labels.append(label)
    return labels


def _corners(text, renderer):
    """The four corners (display px) of a text's drawn rectangle, turned with it: its
    unturned width and height about the centre of its axis-aligned extent (a turned
    rectangle's extent is centred on it)."""
    box, angle = text.get_window_extent(renderer), text.get_rotation()
    text.set_rotation(0)
    flat = text.get_window_extent(renderer)
    text.set_rotation(angle)
    t = np.radians(angle)
    turn = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
    half = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * [flat.width / 2, flat.height / 2]
    return half @ turn.T + [(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2]


def _overlap(a, b, pad):
    """Whether two convex quadrilaterals overlap by more than pad px (separating axes)."""
    for poly in (a, b):
        for k in range(4):
            edge = poly[(k + 1) % 4] - poly[k]
            normal = np.array([-edge[1], edge[0]]) / (np.hypot(*edge) or 1.0)
            pa, pb = a @ normal, b @ normal
            if pa.max() <= pb.min() + pad or pb.max() <= pa.min() + pad:
                return False
    return True


def overlapping_labels(ax, pad_px=1.0):
    """Pairs of tick-label texts of ax (on either axis) whose drawn extents overlap,
    as matplotlib lays them out (its text extents after a draw, turned with a label
    that is turned); [] when none do. Boxes that only touch, within pad_px display
    pixels, do not count."""
    fig = ax.get_figure()
    fig.draw_without_rendering()
    renderer = fig._get_renderer()
    pairs = []
    for axis in (ax.xaxis, ax.yaxis):
        boxes = [(t.get_text(), _corners(t, renderer)) for t in _drawn_ticklabels(axis)]
        for i, (text_a, a) in enumerate(boxes):
            pairs += [(text_a, text_b) for text_b, b in boxes[i + 1:] if _overlap(a, b, pad_px)]
    return pairs


def fit_tick_labels(ax, width=10, rotation=40):
    """Make the x tick labels of ax fit where they overlap as drawn: first each label
    wrapped onto lines of at most `width` characters (at its spaces and underscores),
    then, if they still overlap, turned by `rotation` degrees (anchored at their right
    end, under their tick). The overlapping pairs left after that ([] once they fit)."""
    import textwrap

    if not overlapping_labels(ax):
        return []
    ticks, labels = ax.get_xticks(), [t.get_text() for t in ax.get_xticklabels()]
    ax.set_xticks(ticks, ["\n".join(textwrap.wrap(t.replace("_", " "), width)) or t for t in labels])
    if overlapping_labels(ax):
        for label in ax.get_xticklabels():
            label.set_rotation(rotation)
            label.set_horizontalalignment("right")
            label.set_rotation_mode("anchor")
    return overlapping_labels(ax)


# Other recorded devices: one grey, one line style and one marker per device, so
# that none is mistaken for this device's curve of the same variant. They are
# drawn above this device's curves (a curve that coincides with the reader's
# stays visible), with their markers filled in the colour of the variant they
# measured. One legend entry per device, on one of its drawn lines.
THIS_ZORDER = 2.0
REF_ZORDER = 3.0
REF_GREYS = ("0.15", "0.4", "0.55", "0.3", "0.5", "0.2")
REF_LINESTYLES = ("--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 2)), (0, (8, 3)))
REF_MARKERS = ("s", "^", "v", "D", "P", "X")


def on_white(fig):
    """The figure on an opaque white background (the site's dark theme keeps it readable)."""
    fig.patch.set_facecolor("white")
    fig.patch.set_alpha(1.0)
    return fig


def reference_style(i):
    """The line style of the i-th other recorded device."""
    n = len(REF_MARKERS)
    return {"color": REF_GREYS[i % n], "linestyle": REF_LINESTYLES[i % n], "marker": REF_MARKERS[i % n],
            "markeredgecolor": REF_GREYS[i % n], "markersize": 4, "linewidth": 1.2, "alpha": 0.9,
            "zorder": REF_ZORDER}


def _rows(records, variant, x_name):
    return sorted((r for r in records if r["variant"] == variant), key=lambda r: r[x_name])


def _curves(ax, records, x_name, value, band=True):
    """This device's curves, one per variant, each with its band; returns {variant: colour}."""
    drawn = {}
    for variant in dict.fromkeys(r["variant"] for r in records):
        rows = _rows(records, variant, x_name)
        xs = [r[x_name] for r in rows]
        line, = ax.plot(xs, [r[value] for r in rows], marker="o", markersize=3, label=str(variant),
                        zorder=THIS_ZORDER)
        drawn[variant] = line.get_color()
        if band and f"{value}_lo" in rows[0]:
            ax.fill_between(xs, [r[f"{value}_lo"] for r in rows], [r[f"{value}_hi"] for r in rows],
                            color=line.get_color(), alpha=0.2, linewidth=0, zorder=THIS_ZORDER - 0.5)
    return drawn


def _reference_curves(ax, i, name, records, x_name, value, colours):
    """One recorded device's curves in its own style; the first drawn one carries the legend entry."""
    style = reference_style(i)
    records = [r for r in records if x_name in r and value in r]
    variants = list(dict.fromkeys(r["variant"] for r in records))
    several = len(variants) > 1
    for k, variant in enumerate(variants):
        rows = _rows(records, variant, x_name)
        label = (f"{name} (recorded{', fill: variant' if several else ''})" if k == 0 else "_nolegend_")
        ax.plot([r[x_name] for r in rows], [r[value] for r in rows], label=label,
                markerfacecolor=colours.get(variant, "white"), **style)


def plot_sweep(records, x_name, xlabel, ylabel, title, device_name, value="rate",
               references=None, limits=(), logx=True, logy=False, ax=None, yscale=None, xscale=None):
    """Plot a sweep's rates against x.

    references: {device name: records} from other recorded devices, each drawn
    on top in its own grey line style and marker (filled in the colour of the
    matching variant of this device), one legend entry per device that has a
    drawn curve. limits: (value, label) pairs drawn as horizontal lines.
    yscale/xscale ("linear" or "log") override logy/logx: use a linear y axis
    where the story is a ratio within one decade.
    """
    if ax is None:
        _, ax = new_figure(height=4.4)
    colours = _curves(ax, records, x_name, value)
    for i, (name, recs) in enumerate((references or {}).items()):
        _reference_curves(ax, i, name, recs, x_name, value, colours)
    _limit_lines(ax, limits)
    logx = _is_log(xscale, logx, "xscale")
    logy = _is_log(yscale, logy, "yscale")
    if logx:
        ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(f"{title}\n{device_name}", fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    # below the axes, where it can hide neither a curve nor a limit's label
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
    return ax


def _is_log(scale, default, name):
    if scale is None:
        return bool(default)
    if scale not in ("linear", "log"):
        raise ValueError(f"{name} is 'linear' or 'log', not {scale!r}")
    return scale == "log"


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
    ({label: {kernel: seconds}}), one colour per kernel name. A kernel that took
    no time in any run gets neither a bar nor a legend entry."""
    if ax is None:
        _, ax = new_figure(height=0.45 * len(runs) + 2.4)
    names = [k for k in dict.fromkeys(k for by_kernel in runs.values() for k in by_kernel)
             if any(by_kernel.get(k, 0.0) > 0 for by_kernel in runs.values())]
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
    if names:
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=3, frameon=False)
    return ax


IDLE = "#f2f2f2"

