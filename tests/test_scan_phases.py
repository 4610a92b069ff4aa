"""Chapter 7's timed tile phases (gpubook.chapters.scan.phases) and the single pass's
build options behind them: each float4 stored as it comes, the warp look-back, the
marked build; on the local device, where no cycle counter is read, and on marks made
up here."""
import numpy as np
import pyopencl.array as cla
import pytest

import gpubook as gb
from gpubook.chapters import scan as sc
from gpubook.chapters.scan import claims as scan_claims
from gpubook.kernels import resolve


@pytest.fixture(scope="module")
def cl_env():
    device, ctx, queue, _, _ = gb.open_device()
    return device, ctx, queue


def test_summarise_reads_phases_and_tiles_in_flight():
    # two tiles on SM 0 one after the other, one on SM 1; cycles at 2 GHz
    marks = np.array([[0, 0, 200, 300, 700, 800],
                      [0, 800, 1000, 1100, 1500, 1600],
                      [1, 0, 400, 500, 900, 1000]], np.uint64)
    got = sc.phases.summarise(marks, 2.0, 4096)
    assert got["load"] == 100 and got["scan"] == 50 and got["look_back"] == 200
    assert got["write"] == 50 and got["tile_ns"] == 400 and got["sms"] == 2
    # SM 0: 400 of 1,600 cycles loading; SM 1: 400 of 1,000: median 0.325 tiles
    assert got["tiles_in_flight"] == pytest.approx((0.25 + 0.4) / 2)
    assert got["bytes_in_flight"] == pytest.approx(4096 * 0.325)
    assert got["tiles_alive"] == pytest.approx(1.0)


def test_summarise_refuses_a_clock_that_runs_backwards():
    marks = np.array([[0, 500, 400, 600, 700, 800]], np.uint64)
    with pytest.raises(ValueError, match="ran backwards"):
        sc.phases.summarise(marks, 1.0, 1024)


def test_phase_and_warp_options_are_refused_where_they_do_not_apply(cl_env):
    _, ctx, queue = cl_env
    with pytest.raises(ValueError, match="only the single pass marks"):
        sc.DeviceScan(ctx, queue, sc.DEVICE_STEPS[0], phases=True)
    with pytest.raises(ValueError, match="warp_look"):
        sc.DeviceScan(ctx, queue, sc.DEVICE_STEPS[1], warp_look=True)


def test_compare_checks_and_times_both_builds_and_says_why_no_phases(cl_env):
    device, ctx, queue = cl_env
    n = 20_001
    x = np.random.default_rng(3).random(n, dtype=np.float32)
    run = type("Run", (), {})()
    run.n, run.ref = n, np.cumsum(x, dtype=np.float64)
    run.src, run.dst = cla.to_device(queue, x), cla.zeros(queue, n, np.float32)
    ds = sc.DeviceScan(ctx, queue, sc.DEVICE_STEPS[1], wg=gb.launch.largest(device, 64),
                       items=8)
    got = sc.phases.compare(run, ds, None, 2, 1e-5)
    assert list(got) == list(sc.phases.BUILDS)
    assert all(r["s"] > 0 and r["gbs"] > 0 for r in got.values())
    rows = sc.phases.table(got)
    assert len(rows) == 3 and len(rows[0]) == 7
    if "NVIDIA" not in device.platform.name:
        assert all("why_not" in r["phases"] for r in got.values())
        said = scan_claims.loads_first_cause(got)
        assert said.held is None and "not timed here" in said.sentence
        assert rows[1][3] == "–"
    with pytest.raises(ValueError, match="single pass"):
        sc.phases.compare(run, sc.DeviceScan(ctx, queue, sc.DEVICE_STEPS[0], items=8),
                          None, 2, 1e-5)


def _compared(fast_load, slow_load, fast_s, slow_s):
    first, each = sc.phases.BUILDS
    return {first: {"s": fast_s, "phases": {"load": fast_load}},
            each: {"s": slow_s, "phases": {"load": slow_load}}}


def test_loads_first_claim_holds_and_fails_on_the_mechanism():
    held = scan_claims.loads_first_cause(_compared(1878, 4598, 0.554e-3, 0.627e-3))
    assert held.held is True and held.kind == "cause" and "2.4×" in held.sentence
    overlapped = scan_claims.loads_first_cause(_compared(1878, 2000, 0.554e-3, 0.560e-3))
    assert overlapped.held is False and "overlaps the loads" in overlapped.sentence
    not_slower = scan_claims.loads_first_cause(_compared(1000, 3000, 0.6e-3, 0.6e-3))
    assert not_slower.held is False


def test_resolve_keeps_the_named_branch_and_every_other_directive():
    lines = ["a", "#if WARP_LOOK", "b", "#if OTHER", "c", "#endif", "#else", "d", "#endif",
             "#if !WARP_LOOK", "e", "#endif", "#ifdef X", "f", "#endif"]
    assert resolve(lines, {"WARP_LOOK": 1}) == ["a", "b", "#if OTHER", "c", "#endif",
                                                "#ifdef X", "f", "#endif"]
    assert resolve(lines, {"WARP_LOOK": 0}) == ["a", "d", "e", "#ifdef X", "f", "#endif"]
    assert resolve(lines, {}) == lines


def test_compare_and_the_claim_say_why_where_the_single_pass_fell_back(cl_env):
    _, ctx, queue = cl_env
    ds = sc.DeviceScan(ctx, queue, sc.DEVICE_STEPS[1], items=8)
    ds.fallback = "no 64-bit atomics here"   # as on a device without them
    assert sc.phases.compare(None, ds, None, 2, 1e-5) == {}
    said = scan_claims.loads_first_cause({}, why=ds.fallback)
    assert said.held is None and said.sentence.endswith("no 64-bit atomics here")
