"""The tensor cores' roofs (issue 26): chapter 0 records its TF32 and FP64 mma
loops on NVIDIA; gpubook.limits reads them back, and chapter 9's limits table
and roofline show them where recorded and "not measured" / no roof elsewhere.
Fake records in a folder of their own; no OpenCL device opened."""
import json

import matplotlib.pyplot as plt
import pytest

import gpubook as gb
from gpubook.chapters import across as ac
from gpubook.chapters.across import figures as ap, roofline as rf
from gpubook.paths import RESULTS

GPU, OTHER_GPU, CPU = "nvidia-h200", "nvidia-h100-80gb-hbm3", "cpu-skylake-avx512-intel-r-xeon-r-processor"
TF32, FP64 = 321_000.0, 33_300.0   # made-up roofs, GFLOP/s


def copy_device(slug, root, only=None, tensor=None, drop_roofs=False):
    """Copy a device's records under root; `tensor`: (TF32, FP64) GFLOP/s added to chapter 0's limits;
    `drop_roofs`: chapter 0's limits without them, as recorded before the mma loops existed."""
    (root / slug).mkdir(parents=True)
    for path in (RESULTS / slug).glob("*.json"):
        if only is not None and path.stem not in only:
            continue
        entry = json.loads(path.read_text())
        if path.stem == "00_device" and tensor is not None:
            entry["data"]["limits"].update(tf32_mma_gflops=tensor[0], fp64_mma_gflops=tensor[1])
        if path.stem == "00_device" and drop_roofs:
            for key in ("tf32_mma_gflops", "fp64_mma_gflops"):
                entry["data"]["limits"].pop(key, None)
        (root / slug / path.name).write_text(json.dumps(entry))


@pytest.fixture
def results(tmp_path):
    copy_device(GPU, tmp_path, tensor=(TF32, FP64))
    copy_device(OTHER_GPU, tmp_path, drop_roofs=True)  # an NVIDIA record from before the mma loops
    copy_device(CPU, tmp_path)                # never has them
    return ac.load(tmp_path)


def test_limits_read_the_recorded_roofs(tmp_path):
    copy_device(GPU, tmp_path, only={"00_device"}, tensor=(TF32, FP64))
    copy_device(CPU, tmp_path, only={"00_device"})
    name = json.loads((RESULTS / GPU / "00_device.json").read_text())["device"]
    assert gb.limits.mma_gflops(name, "tf32", tmp_path) == TF32
    assert gb.limits.mma_gflops(name, "f64", tmp_path) == FP64
    cpu = json.loads((RESULTS / CPU / "00_device.json").read_text())["device"]
    assert gb.limits.mma_gflops(cpu, "tf32", tmp_path) is None       # recorded, but not measured there
    assert gb.limits.mma_gflops("No Such Device", "f64", tmp_path) is None  # no record at all
    with pytest.raises(ValueError, match="unknown kind 'bf16'"):
        gb.limits.mma_gflops(name, "bf16", tmp_path)


def test_limit_rows_show_the_roofs_or_not_measured(results):
    rows = ac.limit_rows(results)
    header = rows[0]
    col = {slug: header.index(ac.name(results[slug])) for slug in (GPU, OTHER_GPU, CPU)}
    by_label = {r[0]: r for r in rows}
    tf32 = by_label["TF32 mma loop, tensor cores (GFLOP/s)"]
    fp64 = by_label["FP64 mma loop, tensor cores (GFLOP/s)"]
    assert tf32[col[GPU]] == "321,000" and fp64[col[GPU]] == "33,300"
    for slug in (OTHER_GPU, CPU):
        assert tf32[col[slug]] == fp64[col[slug]] == "not measured"
    # right after the FMA rows they stand beside
    labels = [r[0] for r in rows]
    assert labels.index("TF32 mma loop, tensor cores (GFLOP/s)") == labels.index(
        "FP64 multiply-add, measured in chapter 8 (GFLOP/s)") + 1


def test_roofline_roofs(results):
    roofs, _ = rf.roofline(results[GPU])
    assert roofs["TF32 mma GFLOP/s"] == TF32 and roofs["FP64 mma GFLOP/s"] == FP64
    for slug in (OTHER_GPU, CPU):
        roofs, points = rf.roofline(results[slug])
        assert roofs["TF32 mma GFLOP/s"] is None and roofs["FP64 mma GFLOP/s"] is None
        assert points  # the other roofs and points are unchanged


def test_a_step_on_tensor_cores_is_held_against_their_roof(tmp_path):
    """A chapter-6 step named for the tensor cores gets the TF32 roof; the portable steps and
    cuBLAS SSYRK keep the FP32 one; without a recorded roof the step falls back to FP32."""
    copy_device(GPU, tmp_path, tensor=(TF32, FP64))
    path = tmp_path / GPU / "06_covariance.json"
    entry = json.loads(path.read_text())
    d = entry["data"]
    d["steps"]["tensor_cores_3xtf32"] = d["steps"]["register_tiles"] / 2
    d["useful_gflops"]["tensor_cores_3xtf32"] = 2 * d["useful_gflops"]["register_tiles"]
    path.write_text(json.dumps(entry))
    records = ac.load(tmp_path)[GPU]
    lim = ac.limits(records)
    points = {p["step"]: p for p in rf.roofline(records)[1] if p["chapter"] == "6. Covariance"}
    on_tc, tiles = points["tensor cores 3xtf32"], points["register tiles"]
    assert on_tc["roof"] == pytest.approx(min(lim["copy_gbs"] * on_tc["ai"], TF32))
    assert tiles["roof"] == pytest.approx(min(lim["copy_gbs"] * tiles["ai"], lim["fp32_gflops"]))
    assert on_tc["roof"] > tiles["roof"]
    assert on_tc["share"] < 1 < on_tc["gflops"] / tiles["roof"]  # under its own roof, above FP32's
    if "syrk" in points:
        assert points["syrk"]["roof"] == tiles["roof"]
    # a record without the mma loops: the same step against the FP32 roof
    entry = json.loads((tmp_path / GPU / "00_device.json").read_text())
    for key in ("tf32_mma_gflops", "fp64_mma_gflops"):
        del entry["data"]["limits"][key]
    (tmp_path / GPU / "00_device.json").write_text(json.dumps(entry))
    records = ac.load(tmp_path)[GPU]
    points = {p["step"]: p for p in rf.roofline(records)[1] if p["chapter"] == "6. Covariance"}
    assert points["tensor cores 3xtf32"]["roof"] == tiles["roof"]
    assert ac.records.on_tensor_cores("3xTF32") and ac.records.on_tensor_cores("DMMA trailing update")
    assert not ac.records.on_tensor_cores("register tiles") and not ac.records.on_tensor_cores("5 tiled")


def test_roofline_draws_the_roofs_only_where_measured(results):
    fig = ap.plot_roofline(results)
    panels = {ax.get_title().split("\n")[0]: ax for ax in fig.axes}
    gpu = panels[ac.name(results[GPU])]
    lines = [line for line in gpu.lines if line.get_linestyle() == "--" and line.get_color() != "black"]
    assert len(lines) == 2
    for line, peak, label in zip(lines, (TF32, FP64), ("TF32", "FP64")):
        x, y = line.get_xydata().T
        assert list(y) == [peak, peak]  # flat, at the recorded roof
        assert x[0] == pytest.approx(peak / ac.limits(results[GPU])["copy_gbs"])  # from the ridge on
    labels = [t.get_text() for t in gpu.texts]
    assert "TF32 mma loop (tensor cores)\n321,000 GFLOP/s" in labels
    assert "FP64 mma loop (tensor cores)\n33,300 GFLOP/s" in labels
    for slug in (OTHER_GPU, CPU):
        ax = panels[ac.name(results[slug])]
        assert not [line for line in ax.lines if line.get_color() != "black"]
        assert not [t for t in ax.texts if "mma loop" in t.get_text()]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "roof: TF32 mma loop (tensor cores)" in legend and "roof: FP64 mma loop (tensor cores)" in legend
    plt.close(fig)


def test_no_roof_in_the_legend_where_no_device_measured_it(tmp_path):
    copy_device(OTHER_GPU, tmp_path, drop_roofs=True)
    copy_device(CPU, tmp_path)
    fig = ap.plot_roofline(ac.load(tmp_path))
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert not [t for t in legend if "mma" in t]
    assert "roof: copy bandwidth, then FP32" in legend
    plt.close(fig)
