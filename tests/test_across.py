"""Chapter 9's figures against the JSON records read directly; missing chapters;
a reader's device in a results folder of its own; no OpenCL device opened."""
import json
import shutil

import matplotlib.pyplot as plt
import pytest
from matplotlib.text import Annotation

from gpubook.chapters import across as ac
from gpubook.chapters.across import figures as ap, roofline as rf
from gpubook.paths import RESULTS

DEVICES = sorted(p.parent.name for p in RESULTS.glob("*/00_device.json")
                 if p.parent.name != "reference")  # reference/ holds digests

# The last step of each chapter, read straight from its JSON file (not through CHAPTERS).
LAST_STEP = {
    "01_loop_order": lambda d: d["steps"][-1]["rate"],
    "02_work_items": lambda d: max(r["rate"] for r in d["sweep"]),
    "03_reduction": lambda d: max(r["rate"] for r in d["sweep"] if r["variant"] == "tree reduction (step 3)"),
    "03_device_reduction": lambda d: next(r["rate"] for r in d["sweep"]
                                          if r["variant"] == "5_unrolled" and r["floats"] == d["n"]),
    "04_vector_types": lambda d: d["fast_rate"],
    "05_transpose": lambda d: next(r["rate"] for r in d["iteration"]
                                   if r["variant"] == "fused" and r["J"] == d["summary"]["J_max"]),
    "06_covariance": lambda d: d["useful_gflops"]["register_tiles"],
    "07_scan": lambda d: next(r["rate"] for r in d["scan_sweep"]
                              if r["variant"].startswith("4_single_pass") and r["floats"] == d["n_scan"]),
}


def read(device, file):
    path = RESULTS / device / f"{file}.json"
    return json.loads(path.read_text())["data"] if path.exists() else None


@pytest.fixture(scope="module")
def results():
    return ac.load()


def test_reference_devices_are_loaded(results):
    assert DEVICES and set(DEVICES) <= set(results)
    assert "reference" not in results  # digests, not a device


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("file", sorted(LAST_STEP))
def test_headline_and_share_equal_the_records(results, device, file):
    data = read(device, file)
    if data is None:
        pytest.skip(f"{device} has no {file}")
    step, figure, share = ac.headline(ac.by_file(file), results[device])
    assert figure == LAST_STEP[file](data)
    if results[device][file]["scale"] != "full":  # a small-scale run reaches no limit: no share
        assert share is None
        return
    limits = read(device, "00_device")["limits"]
    limit = figure / share
    if file == "04_vector_types":  # chapter 4's dotted line at its first J, the chapter's own J
        assert limit == pytest.approx(data["bound"][0], rel=1e-12)
    elif file == "05_transpose":  # the chapter's own time over the memory bound
        assert share == pytest.approx(1 / data["summary"]["iteration_fused_over_bound"], rel=1e-9)
    elif file == "06_covariance":  # the limit the chapter's page quotes, as its record holds it
        assert limit == pytest.approx(data["fp32_gflops"], rel=1e-12)
    elif file in ("03_device_reduction", "07_scan"):
        assert limit == pytest.approx(data["copy_gbs"], rel=1e-12)
    else:
        assert limit == pytest.approx(min(1e6 / limits["launch_us"],
                                          limits["copy_gbs"] * 1e9 / (4 * data["J"] * data["K"])))


@pytest.mark.parametrize("device", DEVICES)
def test_vendor_figures_equal_vendor_json(results, device):
    vendor = read(device, "vendor")
    if vendor is None:
        pytest.skip(f"{device} has no vendor.json")
    cov = read(device, "06_covariance")
    expected = {("03_device_reduction", "sum"): vendor["sum"]["rate"],
                ("07_scan", "cumsum"): vendor["cumsum"]["rate"],
                # TFLOP/s counted as 2·m·n², the chapter counts useful GFLOP/s, m·n·(n+1)
                ("06_covariance", "xtx"): vendor["xtx"]["rate"] * 1e3 * (cov["n"] + 1) / (2 * cov["n"])}
    for (file, figure), value in expected.items():
        assert ac.vendor_figure(ac.by_file(file), results[device], figure) == pytest.approx(value, rel=1e-12)
    assert ac.vendor_figure(ac.by_file("05_transpose"), results[device]) is None  # no vendor figure


def test_the_same_job_comes_first_and_second_lines_follow(tmp_path):
    """SSYRK, CUB's sum and scan are each chapter's first vendor line; where a device
    recorded them, every ratio is to them, and the PyTorch calls stay as second lines."""
    assert [v.figure for v in ac.by_file("06_covariance").vendors] == ["syrk", "xtx"]
    assert [v.figure for v in ac.by_file("03_device_reduction").vendors] == ["cub_sum", "sum"]
    assert [v.figure for v in ac.by_file("07_scan").vendors] == ["cub_scan", "cumsum"]
    gpu = "nvidia-h200"
    copy_device(gpu, tmp_path)
    path = tmp_path / gpu / "vendor.json"
    entry = json.loads(path.read_text())
    entry["data"].pop("syrk", None)  # as before SSYRK was recorded
    path.write_text(json.dumps(entry))
    cov = read(gpu, "06_covariance")
    before = ac.load(tmp_path)
    ratio, label = ac.vendor_ratio(ac.by_file("06_covariance"), before[gpu])
    assert "second line" in label  # no SSYRK recorded: the GEMM, said to be a second line
    rows = ac.vendor_rows(before)
    first = next(k for k, r in enumerate(rows) if r[0] == "6. Covariance")
    assert "SSYRK" in rows[first][1] and rows[first][3] == "not recorded"
    assert rows[first + 1][1].startswith("second line")
    entry["data"]["syrk"] = dict(entry["data"]["xtx"], figure="syrk", label="cuBLAS SSYRK (test)",
                                 median_s=0.05, shape=[cov["m"], cov["n"]])
    path.write_text(json.dumps(entry))
    after = ac.load(tmp_path)
    ratio, label = ac.vendor_ratio(ac.by_file("06_covariance"), after[gpu])
    assert label == "cuBLAS SSYRK (test)"
    assert ratio == pytest.approx(cov["useful_gflops"]["register_tiles"] * 0.05 / (cov["m"] * cov["n"] * (cov["n"] + 1) / 1e9))
    row = next(r for r in ac.vendor_rows(after) if r[0] == "6. Covariance")
    assert row[1] == "cuBLAS SSYRK (test)" and row[3].endswith(f"(last step {ratio:.2f}×)")
    labels = [label for label, _, p in rf.discussed(after[gpu])]
    assert "cuBLAS SSYRK" in labels and "cuBLAS GEMM through torch.matmul" not in labels
    with pytest.raises(ValueError, match="no vendor figure"):
        ac.vendor_figure(ac.by_file("06_covariance"), after[gpu], "cumsum")


def test_machine_rows(tmp_path):
    gpu = "nvidia-h200"
    copy_device(gpu, tmp_path, only={"00_device"})
    assert ac.machine_rows(ac.load(tmp_path)) == [["quantity"]]  # nobody recorded the machine chapter
    curve = [{"bytes": 2**12 * 4**k, "ns": ns, "rate": rate}
             for k, (ns, rate) in enumerate([(30.0, 9000.0), (31.0, 8800.0), (250.0, 4000.0), (600.0, 3900.0)])]
    data = {"latency_ns": 600.0, "latency_curve": curve, "bandwidth_curve": curve, "read_gbs": 3900.0,
            "local_gbs": 20000.0, "little": {"latency_ns": 900.0, "device_bytes": 900.0 * 3900.0,
                                               "per_cu_bytes": 900.0 * 3900.0 / 132}}
    (tmp_path / gpu / "00_machine.json").write_text(json.dumps({"device": "NVIDIA H200", "data": data}))
    rows = {r[0]: r[1:] for r in ac.machine_rows(ac.load(tmp_path))}
    assert rows["quantity"] == ["NVIDIA H200"]
    assert rows["latency of one load, device memory (ns)"] == ["600"]
    assert rows["latency of one load, smallest working set (ns)"] == ["30"]
    assert rows["best read bandwidth, in a cache (GB/s)"] == ["9,000"]
    assert rows["latency's half-way edge (working set)"] == ["64 KiB"]
    assert rows["latency's middle level (ns, working sets)"] == ["none"]   # no two sets between
    assert rows["latency Little's law takes (ns; under load where timed)"] == ["900"]
    assert rows["bytes in flight, whole device (Little's law)"] == ["3.35 MiB"]
    assert rows["read bandwidth, work-groups rotated, 1 to 8 MiB (GB/s)"] == ["not recorded"]
    rotated = [{"bytes": 2**k, "rate": 1000.0 * k} for k in range(18, 26)]  # 1, 2, 4, 8 MiB: 20-23
    data["rotated_curve"] = rotated
    (tmp_path / gpu / "00_machine.json").write_text(json.dumps({"device": "NVIDIA H200", "data": data}))
    rows = {r[0]: r[1:] for r in ac.machine_rows(ac.load(tmp_path))}
    assert rows["read bandwidth, work-groups rotated, 1 to 8 MiB (GB/s)"] == ["22,000"]


def test_roofline_labels_the_discussed_points_and_its_legend_is_drawn(results):
    fig = ap.plot_roofline(results)
    for ax, records in zip(fig.axes, [r for r in results.values() if ac.limits(r)]):
        texts = {t.get_text(): t.xy for t in ax.texts if isinstance(t, Annotation)}  # not the roofs' labels
        found = rf.discussed(records)
        assert found and len(texts) == len(found) < len(rf.roofline(records)[1])
        for label, _, p in found:
            assert texts[label] == (p["ai"], p["gflops"])
    points = [p for r in results.values() for p in rf.roofline(r)[1]]
    kinds = {p["vendor"] for p in points}
    for text in (t.get_text() for t in fig.legends[0].get_texts()):  # each entry names something drawn
        if text.startswith("roof:"):
            assert any(line.get_xydata().size for ax in fig.axes for line in ax.lines)
        elif text.startswith("vendor library"):
            assert ("second line" if "second line" in text else "same job") in kinds, text
        else:
            assert any(p["chapter"] == text for p in points), text
    plt.close(fig)


def copy_device(src, dst_root, slug=None, drop=(), rename=None, only=None, scale=None):
    dst = dst_root / (slug or src)
    dst.mkdir(parents=True)
    for path in (RESULTS / src).glob("*.json"):
        if path.stem in drop or (only is not None and path.stem not in only):
            continue
        entry = json.loads(path.read_text())
        if rename:
            entry["device"] = rename
        if scale:
            entry["scale"] = scale
        (dst / path.name).write_text(json.dumps(entry))


def test_missing_chapter_is_absent(tmp_path):
    gpu, cpu = "nvidia-h200", "cpu-skylake-avx512-intel-r-xeon-r-processor"
    copy_device(gpu, tmp_path, drop={"07_scan", "vendor"})
    copy_device(cpu, tmp_path)
    results = ac.load(tmp_path)
    scan = ac.by_file("07_scan")
    assert ac.headline(scan, results[gpu]) is None and ac.steps(scan, results[gpu]) == []
    assert ac.vendor_figure(ac.by_file("03_device_reduction"), results[gpu]) is None
    row = next(r for r in ac.headline_rows(results) if r[0] == scan.title)
    cpu_scan = ac.headline(scan, results[cpu])
    assert cpu_scan[2] is None  # recorded at small scale: a figure, no share of a limit
    assert row[3:] == ["—", ac.fmt(cpu_scan[1])]
    assert len(ac.vendor_rows(results)) == 1  # no device has vendor figures: the header alone
    shutil.rmtree(tmp_path / cpu)
    copy_device(cpu, tmp_path, drop={"07_scan"})
    results = ac.load(tmp_path)
    assert scan not in ac.present(results)
    assert all(r[0] != scan.title for r in ac.headline_rows(results))
    fig = ap.plot_progress(results)
    # one panel per chapter that has a share of a limit on some device
    assert [ax.get_title().split("\n")[0] for ax in fig.axes] == [c.title for c in ac.with_shares(results)]
    assert ac.with_shares(results) and all(c.limit for c in ac.with_shares(results))
    plt.close(fig)


def test_a_chapter_whose_devices_end_on_different_steps_names_each_cells_step(tmp_path):
    gpu = "nvidia-h200"
    copy_device(gpu, tmp_path)
    copy_device(gpu, tmp_path, slug="other-gpu", rename="Other GPU")
    path = tmp_path / "other-gpu" / "08_lsq.json"
    entry = json.loads(path.read_text())
    gflops = entry["data"]["step_gflops"]
    last = list(gflops)[-1]
    gflops["7 a step only this record has"] = gflops[last] / 2
    path.write_text(json.dumps(entry))
    results = ac.load(tmp_path)
    lsq, cov = ac.by_file("08_lsq"), ac.by_file("06_covariance")
    rows = {r[0]: r for r in ac.headline_rows(results)}
    assert rows[lsq.title][1] == "differs by device (named in each cell)"
    assert rows[lsq.title][3].endswith(f", step {last}")
    assert rows[lsq.title][4].endswith(", step 7 a step only this record has")
    # the same last step on both: named once, in its column
    assert rows[cov.title][1] == ac.headline(cov, results[gpu])[0]
    assert not any(", step " in cell for cell in rows[cov.title][3:])


def test_reader_device_appears(tmp_path):
    for device in DEVICES:
        copy_device(device, tmp_path)
    copy_device("cpu-skylake-avx512-intel-r-xeon-r-processor", tmp_path, slug="my-laptop-gpu",
                rename="My Laptop GPU", only={"00_device", "01_loop_order", "05_transpose"}, scale="full")
    copy_device("nvidia-h200", tmp_path, slug="no-limits-gpu", rename="No Limits GPU", only={"06_covariance"})
    results = ac.load(tmp_path)
    assert list(results)[-1] == "no-limits-gpu"  # no chapter 0: last, figures without shares
    mine = results["my-laptop-gpu"]
    assert ac.name(mine) == "My Laptop GPU"
    rows = ac.headline_rows(results)
    col = rows[0].index("My Laptop GPU")
    by_title = {r[0]: r for r in rows}
    h = ac.headline(ac.by_file("01_loop_order"), mine)
    assert h[1] == read("cpu-skylake-avx512-intel-r-xeon-r-processor", "01_loop_order")["steps"][-1]["rate"]
    assert by_title[ac.by_file("01_loop_order").title][col] == f"{ac.fmt(h[1])} ({ac.pct(h[2])})"
    assert by_title[ac.by_file("06_covariance").title][col] == "—"
    cov = ac.headline(ac.by_file("06_covariance"), results["no-limits-gpu"])
    assert cov[2] is None and by_title[ac.by_file("06_covariance").title][-1] == ac.fmt(cov[1])
    assert "My Laptop GPU" in ac.limit_rows(results)[0]
    fig = ap.plot_progress(results)
    assert "My Laptop GPU" in [t.get_text() for t in fig.legends[0].get_texts()]
    plt.close(fig)


def test_opens_no_opencl_device(monkeypatch):
    import pyopencl as cl

    def refuse(*args, **kwargs):
        raise AssertionError("chapter 9 must not open an OpenCL device")

    monkeypatch.setattr(cl, "get_platforms", refuse)
    monkeypatch.setattr(cl, "Context", refuse)
    results = ac.load()
    for rows in (ac.limit_rows(results), ac.headline_rows(results), ac.vendor_rows(results)):
        assert len(rows) > 1
    plt.close(ap.plot_progress(results))


def test_recorded_numbers():
    assert ac.recorded_numbers({"a": [1.5, {"b": 2}], "c": "x", "d": True, "e": []}) == {1.5, 2}


def test_fp64_row_comes_from_chapter_8():
    results = ac.load()
    rows = ac.limit_rows(results)
    row = next(r for r in rows if r[0].startswith("FP64"))
    devices = [r for r in results.values() if ac.limits(r)]
    for cell, records in zip(row[1:], devices):
        stored = records.get("08_lsq", {}).get("data", {}).get("fp64_gflops")
        assert cell == ac.fmt(stored)
    assert any(cell != "—" for cell in row[1:-1])


def test_multi_rows_read_chapter_10_records(tmp_path):
    import json
    from gpubook.chapters import across
    data = {"devices": 2, "covariance": {"1": {"seconds": 0.4}, "2": {"seconds": 0.21}},
            "compute_bound_s": {"1": 0.4, "2": 0.2}, "transfer_bound_s": {"1": 0.3, "2": 0.19},
            "subsets": {"seconds": {"1": 1.4, "2": 0.7}}, "dask": {"seconds": 0.5, "store_threads_s": 0.45, "held_s": 0.22}}
    (tmp_path / "2-nvidia-h200").mkdir()
    (tmp_path / "2-nvidia-h200" / "10_multi_gpu.json").write_text(json.dumps({"device": "2 × NVIDIA H200",
                                                                             "data": data}))
    header, row = across.multi_rows(tmp_path)
    assert row == ["2 × NVIDIA H200", "400", "210", "1.90× (2.00×)", "2.00×", "0.95×", "0.90×"]
    del data["dask"]["held_s"]  # a record from before the held rows
    (tmp_path / "2-nvidia-h200" / "10_multi_gpu.json").write_text(json.dumps({"device": "2 × NVIDIA H200",
                                                                             "data": data}))
    assert across.multi_rows(tmp_path)[1][5] == "—"


def test_roofline_points_come_from_the_records(results):
    for records in results.values():
        roofs, points = rf.roofline(records)
        if roofs is None:
            continue
        lim = ac.limits(records)
        assert roofs["copy GB/s"] == lim["copy_gbs"] and roofs["FP32 GFLOP/s"] == lim["fp32_gflops"]
        for p in points:
            precision = "FP64" if p["chapter"].startswith("8.") else "FP32"
            peak = roofs[f"{precision} GFLOP/s"]
            mma = roofs["FP64 mma GFLOP/s" if precision == "FP64" else "TF32 mma GFLOP/s"]
            if mma is not None and any(w in p["step"].lower() for w in ("tensor", "tf32", "dmma")):
                peak = mma  # a step on the tensor cores, where chapter 0 measured their roof
            assert p["roof"] == pytest.approx(min(lim["copy_gbs"] * p["ai"], peak))
            assert p["share"] == pytest.approx(p["gflops"] / p["roof"])
        sums = {p["step"]: p for p in points if p["chapter"] == "3. Device-wide sum" and not p["vendor"]}
        figures = ac.step_figures(ac.by_file("03_device_reduction"), records)
        assert all(sums[s]["gflops"] == pytest.approx(0.25 * f) for s, f in figures.items())
        assert not [p for p in points if p["step"].startswith("transpose")]  # no arithmetic: off the plot


def test_roofline_draws_one_panel_per_device(results):
    import matplotlib.pyplot as plt
    fig = ap.plot_roofline(results)
    assert len(fig.axes) == sum(1 for r in results.values() if ac.limits(r))
    plt.close(fig)


def test_no_share_from_a_small_scale_record_and_one_line_that_says_so(tmp_path):
    """A CPU recorded at small scale (its FP32 'limit' far under what NumPy reaches on the
    same cores) gets no share anywhere, its measured limits are marked, and one line per
    device says why; a chapter 0 at full scale with chapters at small scale, likewise."""
    gpu, cpu = "nvidia-h200", "cpu-skylake-avx512-intel-r-xeon-r-processor"
    copy_device(gpu, tmp_path)
    copy_device(cpu, tmp_path, scale="small")
    results = ac.load(tmp_path)
    assert ac.share_refusals({gpu: results[gpu]}) == []
    lines = ac.share_refusals(results)
    assert len(lines) == 1 and "chapter 0 record ran at the small scale" in lines[0]
    assert lines[0].startswith(ac.name(results[cpu]))
    assert all(share is None for c in ac.CHAPTERS for _, _, share in ac.steps(c, results[cpu]))
    rows = {r[0]: r[1:] for r in ac.limit_rows(results)}
    column = list(results).index(cpu)
    assert rows["FP32 multiply-add, measured (GFLOP/s)"][column].endswith("(small scale: not a limit)")
    assert "small scale" not in rows["FP32 multiply-add, measured (GFLOP/s)"][1 - column]
    assert "small scale" not in rows["compute units"][column]
    # chapter 0 at full scale, a chapter at small scale: still no share for that chapter
    shutil.rmtree(tmp_path / cpu)
    copy_device(cpu, tmp_path, scale="full", drop={"03_reduction"})
    small = json.loads((RESULTS / cpu / "07_scan.json").read_text()) | {"scale": "small"}
    (tmp_path / cpu / "07_scan.json").write_text(json.dumps(small))
    results = ac.load(tmp_path)
    assert ac.share_refusals(results) == [f"{ac.name(results[cpu])}: no shares for 07_scan, recorded at "
                                          "the small scale (GPUBOOK_SCALE=full records them)"]
    assert all(s is None for _, _, s in ac.steps(ac.by_file("07_scan"), results[cpu]))


def test_machine_rows_give_the_measured_middle_level_of_latency(results):
    # the H100's chase: 143 ns from 1 to 16 MiB (its L2), measured, not "not measured"
    rows = {r[0]: r[1:] for r in ac.machine_rows(results)}
    col = rows["quantity"].index("NVIDIA H100 80GB HBM3")
    assert rows["latency's middle level (ns, working sets)"][col] == "143 (1 MiB to 16 MiB)"


# ------------------------------------------------ the cause claim of the memory section
def stream_inputs(results, a="nvidia-h200", b="nvidia-h100-80gb-hbm3"):
    from gpubook.chapters.across import claims as acc

    gain = {}
    for file, key in (("03_device_reduction", "sum"), ("05_transpose", "iter"),
                      ("07_scan", "scan")):
        fa, fb = (ac.headline(ac.by_file(file), results[s])[1] for s in (a, b))
        gain[key] = fa / fb
    copy = ac.limits(results[a])["copy_gbs"] / ac.limits(results[b])["copy_gbs"]
    return (acc.inflight(results[a]), acc.inflight(results[b]), copy,
            gain["sum"], gain["iter"], gain["scan"])


@pytest.mark.usefixtures("no_glue")
def test_stream_keeps_share_holds_on_the_h200_and_h100_records(results):
    from gpubook.chapters.across import claims as acc

    c = acc.stream_keeps_share(*stream_inputs(results))
    assert c.kind == "cause" and c.held is True, c.sentence
    v = c.values
    print(f"in flight {v['inflight_a']:.0f} > {v['inflight_b']:.0f} B; copy {v['copy_ratio']:.3f}x; "
          f"iter {v['r_iter']:.3f}x, scan {v['r_scan']:.3f}x (in [1, copy)); sum {v['r_sum']:.3f}x")


@pytest.mark.usefixtures("no_glue")
def test_stream_keeps_share_can_fail(results):
    from gpubook.chapters.across import claims as acc

    ia, ib, copy, r_sum, r_iter, r_scan = stream_inputs(results)
    assert acc.stream_keeps_share(ib, ia, copy, r_sum, r_iter, r_scan).held is False  # less in flight
    assert acc.stream_keeps_share(ia, ib, copy, r_sum, 0.9, r_scan).held is False  # slower on the H200
    assert acc.stream_keeps_share(ia, ib, copy, r_sum, copy, r_scan).held is False  # follows the memory
    assert acc.stream_keeps_share(ia, ib, copy, r_iter, r_iter, r_scan).held is False  # sum no better
    c = acc.stream_keeps_share(None, ib, copy, r_sum, r_iter, r_scan)
    assert c.held is None and "no record of the machine chapter" in c.sentence


@pytest.mark.usefixtures("no_glue")
def test_bytes_in_flight_are_compared_at_the_same_kind_of_latency(results):
    from gpubook.chapters.across import claims as acc

    ia, ib, copy, r_sum, r_iter, r_scan = stream_inputs(results)
    assert ia["loaded"] and ib["loaded"] is None  # the H100's record timed no load under load
    c = acc.stream_keeps_share(ia, ib, copy, r_sum, r_iter, r_scan)
    assert c.values["inflight_a"] == ia["idle"] and c.values["inflight_b"] == ib["idle"]
    assert "idle" in c.sentence
    both = acc.stream_keeps_share(ia, dict(ib, loaded=ib["idle"]), copy, r_sum, r_iter, r_scan)
    assert both.values["inflight_a"] == ia["loaded"] and "under load" in both.sentence


def test_a_tensor_core_step_is_held_against_their_roof_in_the_tables(results):
    lsq = ac.by_file("08_lsq")
    for slug in ("nvidia-h200", "nvidia-h100-80gb-hbm3"):
        roof = ac.mma_roof(results[slug], "f64")
        fma = results[slug]["08_lsq"]["data"]["fp64_gflops"]
        for step, figure, share in ac.steps(lsq, results[slug]):
            assert share == pytest.approx(figure / (roof if ac.records.on_tensor_cores(step) else fma))
    cell = ac.headline_rows(results)[-1][3]
    assert "of the FP64 tensor cores" in cell


def test_the_roof_of_a_step_is_its_units_and_none_at_small_scale(results):
    lsq = ac.by_file("08_lsq")
    h200 = results["nvidia-h200"]
    dmma = "6 CholeskyQR2, FP64 tensor cores (DMMA)"
    assert ac.roof(lsq, dmma, h200) == ac.mma_roof(h200, "f64")
    assert ac.roof(lsq, "3 blocked Householder", h200) == h200["08_lsq"]["data"]["fp64_gflops"]
    small = {**h200, "08_lsq": {**h200["08_lsq"], "scale": "small"}}
    assert ac.roof(lsq, dmma, small) is None
    assert all(share is None for _, _, share in ac.steps(lsq, small))


def test_inventory_says_when_each_device_was_recorded(tmp_path):
    copy_device("nvidia-h200", tmp_path, only={"00_device", "01_loop_order", "05_transpose"})
    for stem, day in (("00_device", "2026-11-26"), ("01_loop_order", "2026-11-28"), ("05_transpose", "2026-11-27")):
        path = tmp_path / "nvidia-h200" / f"{stem}.json"
        entry = json.loads(path.read_text())
        entry["date"] = day
        path.write_text(json.dumps(entry))
    copy_device("nvidia-h200", tmp_path, slug="one-day-gpu", rename="One Day GPU", only={"01_loop_order"})
    lines = ac.inventory(ac.load(tmp_path))
    h200 = next(ln for ln in lines if "results/nvidia-h200/" in ln)
    # chapter 0 is not one of CHAPTERS' files: the two chapter records give the span
    assert h200.endswith("2 chapter records in results/nvidia-h200/, written from 2026-11-27 to 2026-11-28")
    one = next(ln for ln in lines if ln.startswith("One Day GPU"))
    day = json.loads((RESULTS / "nvidia-h200" / "01_loop_order.json").read_text())["date"]
    assert one.endswith(f"1 chapter record in results/one-day-gpu/, written on {day}")
