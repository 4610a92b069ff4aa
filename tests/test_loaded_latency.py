"""The latency under load (gpubook.chapters.machine.loaded): the timed read kernel's
portable build reads what NumPy says and writes zero stamps, the measurement is
refused off NVIDIA with the reason, and the claim that reads it can hold, fail, or
say why it has no numbers."""
from types import SimpleNamespace

import numpy as np
import pytest

import gpubook as gb
from gpubook.chapters.machine import loaded
from gpubook.chapters.machine.causes import queues_past_the_knee


@pytest.fixture(scope="module")
def dev():
    device = gb.choose_device()
    ctx, queue = gb.make_queue(device)
    return device, ctx, queue


def test_the_timed_read_sums_what_numpy_says_and_stamps_zero_off_nvidia(dev):
    device, ctx, queue = dev
    top = 2**16
    reader = loaded.TimedReader(ctx, queue, device, top, "small")
    shapes = reader.shapes()
    assert shapes[-1] == (reader.total, reader.local) and len(shapes) >= 2
    assert all(t % loc == 0 and loc >= 32 for t, loc in shapes)
    for total, local in shapes + [(reader.local, reader.local)]:
        reads = None if total != reader.local or len(shapes) == 1 else 2 * (loaded.SKIP + loaded.TIMED)
        reader.launch_timed(top, total, local, reads).wait()
        reader.check_timed(top)     # raises where a sum differs
        stamps = reader.cycles_per_load()
        assert len(stamps) == total // local
        if "NVIDIA" not in device.platform.name:
            assert (stamps == 0).all()


def test_the_timed_check_catches_a_wrong_sum(dev):
    device, ctx, queue = dev
    top = 2**16
    reader = loaded.TimedReader(ctx, queue, device, top, "small")
    reader.launch_timed(top, reader.local, reader.local, 48).wait()
    reader.host = reader.host + 1        # NumPy's side now disagrees
    with pytest.raises(RuntimeError, match="timed read summed"):
        reader.check_timed(top)


def test_off_nvidia_the_latency_under_load_is_refused_with_the_reason(dev):
    device, ctx, queue = dev
    if "NVIDIA" in device.platform.name:
        pytest.skip("an NVIDIA device reads the counter")
    got = loaded.measure(ctx, queue, device, "small")
    assert set(got) == {"why_not"} and "clock64" in got["why_not"]


def point(items, gbs, ns):
    return {"items_per_cu": items, "gbs": gbs, "ns": ns, "ns_lo": ns, "ns_hi": ns}


H100_LIKE = {"alone_ns": 170.0, "knee": point(248, 3900.0, 560.0),
             "full": point(993, 4050.0, 1290.0)}


@pytest.mark.parametrize("given, held", [
    (H100_LIKE, True),
    ({**H100_LIKE, "full": point(993, 4050.0, 600.0)}, False),   # the wait grew as the rate
    ({**H100_LIKE, "knee": point(993, 4050.0, 1290.0)}, False),  # the knee is the full launch
])
def test_the_claim_needs_the_rate_flat_and_the_wait_longer_past_the_knee(given, held):
    c = queues_past_the_knee(given, read_gbs=4100.0)
    assert c.held is held and c.kind == "cause"
    assert f"{given['knee']['ns']:,.0f} ns" in c.sentence


def test_the_claim_says_why_where_nothing_was_timed():
    c = queues_past_the_knee({"why_not": "the CPU has no SM cycle counter"}, 3200.0)
    assert c.held is None
    assert "the CPU has no SM cycle counter" in c.sentence and "chase" in c.sentence


def test_the_knee_is_the_first_launch_within_ten_percent_of_the_best(dev, monkeypatch):
    """On a fake device whose read rate and waits come from a table: the knee, the
    full launch and the alone wait are where the module says."""
    device, ctx, queue = dev
    monkeypatch.setattr(loaded.clock, "why_not", lambda device: None)
    monkeypatch.setattr(loaded, "largest_working_set", lambda device, scale: 2**16)

    waits = {"alone": 170.0, 64: 300.0, 128: 560.0, 256: 1290.0}    # ns
    rates = {64: 2000.0, 128: 3800.0, 256: 4000.0}                    # GB/s

    class Fake:
        reads, local, total, cus = 1000, 32, 256, 1

        def __init__(self, *args):
            pass

        def shapes(self):
            return [(64, 32), (128, 64), (256, 128)]

        def launch_timed(self, nbytes, total=None, local=None, reads=None):
            self.last = "alone" if reads else total
            return SimpleNamespace(wait=lambda: None)

        def check_timed(self, nbytes):
            pass

        def cycles_per_load(self):
            return np.full(4, waits[self.last] * 1.98)

        def bytes_per_launch(self):
            return rates[self.last] * 1e6        # GB/s x 1 ms

    monkeypatch.setattr(loaded, "TimedReader", Fake)
    monkeypatch.setattr(loaded, "time_events",
                        lambda f, repeats: (f(), SimpleNamespace(median=1e-3))[1])
    got = loaded.measure(ctx, queue, device, "small", ghz=1.98)
    assert got["alone_ns"] == pytest.approx(170.0)
    assert [round(p["gbs"]) for p in got["points"]] == [2000, 3800, 4000]
    assert got["knee"]["ns"] == pytest.approx(560.0) and got["full"]["ns"] == pytest.approx(1290.0)


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
