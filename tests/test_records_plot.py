"""Result records round-trip; reference digests; plots render without warnings."""
import io
import json
import warnings
from types import SimpleNamespace

import matplotlib.pyplot as plt
import pytest

import gpubook as gb
from gpubook import reference
from test_figures_style import every_figure_is_legible  # noqa: F401 (autouse: checks every figure)

DEV = SimpleNamespace(name="Test GPU 9000 ", vendor="V", driver_version="1.0",
                      platform=SimpleNamespace(name="P"))


def test_slug():
    assert gb.device_slug(DEV) == "test-gpu-9000"
    assert gb.device_slug("cpu-skylake-avx512-Intel(R) Xeon(R)") == "cpu-skylake-avx512-intel-r-xeon-r"


def test_record_only_when_asked(tmp_path, monkeypatch):
    monkeypatch.delenv("GPUBOOK_RECORD", raising=False)
    assert gb.record("ch", DEV, "full", {"x": 1}, root=tmp_path) is None
    monkeypatch.setenv("GPUBOOK_RECORD", "1")
    path = gb.record("ch", DEV, "full", {"limits": {"copy_gbs": 1.5}}, root=tmp_path)
    entry = json.loads(path.read_text())
    assert entry["device"] == "Test GPU 9000" and entry["scale"] == "full"
    assert gb.load_results("ch", root=tmp_path)["test-gpu-9000"]["data"] == {"limits": {"copy_gbs": 1.5}}
    other = SimpleNamespace(**{**vars(DEV), "name": "Other CPU"})
    assert list(gb.other_devices("ch", other, root=tmp_path)) == ["test-gpu-9000"]
    assert gb.other_devices("ch", DEV, root=tmp_path) == {}


def test_digests_name_what_changed(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    path = tmp_path / "01_x.ipynb"
    nbformat.write(nb, str(path))
    kdir = tmp_path / "kernels"
    (kdir / "c").mkdir(parents=True)
    (kdir / "c" / "a.cl").write_text("// one\n")
    monkeypatch.setattr(reference, "KERNELS", kdir)
    folder = tmp_path / "digests"
    assert reference.stale_reasons(path, folder) == ["never run by `make reference`"]
    reference.save_digest(path, ["c/a.cl"], "dev", folder)
    assert reference.stale_reasons(path, folder) == []
    (kdir / "c" / "a.cl").write_text("// two\n")
    nb.cells[0].source = "x = 2"
    nbformat.write(nb, str(path))
    assert reference.stale_reasons(path, folder) == ["code cells changed", "kernels/c/a.cl changed"]


def test_plot_renders_without_warnings():
    recs = gb.sweep("n", [2, 4, 8], ["a"], lambda v, x: gb.stats([x, x * 1.1]),
                    amount=lambda v, x: x * x)
    ref = gb.sweep("n", [2, 4], ["a"], lambda v, x: gb.stats([x]), amount=lambda v, x: x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ax = gb.plot_sweep(recs, "n", "n (items)", "rate (items/s)", "Title", "Dev",
                           references={"Other": ref}, limits=[(10.0, "limit")])
        buf = io.BytesIO()
        ax.figure.savefig(buf, format="png")
    assert buf.getvalue()[:4] == b"\x89PNG"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["a", "Other (recorded)"]        # one entry per other device
    mine, other = [line for line in ax.get_lines() if len(line.get_xdata())][:2]
    # another device's curve: its own colour and style, drawn on top of this device's
    assert other.get_color() != mine.get_color() and other.get_linestyle() == "--"
    assert other.get_zorder() > mine.get_zorder()
    assert ax.get_xlabel() == "n (items)" and "Dev" in ax.get_title()
    plt.close(ax.figure)


def test_time_bars_give_every_kernel_its_own_colour():
    runs = {f"run {r}": {f"kernel {k}": 0.01 * (k + 1) for k in range(14)} for r in range(3)}
    ax = gb.plot_time_bars(runs, "fourteen kernels", "a device")
    colours = [h.patches[0].get_facecolor() for h in ax.containers]
    assert len(colours) == 14 and len(set(colours)) == 14
    plt.close(ax.figure)
    with pytest.raises(ValueError, match="21 kernels"):
        gb.plot_time_bars({"run": {f"kernel {k}": 1.0 for k in range(21)}}, "too many", "a device")
    plt.close("all")
