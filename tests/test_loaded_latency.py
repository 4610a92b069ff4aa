"""The latency under load (gpubook.chapters.machine.loaded): the timed read kernel's
portable build reads what NumPy says and writes zero stamps, the measurement is
refused off NVIDIA with the reason, and the claim that reads it can hold, fail, or
say why it has no numbers."""
import numpy as np
import pytest

import gpubook as gb
from gpubook.chapters.machine import loaded
from gpubook.chapters.machine.causes import loaded_latency_cause


@pytest.fixture(scope="module")
def dev():
    device = gb.choose_device()
    ctx, queue = gb.make_queue(device)
    return device, ctx, queue


@pytest.mark.parametrize("alone", [False, True])
def test_the_timed_read_sums_what_numpy_says_and_stamps_zero_off_nvidia(dev, alone):
    device, ctx, queue = dev
    top = 2**16
    reader = loaded.TimedReader(ctx, queue, device, top, "small")
    reader.launch_timed(top, reader.local if alone else None).wait()
    reader.check_timed(top)     # raises where a sum differs
    stamps = reader.cycles_per_load()
    assert len(stamps) == (1 if alone else reader.groups)
    if "NVIDIA" not in device.platform.name:
        assert (stamps == 0).all()


def test_the_timed_check_catches_a_wrong_sum(dev):
    device, ctx, queue = dev
    top = 2**16
    reader = loaded.TimedReader(ctx, queue, device, top, "small")
    reader.launch_timed(top, reader.local).wait()
    reader.host = reader.host + 1        # NumPy's side now disagrees
    with pytest.raises(RuntimeError, match="timed read summed"):
        reader.check_timed(top)


def test_off_nvidia_the_latency_under_load_is_refused_with_the_reason(dev):
    device, ctx, queue = dev
    if "NVIDIA" in device.platform.name:
        pytest.skip("an NVIDIA device reads the counter")
    got = loaded.measure(ctx, queue, device, "small")
    assert set(got) == {"why_not"} and "clock64" in got["why_not"]


H100_LIKE = {"alone_ns": 300.0, "loaded_ns": 620.0, "loaded_gbs": 3000.0}


@pytest.mark.parametrize("given, held", [
    (H100_LIKE, True),
    ({**H100_LIKE, "loaded_ns": 330.0}, False),      # no longer wait under load
    ({**H100_LIKE, "loaded_gbs": 1500.0}, False),    # the launch was not at the read rate
])
def test_the_claim_needs_a_busy_memory_and_a_longer_wait(given, held):
    c = loaded_latency_cause(given, read_gbs=3200.0)
    assert c.held is held and c.kind == "cause"
    assert f"{given['loaded_ns']:,.0f} ns" in c.sentence


def test_the_claim_says_why_where_nothing_was_timed():
    c = loaded_latency_cause({"why_not": "the CPU has no SM cycle counter"}, 3200.0)
    assert c.held is None
    assert "the CPU has no SM cycle counter" in c.sentence and "chase" in c.sentence


# ------------------------------------------------ chapter 4's phases of an iteration
from gpubook.chapters.logreg import phases as lr_phases  # noqa: E402
from gpubook.chapters.logreg.vectors import phase_budget  # noqa: E402

PHASES = {"examples": 600.0, "examples_min": 580.0, "examples_max": 640.0, "sum": 390.0,
          "iteration": 990.0, "timed_iteration": 1010.0}


@pytest.mark.parametrize("floor, held", [(256.0, True), (700.0, False)])
def test_the_phase_claim_needs_the_floor_inside_the_examples_phase(floor, held):
    c = phase_budget(PHASES, floor)
    assert c.held is held and c.kind == "cause"
    assert "600 on the examples" in c.sentence and "390 on the sum" in c.sentence


def test_the_phases_are_refused_off_nvidia_with_the_reason(dev):
    device, ctx, queue = dev
    if "NVIDIA" in device.platform.name:
        pytest.skip("an NVIDIA device reads the counter")
    got = lr_phases.measure(None, device, 128, {}, 10, 1.98)
    assert set(got) == {"why_not"} and "clock64" in got["why_not"]
    c = phase_budget(got, 256.0)
    assert c.held is None and "clock64" in c.sentence


def test_a_build_the_driver_refuses_is_said_not_raised(dev, monkeypatch):
    """On NVIDIA, a driver that refused the inline PTX leaves the page a reason."""
    device, ctx, queue = dev
    from gpubook import clock
    from gpubook.kernels import KernelBuildError

    def refuse(*a, **k):
        raise KernelBuildError("kernels/x.cl failed to build with options -DNV_PTX=1:\nlog")

    monkeypatch.setattr(clock, "why_not", lambda device: None)
    monkeypatch.setattr(loaded, "kernel", refuse)
    monkeypatch.setattr(loaded, "largest_working_set", lambda device, scale: 2**16)
    got = loaded.measure(ctx, queue, device, "small", ghz=1.98)
    assert got == {"why_not": "the timed read kernel did not build or run here: "
                              "kernels/x.cl failed to build with options -DNV_PTX=1:"}
    monkeypatch.setattr(lr_phases, "kernel", refuse)
    from types import SimpleNamespace
    from gpubook.chapters import logreg as lr
    trainer = SimpleNamespace(prob=lr.problem("small"), queue=queue)
    assert "did not build" in lr_phases.measure(trainer, device, 128, {}, 10, 1.98)["why_not"]
