"""Timing statistics and sweeps on known event data."""
from types import SimpleNamespace

import pytest

import gpubook as gb


class FakeEvent:
    def __init__(self, start_ns, end_ns):
        self.profile = SimpleNamespace(start=start_ns, end=end_ns)
        self.waited = False

    def wait(self):
        self.waited = True


def test_stats_median_and_quantiles():
    t = gb.stats([5.0, 1.0, 3.0, 2.0, 4.0])
    assert t.median == 3.0
    assert t.q20 == pytest.approx(1.8)
    assert t.q80 == pytest.approx(4.2)
    assert sorted(t.samples) == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_stats_rejects_empty():
    with pytest.raises(ValueError):
        gb.stats([])


def test_rate_band_comes_from_the_quantiles():
    t = gb.stats([1.0, 2.0, 4.0])
    med, lo, hi = t.rate(8.0)
    assert med == 4.0 and lo < med < hi


def test_time_events_uses_event_clock_and_skips_warmup():
    durations = iter([999_000, 1_000, 2_000, 3_000])  # first one is the warm-up
    calls = []

    def launch():
        d = next(durations)
        ev = FakeEvent(10_000, 10_000 + d)
        calls.append(ev)
        return ev

    t = gb.time_events(launch, repeats=3, warmup=1)
    assert t.median == pytest.approx(2e-6)
    assert len(t.samples) == 3 and all(ev.waited for ev in calls)


def test_time_events_spans_a_list_of_events():
    t = gb.time_events(lambda: [FakeEvent(0, 100), FakeEvent(150, 1_000)], repeats=2, warmup=0)
    assert t.median == pytest.approx(1e-6)


def test_sweep_records_and_table():
    def measure(variant, x):
        return gb.stats([x * (2 if variant == "slow" else 1)])

    recs = gb.sweep("n", [1, 2], ["fast", "slow"], measure, amount=lambda v, x: 10 * x)
    assert len(recs) == 4
    fast1 = next(r for r in recs if r["variant"] == "fast" and r["n"] == 1)
    assert fast1["rate"] == 10 and fast1["median_s"] == 1
    rows = gb.table(recs, "n", fmt="{:.0f}")
    assert rows[0] == ["n", "fast", "slow"]
    assert rows[2] == [2, "10", "5"]
