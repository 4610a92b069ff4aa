"""Counters: the PTX rewrite, the report reader, the trust rule, the capture (PoCL)."""
import json
import re
import shutil
import subprocess

import numpy as np
import pyopencl as cl
import pytest

import gpubook as gb
from gpubook import capture, counters, kernels
from gpubook.paths import ROOT

DATA = ROOT / "tests" / "data"


@pytest.fixture(scope="module")
def ctx_queue():
    return gb.make_queue()
# PTX that NVIDIA's OpenCL compiler (driver 580, an H200) gave for tools/probe_envreg.py's
# last kernel: a global pointer, a __local float*, a __local float2* and an int.
SAMPLE_PTX = (DATA / "opencl_nvidia_sample.ptx").read_bytes()


def test_sample_is_what_the_cuda_driver_refuses():
    text = SAMPLE_PTX.decode()
    assert text.endswith("\0")
    assert "texmode_independent" in text and "%envreg3" in text
    assert text.count(".ptr .shared") == 2


def test_loadable_ptx_rewrites_the_three_opencl_forms():
    text, shared = counters.loadable_ptx(SAMPLE_PTX, "k", [4], 1, [1000, 2048])
    assert "\0" not in text and "texmode_independent" not in text
    assert "%envreg" not in text
    assert ".ptr .shared" not in text
    assert f".extern .shared .align 16 .b8 {counters.LOCAL_SYMBOL}[];" in text
    # the float* at 0; the float2* (.align 8) at the first multiple of 8 past 1000
    assert re.search(r"add\.u64\s+%rd2, %rd2, 0;", text)
    assert re.search(r"add\.u64\s+%rd3, %rd3, 1000;", text)
    assert shared == 1000 + 2048
    # the kept parameters are the global pointer and the int, in order
    params = re.search(r"\.entry k\((.*?)\)", text, re.S).group(1)
    assert [p.split()[-1] for p in params.split(",")] == ["k_param_0", "k_param_3"]
    # %envreg3 (the first work-item's index) is 0 for a launch the driver does not split
    assert re.search(r"mov\.b32\s+%r3, 0;", text)


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="no ptxas (CUDA toolkit) here")
def test_rewritten_ptx_assembles(tmp_path):
    text, _ = counters.loadable_ptx(SAMPLE_PTX, "k", [4], 1, [1024, 2048])
    (tmp_path / "k.ptx").write_text(text)
    done = subprocess.run(["ptxas", "-arch=sm_90", str(tmp_path / "k.ptx"), "-o",
                           str(tmp_path / "k.cubin")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (tmp_path / "raw.ptx").write_bytes(SAMPLE_PTX)
    raw = subprocess.run(["ptxas", "-arch=sm_90", str(tmp_path / "raw.ptx"), "-o",
                          str(tmp_path / "raw.cubin")], capture_output=True, text=True)
    assert raw.returncode != 0     # as it comes, ptxas refuses it (the NUL: "Unexpected EOF")


def _ptx(body):
    return (".version 9.0\n.target sm_90, texmode_independent\n.address_size 64\n"
            f".entry k(\n\t.param .u64 .ptr .global .align 4 k_param_0\n)\n{{\n{body}\n}}\n")


def test_envregs_become_the_launch_values():
    body = "mov.b32 %r1, %envreg6;\nmov.b32 %r2, %envreg7;\nmov.b32 %r3, %envreg9;"
    text, shared = counters.loadable_ptx(_ptx(body), "k", [12, 5], 2, [])
    assert "mov.b32 %r1, 12;" in text and "mov.b32 %r2, 5;" in text
    assert "mov.b32 %r3, 2;" in text and shared == 0


def test_an_unknown_envreg_or_entry_is_refused():
    with pytest.raises(counters.CountersError, match="envreg12"):
        counters.loadable_ptx(_ptx("mov.b32 %r1, %envreg12;"), "k", [1], 1, [])
    with pytest.raises(counters.CountersError, match="no entry named other"):
        counters.loadable_ptx(_ptx(""), "other", [1], 1, [])
    with pytest.raises(counters.CountersError, match="2 shared parameters for 1"):
        counters.loadable_ptx(SAMPLE_PTX, "k", [4], 1, [64])


# The first rows of `ncu --csv --page raw --metrics ...` of chapter 5's replays on an H200
# (2026-11-27), cut to the columns the book reads; its ==PROF== lines are kept.
SAMPLE_CSV = (DATA / "ncu_raw_sample.csv").read_text()


def test_read_csv_skips_the_profilers_notes_and_the_units_row():
    rows = counters.read_csv(SAMPLE_CSV)
    assert SAMPLE_CSV.startswith("==PROF==")
    assert len(rows) == 4 and rows[0]["kernel"] == "fill_labels"
    assert all(set(counters.metric_names()) <= set(r["metrics"]) for r in rows)
    assert counters.read_csv("==PROF== nothing profiled\n") == []


def test_summary_of_a_real_row():
    rows = counters.read_csv(SAMPLE_CSV)
    s = counters.summary(rows[3]["metrics"])
    assert 0 < s["duration_s"] < 1e-2          # gpu__time_duration in ns, given in s
    for key in ("occupancy_pct", "sm_pct", "dram_pct", "l2_pct", "l1_pct", "l2_hit_pct",
                "issue_pct"):
        assert 0 <= s[key] <= 100, key
    shares = list(s["stalls"].values())
    assert shares == sorted(shares, reverse=True) and 0 < sum(shares) <= 1 + 1e-12
    assert "selected" not in s["stalls"]


def test_summary_computes_the_bank_conflict_share():
    m = {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 10.0,
         "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": 30.0,
         "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 100.0,
         "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": 100.0,
         "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio": 3.0,
         "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio": 1.0,
         "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio": 1.0}
    s = counters.summary(m)
    assert s["shared_conflict_share"] == pytest.approx(0.2)
    assert s["stalls"] == {"barrier": 0.75, "wait": 0.25}


@pytest.mark.parametrize("entry, why", [
    ({"opencl_s": 1.0, "cuda_s": 1.05, "same_output": True}, None),
    ({"opencl_s": 1.0, "cuda_s": 0.95, "same_output": True}, None),
    ({"opencl_s": 1.0, "cuda_s": 1.2, "same_output": True}, "1.20x the OpenCL time"),
    ({"opencl_s": 1.0, "cuda_s": 1.0, "same_output": False}, "output differs"),
    ({"error": "CUDA_ERROR_INVALID_IMAGE: x"}, "CUDA_ERROR_INVALID_IMAGE"),
])
def test_trusted_only_within_ten_percent_and_equal(entry, why):
    got = counters.trusted(entry)
    assert (got is None) if why is None else (why in got)


def test_no_counters_on_a_device_that_is_not_nvidias(ctx_queue):
    device = ctx_queue[1].device
    if "NVIDIA" in device.platform.name:
        pytest.skip("an NVIDIA device")
    why = counters.why_none_here(device)
    assert "not an NVIDIA GPU" in why and device.name.strip() in why


def test_record_path_finds_a_notebooks_chapter_record(tmp_path):
    for name in ("03_reduction", "03_device_reduction", "06_covariance", "08_lsq"):
        (tmp_path / f"{name}.json").write_text("{}")
    assert counters.record_path(tmp_path, "03_reduction").name == "03_reduction.json"
    assert counters.record_path(tmp_path, "06_2_out_of_core").name == "06_covariance.json"
    assert counters.record_path(tmp_path, "08_3_cholqr2").name == "08_lsq.json"
    with pytest.raises(counters.CountersError, match="chapter 07"):
        counters.record_path(tmp_path, "07_scan")


SOURCE = "__kernel void twice(__global float *x, __local float *t, const int n) {\n" \
         "  int i = get_global_id(0); t[get_local_id(0)] = 0.0f;\n" \
         "  if (i < n) x[i] = 2.0f * x[i]; }\n"


def test_capture_keeps_each_kernels_largest_launch(ctx_queue, tmp_path, monkeypatch):
    ctx, queue = ctx_queue
    path = tmp_path / "twice.cl"
    path.write_text(SOURCE)
    monkeypatch.setattr(kernels, "KERNELS", tmp_path)
    kern = kernels.kernel(ctx, "twice.cl", "twice", {"UNUSED": 3})
    data = np.arange(64, dtype=np.float32)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=data)
    with capture.recording(tmp_path / "cap") as cap:
        kern(queue, (16,), (8,), buf, cl.LocalMemory(32), np.int32(16))
        kern(queue, (64,), (8,), buf, cl.LocalMemory(32), np.int32(64))   # kept: larger
        kern(queue, (32,), (8,), buf, cl.LocalMemory(32), np.int32(32))
        kern(queue, (64,), None, buf, cl.LocalMemory(32), np.int32(64))   # no local size
    queue.finish()
    specs = [json.loads(p.read_text()) for p in (tmp_path / "cap").glob("*/launch.json")]
    assert len(specs) == 1
    spec = specs[0]
    assert spec["label"] == "twice.cl:twice[UNUSED=3]" and spec["kernel"] == "twice"
    assert spec["global"] == [64] and spec["local"] == [8]
    assert [a["kind"] for a in spec["args"]] == ["buffer", "local", "scalar"]
    assert spec["args"][1]["nbytes"] == 32 and spec["args"][2] == \
        {"kind": "scalar", "dtype": "<i4", "value": 64}
    slot = next((tmp_path / "cap").glob("*/launch.json")).parent
    # the buffer as it was just before the kept launch: the first launch doubled 0..15
    before = np.load(slot / "arg0.npy").view(np.float32)
    assert np.array_equal(before, np.where(np.arange(64) < 16, 2.0, 1.0) * np.arange(64))
    assert (slot / "source.cl").read_text() == SOURCE
    assert cl.Kernel.__call__ is capture._ORIGINAL["call"]      # restored after the block


def test_capture_skips_what_it_cannot_replay(ctx_queue, tmp_path, monkeypatch):
    ctx, queue = ctx_queue
    (tmp_path / "twice.cl").write_text(SOURCE)
    monkeypatch.setattr(kernels, "KERNELS", tmp_path)
    kern = kernels.kernel(ctx, "twice.cl", "twice")
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 256)
    with capture.recording(tmp_path / "cap") as cap:
        kern(queue, (64,), None, buf, cl.LocalMemory(32), np.int32(64))
    queue.finish()
    assert "driver chose" in cap.skipped["twice.cl:twice"]
    assert json.loads((tmp_path / "cap" / "skipped.json").read_text()) == cap.skipped


def test_the_page_shows_stored_counters_with_whose_and_why_none_here(tmp_path):
    rows = {"t.cl:a": {"opencl_s": 1e-3, "cuda_s": 1.02e-3, "same_output": True,
                       "why_not": None,
                       "metrics": {"occupancy_pct": 91.2, "dram_pct": 88.7,
                                   "shared_conflict_share": 0.0213,
                                   "stalls": {"long_scoreboard": 0.62, "wait": 0.2}}},
            "t.cl:b": {"opencl_s": 1e-3, "cuda_s": 1.3e-3, "same_output": True,
                       "why_not": "its CUDA replay takes 1.30x the OpenCL time"}}
    (tmp_path / "nvidia-h200").mkdir()
    (tmp_path / "nvidia-h200" / "05_transpose.json").write_text(json.dumps(
        {"device": "NVIDIA H200", "data": {}, "counters": rows}))

    class Device:    # a CPU device of PoCL's platform, as a reader without a GPU has
        name = "cpu-haswell-Intel(R) Xeon(R) CPU"

        class platform:
            name = "Portable Computing Language"

    whose, got, why = counters.stored("05_transpose", Device(), tmp_path)
    assert whose == "NVIDIA H200" and got == rows and "not an NVIDIA GPU" in why
    table = counters.table(got, [("step 1", "t.cl:a"), "t.cl:b", "t.cl:c"])
    assert table[1][:3] == ["step 1", "1.02", "91"]
    assert "1.30x" in table[2][2] and table[3][1] == "not profiled"
    assert "2.1%" in table[1] and "long scoreboard 62%" in table[1]
    assert all(len(r) == len(table[0]) for r in table)
    assert counters.stored("07_scan", Device(), tmp_path)[:2] == (None, {})


def test_the_table_shows_a_reason_without_its_exception_class():
    why = "CountersError: not replayed: one launch takes 1.10 s, over 0.25 s"
    rows = {"t.cl:a": {"opencl_s": 1.1, "why_not": why}}
    table = counters.table(rows, ["t.cl:a"])
    assert table[1][2] == "not replayed: one launch takes 1.10 s, over 0.25 s"
    assert rows["t.cl:a"]["why_not"] == why            # the record keeps its text
    assert counters._reason("its PTX: ValueError: x") == "its PTX: ValueError: x"


def test_replays_batch_short_kernels_and_time_long_ones_a_few_times():
    from gpubook import replay
    assert replay.plan(10e-6) == (replay.BATCH, replay.REPEATS)
    batch, repeats = replay.plan(0.5)
    assert batch == 1 and repeats == replay.MIN_REPEATS
    batch, repeats = replay.plan(0.02)
    assert batch == 1 and replay.MIN_REPEATS <= repeats <= replay.REPEATS
    assert batch * repeats * 0.02 <= replay.TIME_BUDGET_S


def test_trusted_metrics_are_those_of_a_trusted_row_only():
    from gpubook.counters import trusted_metrics
    assert trusted_metrics({"metrics": {"sm_pct": 50.0}}) == {"sm_pct": 50.0}
    assert trusted_metrics({"metrics": {"sm_pct": 50.0}, "why_not": "differs"}) is None
    assert trusted_metrics({"why_not": None}) is None and trusted_metrics(None) is None
