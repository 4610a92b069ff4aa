"""Plots readers can trust: every legend entry stands for something drawn and
visible, and other devices' curves are drawn on top in their own style."""
import io
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import Collection  # noqa: E402
from matplotlib.container import BarContainer  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

import gpubook as gb  # noqa: E402
from gpubook import plot, timeline  # noqa: E402
from test_figures_style import every_figure_is_legible  # noqa: F401 (autouse: checks every figure)


def records(variants, xs, scale=1.0):
    return [{"variant": v, "n": x, "rate": scale * (i + 1) * x, "rate_lo": scale * (i + 0.9) * x,
             "rate_hi": scale * (i + 1.1) * x} for i, v in enumerate(variants) for x in xs]


def seen(artist, ax):
    """True when `artist` is drawn in `ax` and a reader can see it."""
    if isinstance(artist, BarContainer):
        return any(seen(p, ax) for p in artist.patches)
    if not artist.get_visible() or (artist.get_alpha() is not None and artist.get_alpha() <= 0):
        return False
    if isinstance(artist, Line2D):
        x, y = np.asarray(artist.get_xdata(), float), np.asarray(artist.get_ydata(), float)
        drawn = artist.get_linestyle() not in ("None", " ", "") or artist.get_marker() not in ("None", " ", "", None)
        return artist in ax.lines and drawn and bool(np.isfinite(x).any() and np.isfinite(y).any())
    if isinstance(artist, Patch):
        box = artist.get_bbox()
        return artist in ax.patches and box.width > 0 and box.height > 0
    if isinstance(artist, Collection):
        return artist in ax.collections and any(len(p.vertices) and np.ptp(p.vertices[:, 0]) > 0
                                                for p in artist.get_paths())
    raise AssertionError(f"a legend entry of an unexpected kind: {type(artist).__name__}")


def check_legend(ax):
    """Every legend text has a handle among the axes' own artists, and each one is seen."""
    handles, labels = ax.get_legend_handles_labels()
    legend = ax.get_legend()
    shown = [t.get_text() for t in legend.get_texts()] if legend else []
    assert shown == labels, (shown, labels)
    for handle, label in zip(handles, labels):
        assert seen(handle, ax), f"legend entry {label!r} has nothing visible drawn"
    return labels


def render(ax):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        buf = io.BytesIO()
        ax.figure.savefig(buf, format="png")
    assert buf.getvalue()[:4] == b"\x89PNG"


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_sweep_with_other_devices_labels_only_drawn_curves():
    xs = [2, 4, 8, 16]
    mine = records(["naive", "tiled"], xs)
    refs = {"NVIDIA H100": records(["naive", "tiled"], xs),          # coincides with this device's curves
            "pthread-CPU": records(["tiled"], xs[:2], scale=0.1),
            "Old GPU": [],                                          # nothing recorded: no entry
            "Other names": records(["a variant not run here"], xs)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ax = gb.plot_sweep(mine, "n", "n (items)", "rate (items/s)", "Title", "Dev",
                           references=refs, limits=[(40.0, "limit")])
    render(ax)
    labels = check_legend(ax)
    assert labels == ["naive", "tiled", "NVIDIA H100 (recorded, fill: variant)", "pthread-CPU (recorded)",
                      "Other names (recorded)"]


def test_other_devices_are_on_top_in_their_own_style():
    xs = [2, 4, 8]
    ax = gb.plot_sweep(records(["a", "b"], xs), "n", "n", "rate (1/s)", "T", "Dev",
                       references={"H100": records(["a", "b"], xs), "CPU": records(["a"], xs)})
    lines = [line for line in ax.get_lines() if len(line.get_xdata())]
    mine, h100, cpu = lines[:2], lines[2:4], lines[4:]
    assert len(cpu) == 1
    top = max(line.get_zorder() for line in mine)
    assert all(line.get_zorder() > top for line in h100 + cpu)
    for this, other in zip(mine, h100):        # same variant: another colour, style and marker
        assert other.get_color() != this.get_color()
        assert other.get_linestyle() != this.get_linestyle() and other.get_marker() != this.get_marker()
        assert matplotlib.colors.same_color(other.get_markerfacecolor(), this.get_color())
    assert (h100[0].get_linestyle(), h100[0].get_marker()) != (cpu[0].get_linestyle(), cpu[0].get_marker())
    # the bands stay beneath every curve
    assert all(c.get_zorder() < top for c in ax.collections)


def test_linear_and_log_axes_on_request():
    recs = records(["a"], [2, 4, 8])
    ax = gb.plot_sweep(recs, "n", "n", "rate (1/s)", "T", "Dev", logy=True, yscale="linear")
    assert ax.get_yscale() == "linear" and ax.get_xscale() == "log"
    ax = gb.plot_sweep(recs, "n", "n", "rate (1/s)", "T", "Dev", yscale="log", xscale="linear")
    assert ax.get_yscale() == "log" and ax.get_xscale() == "linear"
    with pytest.raises(ValueError, match="yscale is 'linear' or 'log'"):
        gb.plot_sweep(recs, "n", "n", "rate (1/s)", "T", "Dev", yscale="logarithmic")


def test_time_bars_have_no_entry_for_a_kernel_that_took_no_time():
    runs = {"n_b = 32": {"panel": 0.2, "update": 0.5, "sums": 0.0},
            "n_b = 64": {"panel": 0.3, "update": 0.4}}
    ax = gb.plot_time_bars(runs, "where the time goes", "Dev")
    render(ax)
    assert check_legend(ax) == ["panel", "update"]


def test_timeline_entries_are_once_per_label_and_visible():
    class Ev:
        def __init__(self, start, end):
            self.profile = type("P", (), {"start": start, "end": end})()

    lanes = {"copy": [("in", Ev(0, 4_000_000)), ("out", Ev(9_000_000, 10_000_000))],
             "compute": [("sums", Ev(4_000_000, 4_000_010)), ("tiles", Ev(4_000_100, 9_000_000)),
                         ("sums", Ev(9_000_000, 9_000_005))]}
    rows = timeline.spans(lanes)
    ax = timeline.plot_timeline(rows, "Streaming", "Dev")
    render(ax)
    assert check_legend(ax) == ["in", "out", "sums", "tiles"]
    sums = next(c for c in ax.collections if c.get_label() == "sums")
    widths = [np.ptp(p.vertices[:, 0]) for p in sums.get_paths()]
    assert min(widths) >= 0.003 * 10 - 1e-12     # 10 ms span: a 10 ns command is drawn 30 µs wide


def test_reference_styles_differ_between_devices():
    styles = [plot.reference_style(i) for i in range(len(plot.REF_MARKERS))]
    assert len({(s["linestyle"] if isinstance(s["linestyle"], str) else str(s["linestyle"]), s["marker"])
                for s in styles}) == len(styles)
    assert all(s["zorder"] > plot.THIS_ZORDER for s in styles)
