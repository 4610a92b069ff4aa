"""Timing with OpenCL profiling events, and sweeps of variants over a parameter."""
import os
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Timing:
    """Seconds per launch: median with the 20% and 80% quantiles, and the samples."""
    median: float
    q20: float
    q80: float
    samples: tuple

    def rate(self, amount):
        """amount per second as (median, low, high); low comes from the slow end."""
        return amount / self.median, amount / self.q80, amount / self.q20


def stats(seconds):
    """Median and 20/80% quantiles of a list of durations in seconds."""
    s = np.asarray(seconds, dtype=float)
    if s.size == 0:
        raise ValueError("no samples to summarise")
    q20, med, q80 = np.quantile(s, [0.2, 0.5, 0.8])
    return Timing(float(med), float(q20), float(q80), tuple(float(x) for x in s))


def event_seconds(event):
    """Device time between an event's start and end, in seconds."""
    return (event.profile.end - event.profile.start) * 1e-9


def seconds_by_kernel(trace):
    """Device seconds per kernel name of a trace [(name, event)]."""
    out = {}
    for name, event in trace:
        out[name] = out.get(name, 0.0) + event_seconds(event)
    return out


def time_events(launch, repeats=10, warmup=1):
    """Run `launch()` warmup + repeats times; time each with the event it returns.

    `launch` enqueues work and returns one event, or a list of events whose
    span (first start to last end) is the time of one repetition.
    """
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    if os.environ.get("GPUBOOK_CAPTURE"):   # a capture run (gpubook.capture) is not timed:
        repeats, warmup = 1, 0               # each launch once is enough to capture it
    for _ in range(warmup):
        _wait(launch())
    times = []
    for _ in range(repeats):
        events = _wait(launch())
        times.append((events[-1].profile.end - events[0].profile.start) * 1e-9)
    return stats(times)


def _wait(result):
    events = result if isinstance(result, (list, tuple)) else [result]
    events[-1].wait()
    return events


def sweep(x_name, x_values, variants, measure, amount=None):
    """Measure every variant at every x; return tidy records.

    measure(variant, x) -> Timing. amount(variant, x) -> work per launch (bytes,
    FLOPs, iterations); when given, each record also carries the rate with its
    20-80% band as `rate`, `rate_lo`, `rate_hi`.
    """
    records = []
    for variant in variants:
        for x in x_values:
            t = measure(variant, x)
            rec = {"variant": variant, x_name: x, "median_s": t.median,
                   "q20_s": t.q20, "q80_s": t.q80}
            if amount is not None:
                rec["rate"], rec["rate_lo"], rec["rate_hi"] = t.rate(amount(variant, x))
            records.append(rec)
    return records


def table(records, x_name, value="rate", fmt="{:.4g}"):
    """A pivot table (x down, variants across) as a list of rows for display."""
    variants = list(dict.fromkeys(r["variant"] for r in records))
    xs = list(dict.fromkeys(r[x_name] for r in records))
    cell = {(r["variant"], r[x_name]): r[value] for r in records}
    rows = [[x_name] + variants]
    for x in xs:
        rows.append([x] + [fmt.format(cell[(v, x)]) if (v, x) in cell else "" for v in variants])
    return rows
