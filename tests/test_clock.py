"""The SM clock kernel: its portable build runs anywhere; the clock is read only on NVIDIA."""
import numpy as np
import pytest

import gpubook as gb
from gpubook import clock, limits


@pytest.fixture(scope="module")
def ctx_queue():
    return gb.make_queue()


def test_off_nvidia_the_clock_is_refused_with_the_reason(ctx_queue):
    ctx, queue = ctx_queue
    device = queue.device
    if "NVIDIA" in device.platform.name:
        pytest.skip("an NVIDIA device reads its clock")
    with pytest.raises(clock.ClockUnavailable, match="no SM cycle counter"):
        clock.measure(ctx, queue, device)


def test_the_portable_build_computes_the_chains_and_writes_zero_stamps(ctx_queue):
    ctx, queue = ctx_queue
    device = queue.device
    got, sums = clock.stamps(ctx, queue, device, iters=64, groups_per_cu=1, nv_ptx=False)
    assert got.shape[1] == 4 and not got.any()
    # the eight chains after 64 steps, as chapter 0's FMA reference computes them
    want = limits.fma_reference(sums.size, 64, np.float32(0.999), np.float32(0.001))
    assert np.allclose(sums, want, rtol=1e-5)


def test_cycles_at_the_measured_clock():
    c = clock.SMClock(ghz=1.755, low=1.75, high=1.76, groups=528, sms=132, loop_ns=1e6)
    assert c.cycles(1e-6) == pytest.approx(1755)


def test_recorded_limits_give_the_recorded_clock(tmp_path):
    import json

    from gpubook.records import recorded_limits

    for slug, clock_data in (("gpu-a", {"ghz": 1.9796, "low": 1.9793, "high": 1.9798,
                                        "sms": 132, "groups": 528}), ("gpu-b", None)):
        (tmp_path / slug).mkdir()
        (tmp_path / slug / "00_device.json").write_text(json.dumps(
            {"device": slug, "data": {"limits": {"copy_gbs": 3000.0},
                                      "sm_clock": clock_data}}))
    assert recorded_limits("gpu-a", tmp_path) == {"copy_gbs": 3000.0, "sm_clock_ghz": 1.9796}
    assert recorded_limits("gpu-b", tmp_path)["sm_clock_ghz"] is None
    assert recorded_limits("gpu-c", tmp_path) is None


def test_fp32_lanes_where_the_architecture_is_known(ctx_queue):
    _, queue = ctx_queue
    lanes = clock.fp32_lanes(queue.device)
    if "NVIDIA" not in queue.device.platform.name:
        assert lanes is None
    else:
        assert lanes is None or lanes % queue.device.max_compute_units == 0


def test_stamps_give_the_median_clock_and_zero_stamps_are_refused():
    got = np.array([[1_500, 1_000, 0, 5], [1_600, 1_000, 1, 5], [1_700, 1_000, 1, 5]], np.uint64)
    c = clock.from_stamps(got, "the products")
    assert c.ghz == pytest.approx(1.6) and c.groups == 3 and c.sms == 2
    with pytest.raises(clock.ClockUnavailable, match="did not advance over the products"):
        clock.from_stamps(np.zeros((3, 4), np.uint64), "the products")


class _FakeNvidia:
    class platform:
        name = "NVIDIA CUDA"
    name, pci_bus_id_nv, pci_slot_id_nv = "NVIDIA H200", 0, 6


def test_the_power_cap_counter_of_this_gpu_is_read_from_nvidia_smi(monkeypatch, ctx_queue):
    import subprocess

    answer = "0x00, 0x05, 17\n0x00, 0x06, 3551142\n"
    monkeypatch.setattr(clock.shutil, "which", lambda name: "/usr/bin/nvidia-smi")
    monkeypatch.setattr(clock.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, answer))
    assert clock.power_capped_us(_FakeNvidia()) == 3551142      # bus 0, slot 6: the second GPU
    monkeypatch.setattr(clock.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, "[N/A]"))
    assert clock.power_capped_us(_FakeNvidia()) is None
    monkeypatch.setattr(clock.shutil, "which", lambda name: None)
    assert clock.power_capped_us(_FakeNvidia()) is None
    _, queue = ctx_queue
    if "NVIDIA" not in queue.device.platform.name:
        assert clock.power_capped_us(queue.device) is None


def test_the_power_window_gives_its_seconds_and_the_caps_growth(monkeypatch):
    counts = iter([1_000_000, 1_250_000])
    monkeypatch.setattr(clock, "power_capped_us", lambda device: next(counts))
    stop = clock.power_window(_FakeNvidia())
    seconds, capped = stop()
    assert seconds >= 0 and capped == pytest.approx(0.25)
    monkeypatch.setattr(clock, "power_capped_us", lambda device: None)
    assert clock.power_window(_FakeNvidia())()[1] is None
