"""The book's plot style (gpubook/plot.py): every figure the chapters draw is shown
at >= 70% of its natural width in the site's column (>= 50% when full width) and
its smallest text is >= 9 CSS px as displayed. The other figure tests import
`every_figure_is_legible`, which checks each figure they draw."""
import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure

from gpubook import plot as gp
from gpubook.plot import figure_size
from gpubook.chapters.across import figures as ap, records as ac


@pytest.fixture(autouse=True)
def every_figure_is_legible(monkeypatch):
    """Check every figure a test draws, when it closes it or at its end."""
    close = plt.close

    def checked_close(fig=None):
        figs = [fig] if isinstance(fig, plt.Figure) else []
        if fig is None:
            figs = [plt.gcf()] if plt.get_fignums() else []
        elif fig == "all":
            figs = [plt.figure(n) for n in plt.get_fignums()]
        for f in figs:
            gp.check_legible(f)
        close(fig)

    monkeypatch.setattr(plt, "close", checked_close)
    yield
    for n in plt.get_fignums():
        gp.check_legible(plt.figure(n))
    close("all")


def test_the_sizes_keep_the_rule():
    assert gp.COLUMN_PX / (gp.COLUMN_IN * gp.DPI) >= gp.MIN_SCALE
    assert gp.FULL_PX / (gp.FULL_IN * gp.DPI) >= gp.MIN_SCALE_FULL
    assert gp.FULL_IN * gp.DPI > gp.COLUMN_PX / gp.MIN_SCALE  # a full-width figure is seen as one
    for width_in, px in ((gp.COLUMN_IN, gp.COLUMN_PX), (gp.FULL_IN, gp.FULL_PX)):
        assert gp.MIN_POINTS * px / (72 * width_in) >= gp.MIN_CSS_PX


def test_a_figure_too_wide_or_with_tiny_text_is_caught():
    fig = Figure(figsize=(24, 4), dpi=gp.DPI)  # not pyplot's: the fixture does not see it
    fig.add_subplot().set_title("wide", fontsize=12)
    with pytest.raises(AssertionError, match="shown at"):
        gp.check_legible(fig)
    fig = Figure(figsize=figure_size(4.0), dpi=gp.DPI)
    ax = fig.add_subplot()
    ax.set_title("tiny", fontsize=5)
    with pytest.raises(AssertionError, match="text at 5"):
        gp.check_legible(fig)
    ax.set_title("fine", fontsize=gp.MIN_POINTS)
    got = gp.check_legible(fig)
    assert not got["full"] and got["css_px"] >= gp.MIN_CSS_PX
    fig = Figure(figsize=figure_size(4.0, full=True), dpi=gp.DPI)
    fig.subplots(1, 2)
    assert gp.legibility(fig)["full"]
    with pytest.raises(TypeError):
        gp.new_figure(figsize=(9, 4))


def test_sweeps_and_bars_are_legible():
    records = [{"variant": v, "n": n, "rate": r * n, "rate_lo": r * n * 0.9, "rate_hi": r * n * 1.1}
               for v, r in (("a", 1.0), ("b", 2.0)) for n in (64, 256, 1024)]
    ax = gp.plot_sweep(records, "n", "work-items", "GB/s", "a sweep", "Some Device",
                       references={"Other": records}, limits=[(3000, "copy limit")])
    gp.check_legible(ax.figure)
    ax = gp.plot_time_bars({"one": {"k1": 1.0, "k2": 0.5}, "two": {"k1": 0.3}}, "bars", "Some Device")
    gp.check_legible(ax.figure)


def test_chapter_9_figures_are_legible():
    results = ac.load()
    gp.check_legible(ap.plot_progress(results), "plot_progress")
    figs = ap.plot_rooflines(results)
    assert len(figs) == sum(1 for r in results.values() if ac.limits(r))
    for fig in figs:
        got = gp.check_legible(fig, "plot_rooflines")
        assert not got["full"], got  # one panel per figure, a column wide
    gp.check_legible(ap.plot_roofline(results), "plot_roofline")


def test_no_figure_is_sized_by_hand():
    """Only gpubook/plot.py sets a figure's size: every other module draws through
    new_figure / new_plain_figure (fonts below MIN_POINTS are caught the same way)."""
    import pathlib
    import re

    package = pathlib.Path(gp.__file__).parent
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.name == "plot.py" and path.parent == package:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            small = [float(s) for s in re.findall(r"fontsize=([0-9.]+)", line) if float(s) < gp.MIN_POINTS]
            if "figsize=" in line or small:
                found.append(f"{path.relative_to(package)}:{n}")
    assert not found, f"figures sized or lettered by hand: {found}"
