"""The vendor-library anchors: silent where PyTorch or an NVIDIA GPU is missing
(the CI case), measured and recorded where they are (faked here, no GPU)."""
import contextlib
import json
import subprocess
from types import SimpleNamespace

import numpy as np
import pyopencl as cl
import pytest

from gpubook import records, vendor, vendor_apart, vendor_cub

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


@pytest.fixture(autouse=True)
def in_process(monkeypatch):
    """The fakes below patch this process, so measure here unless a test says otherwise."""
    monkeypatch.setattr(vendor, "APART", False)


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

    monkeypatch.setattr(vendor, "torch_workload", workload)
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


def test_one_figure_at_several_shapes_in_one_process(monkeypatch, capsys, results):
    """measure_each: the figure's workload at each shape (a chapter's own matrices:
    m, n, cond, seed), entries in the shapes' order, named by the figure, and nothing
    saved to vendor.json; only figures that PyTorch calls."""
    monkeypatch.setattr(vendor, "_import_torch", fake_torch)
    used = []

    def workload(torch_, figure, shape, dev):
        used.append((figure, shape))
        return (lambda: None), (lambda: 0.0), (lambda: {"orthogonality": 1e-14})

    monkeypatch.setattr(vendor, "torch_workload", workload)
    shapes = [(2_000, 50, 1e2, 7), (2_000, 50, 1e14, 7)]
    FakeEvent.times = [1.0] * 6 + [2.0] * 6
    found = vendor.measure_each(H200, "qr", shapes)
    assert used == [("qr", shapes[0]), ("qr", shapes[1])]
    assert [e["median_s"] for e in found] == [pytest.approx(1e-3), pytest.approx(2e-3)]
    assert all(e["figure"] == "qr" and e["orthogonality"] == 1e-14 for e in found)
    assert found[0]["rate"] == pytest.approx(vendor.amount("qr", (2_000, 50)) / 1e-3)
    assert "measured qr on NVIDIA H200" in one_line(capsys)
    assert not (results / "nvidia-h200" / "vendor.json").exists()
    with pytest.raises(ValueError, match="PyTorch calls"):
        vendor.measure_each(H200, "syrk", shapes)


def test_a_chapter_matrix_of_given_condition_is_the_same_for_every_caller():
    """vendor_calls' "qr" at (m, n, cond, seed) factors orthogonality.conditioned's
    matrix: what part 8.3's methods factor (measure.conditioned is the same function)."""
    from gpubook import orthogonality
    from gpubook.chapters.lsq import measure
    assert measure.conditioned is orthogonality.conditioned
    a = orthogonality.conditioned(300, 12, 1e8, seed=3)
    assert np.linalg.cond(a) == pytest.approx(1e8, rel=1e-6)
    assert np.array_equal(a, orthogonality.conditioned(300, 12, 1e8, seed=3))


def test_a_failing_library_never_fails_the_chapter(monkeypatch, capsys, results):
    monkeypatch.setattr(vendor, "_import_torch", lambda: fake_torch())

    def out_of_memory(*args):
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB\nmore")

    monkeypatch.setattr(vendor, "torch_workload", out_of_memory)
    assert vendor.measure(H200, "qr", scale="small") is None
    assert "measuring failed on NVIDIA H200: CUDA out of memory" in one_line(capsys)


def test_unknown_figure_is_an_error():
    with pytest.raises(ValueError, match="unknown vendor figure 'gemv'"):
        vendor.measure(H200, "gemv")


def test_work_counts():
    assert vendor.amount("sum", (2**28,)) == vendor.amount("cub_sum", (2**28,)) == pytest.approx(1.073741824)
    assert vendor.amount("cumsum", (2**28,)) == vendor.amount("cub_scan", (2**28,)) == pytest.approx(2.147483648)
    # SSYRK: n(n+1)/2 dot products of length m, a multiply and an add each
    assert vendor.amount("syrk", (131_072, 4_096)) == pytest.approx(131_072 * 4_096 * 4_097 / 1e12)
    assert vendor.amount("syrk", (3, 2)) == pytest.approx(2 * 3 * 3 / 1e12)
    assert vendor.amount("xtx", (131_072, 4_096)) == pytest.approx(4.398046511104)
    assert vendor.amount("qr", (25_000, 5_000)) == pytest.approx(1250 - 250 / 3)


def test_reference_gpu_figures_are_recorded():
    stored = vendor.recorded("sum")
    assert "NVIDIA H200" in stored, "run `python -m gpubook.vendor` on the H200 with GPUBOOK_RECORD=1"
    missing = [f for f in vendor.FIGURES if "NVIDIA H200" not in vendor.recorded(f)]
    assert not missing, (f"{missing} not recorded on the H200: run `GPUBOOK_RECORD=1 python -m gpubook.vendor "
                         f"{' '.join(missing)}` there")
    for figure in vendor.FIGURES:
        entry = vendor.recorded(figure)["NVIDIA H200"]
        assert entry["rate"] > 0 and entry["q20_s"] <= entry["median_s"] <= entry["q80_s"]
        assert list(entry["shape"]) == list(vendor.FIGURES[figure].full)
        if vendor.FIGURES[figure].way != "torch":
            assert entry["what"] and entry["rel_error"] < 1e-3, (figure, entry)


# --- the same jobs as the chapters: cuBLAS SSYRK through CuPy, CUB called directly ----------------------

def test_every_figure_says_what_it_calls():
    for name, fig in vendor.FIGURES.items():
        assert fig.way in vendor.WAYS and fig.what, name
    assert "cupy.cublas.syrk('T', x, out=c, lower=True)" in vendor.FIGURES["syrk"].what
    assert "cub::DeviceReduce::Sum" in vendor.FIGURES["cub_sum"].what
    assert "cub::DeviceScan::InclusiveSum" in vendor.FIGURES["cub_scan"].what
    assert vendor.FIGURES["syrk"].full == (131_072, 4_096)
    assert vendor.FIGURES["cub_sum"].full == vendor.FIGURES["cub_scan"].full == (2**28,)


@pytest.fixture
def no_cuda_libraries(monkeypatch):
    """Neither PyTorch, CuPy nor nvcc, whatever this machine has."""
    monkeypatch.setattr(vendor, "_import_torch", lambda: None)
    monkeypatch.setattr(vendor, "_import_cupy", lambda: None)
    monkeypatch.setattr(vendor_cub, "nvcc", lambda: None)


def test_without_cupy_or_nvcc_one_line_and_nothing(no_cuda_libraries, capsys, results):
    assert vendor.measure(H200, "syrk", scale="small") is None
    assert one_line(capsys) == "vendor libraries: CuPy is not installed here (syrk not measured)"
    assert vendor.measure(H200, ("cub_sum", "cub_scan"), scale="small") is None
    line = one_line(capsys)
    assert "nvcc is not on PATH" in line and "CuPy is not installed here (cub_sum, cub_scan not measured)" in line
    assert vendor.measure(CPU, "cub_sum", scale="small") is None
    assert "not an NVIDIA GPU" in one_line(capsys)
    assert not list(results.iterdir())


def test_what_is_missing_is_named_beside_what_was_measured(monkeypatch, capsys, results):
    monkeypatch.setattr(vendor, "_import_torch", fake_torch)
    monkeypatch.setattr(vendor, "_import_cupy", lambda: None)
    monkeypatch.setattr(vendor, "torch_workload", lambda *a: ((lambda: None), (lambda: 1e-7)))
    FakeEvent.times = [1.0] * 20
    found = vendor.measure(H200, ("syrk", "sum"), scale="small")
    assert list(found) == ["sum"] and found["sum"]["what"] == "torch.sum(x) on float32"
    line = one_line(capsys)
    assert line.startswith("vendor libraries: measured sum on NVIDIA H200 in this run (torch 9.9)")
    assert line.endswith("; CuPy is not installed here (syrk not measured)")


class FakeCupyEvent:
    times = []

    def record(self):
        pass

    def synchronize(self):
        pass


def fake_cupy(names=("NVIDIA A100", "NVIDIA H200")):
    runtime = SimpleNamespace(
        getDeviceCount=lambda: len(names), runtimeGetVersion=lambda: 13000, deviceSynchronize=lambda: None,
        getDeviceProperties=lambda i: {"name": names[i].encode(), "pciBusID": 3 + i})
    cuda = SimpleNamespace(runtime=runtime, Event=FakeCupyEvent, Device=lambda i: contextlib.nullcontext(),
                           get_elapsed_time=lambda a, b: FakeCupyEvent.times.pop(0))
    return SimpleNamespace(__version__="14.0", cuda=cuda,
                           get_default_memory_pool=lambda: SimpleNamespace(free_all_blocks=lambda: None))


def test_syrk_through_cupy_is_timed_and_recorded(monkeypatch, capsys, results):
    monkeypatch.setattr(vendor, "_import_cupy", fake_cupy)
    used = {}

    def workload(cupy, figure, shape):
        used[figure] = shape
        return (lambda: None), (lambda: 2e-7), None

    monkeypatch.setattr(vendor, "cupy_workload", workload)
    FakeCupyEvent.times = [4.0] * 7 + [5.0] * 3
    found = vendor.measure(H200, "syrk", scale="small")
    entry = found["syrk"]
    small = vendor.FIGURES["syrk"].small
    assert used["syrk"] == small and entry["median_s"] == pytest.approx(4e-3)
    assert entry["rate"] == pytest.approx(vendor.amount("syrk", small) / 4e-3)
    assert entry["what"] == vendor.FIGURES["syrk"].what and entry["label"].startswith("cuBLAS SSYRK")
    assert entry["cupy"] == "14.0" and entry["cuda"] == "13.0"
    assert one_line(capsys) == "vendor libraries: measured syrk on NVIDIA H200 in this run (cupy 14.0)"
    stored = json.loads((results / "nvidia-h200" / "vendor.json").read_text())["data"]["syrk"]
    assert stored["what"].startswith("cupy.cublas.syrk('T', x, out=c, lower=True)")


class FakeProgram:
    """vendor_cub's command lines, answered like the program would."""

    def __init__(self, fail=None):
        self.calls, self.fail = [], fail

    def __call__(self, cmd, timeout):
        self.calls.append(cmd[1:])
        if cmd[1] == "list":
            out = "device 0 1 NVIDIA A100\ndevice 1 7 NVIDIA H200\n"
        elif self.fail:
            return subprocess.CompletedProcess(cmd, 2, "", self.fail)
        else:
            out = "".join(f"ms {ms}\n" for ms in (0.7, 0.71, 0.69)[:int(cmd[3])]) + \
                "rel_error 1.2e-07\ncub 300100\ncudart 13000\n"
        return subprocess.CompletedProcess(cmd, 0, out, "")


def test_cub_called_directly_through_the_program(monkeypatch, capsys, results, tmp_path):
    program = FakeProgram()
    monkeypatch.setattr(vendor_cub, "build", lambda compiler=None, gpu="": (tmp_path / "vendor_cub", None))
    monkeypatch.setattr(vendor_cub, "_run", program)
    found = vendor.measure(H200, "cub_scan", shapes={"cub_scan": (1000,)}, scale="small")
    entry = found["cub_scan"]
    assert program.calls == [["list"], ["scan", "1000", "20", "1"]]     # the H200 is CUDA device 1
    assert entry["median_s"] == pytest.approx(0.7e-3) and entry["q20_s"] < entry["median_s"] < entry["q80_s"]
    assert entry["rate"] == pytest.approx(8000 / 1e9 / 0.7e-3)
    assert entry["rel_error"] == 1.2e-7 and entry["cub"] == "3.1.0" and entry["cuda"] == "13.0"
    assert entry["what"] == vendor.FIGURES["cub_scan"].what and "vendor_cub.cu" in entry["what"]
    assert entry["nvcc"] == "-O3 -arch=native"
    assert one_line(capsys) == "vendor libraries: measured cub_scan on NVIDIA H200 in this run (cub 3.1.0)"


def test_a_failing_program_falls_back_to_cupy_and_says_so(monkeypatch, capsys, results, tmp_path):
    monkeypatch.setattr(vendor_cub, "build", lambda compiler=None, gpu="": (tmp_path / "vendor_cub", None))
    monkeypatch.setattr(vendor_cub, "_run", FakeProgram(fail="cudaMalloc(&in, ...) failed: out of memory\n"))
    monkeypatch.setattr(vendor, "_import_cupy", lambda: None)
    assert vendor.measure(H200, "cub_sum", scale="small") is None
    assert one_line(capsys) == ("vendor libraries: vendor_cub sum failed: cudaMalloc(&in, ...) failed: out of "
                                "memory on NVIDIA H200; CuPy is not installed here (cub_sum not measured)")
    monkeypatch.setattr(vendor, "_import_cupy", fake_cupy)
    monkeypatch.setattr(vendor, "cupy_workload", lambda cupy, figure, shape: ((lambda: None), (lambda: 0.0), None))
    FakeCupyEvent.times = [1.0] * 20
    entry = vendor.measure(H200, "cub_sum", scale="small")["cub_sum"]
    assert entry["label"] == vendor.CUPY_CUB["cub_sum"][0] and "cupy.cuda.cub.device_reduce" in entry["what"]
    capsys.readouterr()


def test_compare_ways_records_nothing(monkeypatch, capsys, results, tmp_path):
    monkeypatch.setattr(vendor_cub, "build", lambda compiler=None, gpu="": (tmp_path / "vendor_cub", None))
    monkeypatch.setattr(vendor_cub, "_run", FakeProgram())
    assert vendor.measure(H200, "cub_sum", cub_way="nvcc", scale="small")["cub_sum"]["cub"] == "3.1.0"
    assert not list(results.iterdir())
    with pytest.raises(ValueError, match="cub_way is 'nvcc' or 'cupy'"):
        vendor.measure(H200, "cub_sum", cub_way="torch")
    capsys.readouterr()


def test_program_output_is_read_or_refused():
    out = vendor_cub.parse_run("ms 0.704\nms 0.71\nrel_error 3.0e-07\ncub 300000\ncudart 13000\n")
    assert out == {"ms": [0.704, 0.71], "rel_error": 3e-7, "cub": "3.0.0", "cudart": "13.0"}
    with pytest.raises(vendor_cub.CubError, match="printed no timings"):
        vendor_cub.parse_run("usage: vendor_cub list | (sum|scan) N REPEATS DEVICE\n")
    assert vendor_cub.parse_devices("device 0 25 NVIDIA H200\nnoise\ndevice 1 26 NVIDIA H100 80GB HBM3\n") == \
        [(0, "NVIDIA H200", 25), (1, "NVIDIA H100 80GB HBM3", 26)]
    assert vendor_cub.version_name(200800) == "2.8.0" and vendor_cub.version_name(12080) == "12.8"
    with pytest.raises(ValueError, match="1 to 2\\*\\*31 - 1 floats"):
        vendor_cub.run("x", "sum", 2**31, 1, 0)
    with pytest.raises(ValueError, match="'sum' or 'scan'"):
        vendor_cub.run("x", "max", 10, 1, 0)


def fake_nvcc(tmp_path, body):
    exe = tmp_path / "nvcc"
    exe.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'Cuda compilation tools, release 13.0'; "
                   f"exit 0; fi\necho \"$@\" >> {tmp_path}/calls\n{body}\n")
    exe.chmod(0o755)
    return str(exe)


def test_build_once_per_host_or_say_why(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(vendor_cub.shutil, "which", lambda name: None)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    if not (vendor_cub.pathlib.Path("/usr/local/cuda/bin/nvcc")).is_file():
        assert vendor_cub.build() == (None, "nvcc is not on PATH nor in CUDA_HOME, so CUB cannot be called directly")
    # a compiler that writes its -o file: built once, then found
    nvcc = fake_nvcc(tmp_path, 'while [ "$1" != -o ]; do shift; done; echo built > "$2"')
    exe, why = vendor_cub.build(nvcc, gpu="NVIDIA H200")
    assert why is None and exe.read_text() == "built\n" and exe.parent == tmp_path / "cache" / "gpubook"
    assert vendor_cub.build(nvcc, gpu="NVIDIA H200") == (exe, None)
    calls = (tmp_path / "calls").read_text().splitlines()
    assert len(calls) == 1 and calls[0].startswith("-O3 -arch=native -o ") and calls[0].endswith("vendor_cub.cu")
    assert vendor_cub.build(nvcc, gpu="NVIDIA H100 80GB HBM3")[0] != exe   # another GPU, another build
    # a compiler that fails: its first error line
    bad = fake_nvcc(tmp_path / "cache", "echo 'vendor_cub.cu(3): error: identifier \"cub\" is undefined' >&2; exit 1")
    assert vendor_cub.build(bad) == (None, 'nvcc could not build gpubook/vendor_cub.cu: '
                                           'vendor_cub.cu(3): error: identifier "cub" is undefined')


def test_the_program_calls_cub_itself_and_prints_what_is_read():
    source = vendor_cub.SOURCE.read_text()
    assert "#include <cub/cub.cuh>" in source
    assert "cub::DeviceReduce::Sum(temp, bytes, in, out, n)" in source
    assert "cub::DeviceScan::InclusiveSum(temp, bytes, in, out, n)" in source
    for printed in ('"device %d %d %s\\n"', '"ms %.6f\\n"', '"rel_error %.3e\\n"', '"cub %d\\n"', '"cudart %d\\n"'):
        assert printed in source, printed
    assert source.count("cudaEventRecord(start)") == 1 and source.count("cudaEventRecord(end)") == 1


def test_the_tf32_gemm_runs_with_tf32_allowed_and_only_it(monkeypatch, capsys, results):
    """xtx_tf32: torch.matmul with allow_tf32 on, counted as the full GEMM it is; the others off, and the
    caller's setting restored."""
    torch = fake_torch()
    monkeypatch.setattr(vendor, "_import_torch", lambda: torch)
    used = {}

    def workload(torch_, figure, shape, dev):
        used[figure] = torch_.backends.cuda.matmul.allow_tf32
        return (lambda: None), (lambda: 3e-4)

    monkeypatch.setattr(vendor, "torch_workload", workload)
    FakeEvent.times = [2.0] * 22
    found = vendor.measure(H200, ("xtx", "xtx_tf32"), shapes={"xtx": (64, 8), "xtx_tf32": (64, 8)}, scale="small")
    assert used == {"xtx": False, "xtx_tf32": True} and torch.backends.cuda.matmul.allow_tf32 is True
    entry = found["xtx_tf32"]
    assert vendor.amount("xtx_tf32", (64, 8)) == vendor.amount("xtx", (64, 8)) == 2 * 64 * 8 * 8 / 1e12
    assert entry["rate"] == pytest.approx(2 * 64 * 8 * 8 / 1e12 / 2e-3) and entry["rel_error"] == 3e-4
    assert "allow_tf32=True" in entry["what"] and "GEMM" in entry["what"] and "TF32" in entry["label"]
    assert "measured xtx, xtx_tf32 on NVIDIA H200" in one_line(capsys)


def test_a_child_process_measures_and_says_why_in_one_line(capsys, results):
    """measure() from a chapter runs the libraries in a child process; where they
    are missing (no GPU here) its reasons come back as the same one line."""
    assert vendor.measure(H200, ("sum", "syrk"), scale="small", apart=True) is None
    line = one_line(capsys)
    assert line.startswith("vendor libraries: ") and "failed" not in line, line
    assert "(sum not measured)" in line and "(syrk not measured)" in line, line
    assert not list(results.iterdir())


def test_a_child_process_that_fails_is_one_line_never_an_error(monkeypatch, capsys, results):
    monkeypatch.setattr(vendor_apart.sys, "executable", "false")
    assert vendor.measure(H200, "qr", scale="small", apart=True) is None
    assert one_line(capsys) == ("vendor libraries: the measuring process failed "
                                "(exit 1: no output) (qr not measured)")


def test_the_child_matches_the_gpu_by_the_bus_it_was_sent():
    assert vendor_apart.Named("NVIDIA H200", "NVIDIA Corporation", 0x41).pci_bus_id_nv == 0x41
    with pytest.raises(AttributeError):
        vendor_apart.Named("NVIDIA H200", "NVIDIA Corporation").pci_bus_id_nv


def test_qr_records_both_checks_from_an_untimed_call_beside_its_time(monkeypatch, capsys, results):
    """cuSOLVER's figure through the real workload (gpubook.vendor_calls), its PyTorch calls
    computed by NumPy: the timed call stays mode='r'; the Gram error of its R and
    ||QᵀQ − I||_F of Q from a separate mode='reduced' call go into the entry, after the timing."""
    import numpy as np

    modes = []

    def qr(a, mode):
        modes.append((mode, len(FakeEvent.times)))
        q, r = np.linalg.qr(a)
        return SimpleNamespace(Q=q if mode == "reduced" else None, R=r)

    torch = fake_torch()
    torch.float32, torch.float64 = np.float32, np.float64
    torch.Generator = lambda device: SimpleNamespace(manual_seed=lambda s: np.random.default_rng(s))
    torch.randn = lambda shape, device, dtype, generator: generator.standard_normal(shape)
    torch.linalg = SimpleNamespace(qr=qr, norm=np.linalg.norm)
    monkeypatch.setattr(vendor, "_import_torch", lambda: torch)
    FakeEvent.times = [1.0] * vendor.FIGURES["qr"].repeats
    entry = vendor.measure(H200, "qr", shapes={"qr": (200, 30)}, scale="small")["qr"]
    assert entry["median_s"] == pytest.approx(1e-3) and entry["rel_error"] < 1e-14
    assert entry["gram_error"] < 1e-14 and entry["orthogonality"] < 1e-13
    assert "untimed" in entry["checks"] and entry["what"] == "torch.linalg.qr(a, mode='r') on float64"
    assert [m for m, _ in modes].count("reduced") == 1 and modes[-1] == ("reduced", 0)  # after every timed call
    assert {m for m, _ in modes[:-1]} == {"r"}
    capsys.readouterr()
