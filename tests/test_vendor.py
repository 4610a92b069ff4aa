"""The vendor-library anchors: silent where PyTorch or an NVIDIA GPU is missing
(the CI case), measured and recorded where they are (faked here, no GPU)."""
import contextlib
import json
from types import SimpleNamespace

import pyopencl as cl
import pytest

from gpubook import records, vendor

H200 = SimpleNamespace(name="NVIDIA H200", vendor="NVIDIA Corporation", driver_version="580",
                       platform=SimpleNamespace(name="NVIDIA CUDA"), type=cl.device_type.GPU)
CPU = SimpleNamespace(name="pthread-Xeon", vendor="GenuineIntel", driver_version="6",
                      platform=SimpleNamespace(name="Portable Computing Language"),
                      type=cl.device_type.CPU)


class FakeEvent:
    """A CUDA event whose elapsed times come from a list (milliseconds)."""
    times = []

    def __init__(self, enable_timing=False):
        assert enable_timing

    def record(self):
        pass

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return FakeEvent.times.pop(0)


def fake_torch(names=("NVIDIA H200",)):
    cuda = SimpleNamespace(
        is_available=lambda: bool(names), device_count=lambda: len(names),
        get_device_name=lambda i: names[i], get_device_properties=lambda i: SimpleNamespace(),
        Event=FakeEvent, synchronize=lambda: None, empty_cache=lambda: None,
        device=lambda i: contextlib.nullcontext())
    return SimpleNamespace(
        __version__="9.9", version=SimpleNamespace(cuda="13.0"), cuda=cuda,
        device=lambda kind, index: (kind, index),
        backends=SimpleNamespace(cuda=SimpleNamespace(matmul=SimpleNamespace(allow_tf32=True))))


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "RESULTS", tmp_path)
    monkeypatch.setenv("GPUBOOK_RECORD", "1")
    return tmp_path


def one_line(capsys):
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_without_pytorch_one_line_and_nothing(monkeypatch, capsys, results):
    monkeypatch.setattr(vendor, "_import_torch", lambda: None)
    assert vendor.measure(H200, "sum", scale="small") is None
    assert "PyTorch is not installed" in one_line(capsys)
    assert not list(results.iterdir())


def test_not_nvidia_one_line_and_nothing(monkeypatch, capsys, results):
    monkeypatch.setattr(vendor, "_import_torch", fake_torch)
    assert vendor.measure(CPU, scale="small") is None
    assert "not an NVIDIA GPU" in one_line(capsys)


@pytest.mark.parametrize("names, why", [((), "no CUDA device"),
                                        (("NVIDIA A100-SXM4-40GB",), "no CUDA device named")])
def test_other_gpu_one_line_and_nothing(monkeypatch, capsys, results, names, why):
    monkeypatch.setattr(vendor, "_import_torch", lambda: fake_torch(names))
    assert vendor.measure(H200, "sum", scale="small") is None
    assert why in one_line(capsys)


def test_measured_figures_are_timed_recorded_and_merged(monkeypatch, capsys, results):
    torch = fake_torch(("NVIDIA A100", "NVIDIA H200"))
    monkeypatch.setattr(vendor, "_import_torch", lambda: torch)
    used = {}

    def workload(torch_, figure, shape, dev):
        used[figure] = (shape, dev, torch_.backends.cuda.matmul.allow_tf32)
        return (lambda: None), (lambda: 1e-7)

    monkeypatch.setattr(vendor, "_workload", workload)
    FakeEvent.times = [1.0] * 16 + [2.0, 2.0, 3.0, 9.0]  # ms, one per repeat
    found = vendor.measure(H200, "sum", shapes={"sum": (1000,)}, scale="small")
    entry = found["sum"]
    assert used["sum"] == ((1000,), ("cuda", 1), False)  # the GPU named like the OpenCL device
    assert torch.backends.cuda.matmul.allow_tf32 is True  # restored
    assert entry["median_s"] == pytest.approx(1e-3)
    assert entry["rate"] == pytest.approx(4000 / 1e9 / 1e-3)
    assert entry["rate_lo"] <= entry["rate"] <= entry["rate_hi"]
    assert entry["rel_error"] == 1e-7 and entry["unit"] == "GB/s read"
    assert "measured sum on NVIDIA H200" in one_line(capsys)

    assert not (results / "nvidia-h200" / "vendor.json").exists()  # a chapter's own shape is not the standard
    FakeEvent.times = [1.0] * 31
    vendor.measure(H200, ("xtx", "sum"), scale="small")
    assert used["xtx"][0] == vendor.FIGURES["xtx"].small
    stored = json.loads((results / "nvidia-h200" / "vendor.json").read_text())
    assert stored["device"] == "NVIDIA H200" and set(stored["data"]) == {"sum", "xtx"}
    entry = stored["data"]["sum"]
    FakeEvent.times = [1.0] * 11
    vendor.measure(H200, "xtx", scale="small")  # measuring one figure again keeps the others
    assert set(json.loads((results / "nvidia-h200" / "vendor.json").read_text())["data"]) == {"sum", "xtx"}
    assert stored["data"]["xtx"]["rate"] == pytest.approx(vendor.amount("xtx", vendor.FIGURES["xtx"].small) / 1e-3)

    line = vendor.recorded_lines("sum")[0]
    assert line.startswith("CUB sum") and f"recorded on NVIDIA H200 on {entry['date']}" in line
    assert vendor.recorded_lines("sum", exclude=H200) == []
    assert "measured in this run" in vendor.describe(entry)


def test_a_failing_library_never_fails_the_chapter(monkeypatch, capsys, results):
    monkeypatch.setattr(vendor, "_import_torch", lambda: fake_torch())

    def out_of_memory(*args):
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB\nmore")

    monkeypatch.setattr(vendor, "_workload", out_of_memory)
    assert vendor.measure(H200, "qr", scale="small") is None
    assert "measuring failed on NVIDIA H200: CUDA out of memory" in one_line(capsys)


def test_unknown_figure_is_an_error():
    with pytest.raises(ValueError, match="unknown vendor figure 'gemv'"):
        vendor.measure(H200, "gemv")


def test_work_counts():
    assert vendor.amount("sum", (2**28,)) == pytest.approx(1.073741824)
    assert vendor.amount("cumsum", (2**28,)) == pytest.approx(2.147483648)
    assert vendor.amount("xtx", (131_072, 4_096)) == pytest.approx(4.398046511104)
    assert vendor.amount("qr", (25_000, 5_000)) == pytest.approx(1250 - 250 / 3)


def test_reference_gpu_figures_are_recorded():
    stored = vendor.recorded("sum")
    assert "NVIDIA H200" in stored, "run `python -m gpubook.vendor` on the H200 with GPUBOOK_RECORD=1"
    for figure in vendor.FIGURES:
        entry = vendor.recorded(figure)["NVIDIA H200"]
        assert entry["rate"] > 0 and entry["q20_s"] <= entry["median_s"] <= entry["q80_s"]
        assert list(entry["shape"]) == list(vendor.FIGURES[figure].full)
