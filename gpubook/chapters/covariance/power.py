"""Part 6.3's exercise 3: the same wgmma products run back to back after the GPU has
rested, each with the SM clock its work-groups stamped (gpubook.wgmma.Gram with
clocks=True) and nvidia-smi's count of time at the power cap over them all. Under
3xTF32 an H200 leaves its 1.98 GHz clock for 1.5-1.7 GHz within about 100 ms, at its
700 W limit (2026-11-28, tools/probe_wgmma_gram.py's notes)."""
import time

import numpy as np

from ... import clock
from ...plot import new_figure
from ...timing import event_seconds as seconds
from .claims import _said


def ramp(cov, gram, runs=30, rest_s=3.0):
    """{"runs": [{"product_s", "ghz"}], "capped_s", "window_s", "rest_s"}: `runs` of
    step 8's products on cov's centred data, one after another, after `rest_s` seconds
    with nothing running; capped_s is None where nvidia-smi is not read."""
    if not gram.clocks or gram.emulate:
        raise ValueError("the ramp needs a Gram built with clocks=True on the tensor cores")
    if runs < 6:
        raise ValueError(f"the ramp compares its first run with its last five: {runs} runs are too few")
    time.sleep(rest_s)
    stop, out = clock.power_window(gram.queue.device), []
    for _ in range(runs):
        events = gram.enqueue(cov.xc, cov.mp, cov.np_, cov.s, ldx=cov.np_, ldc=cov.np_)
        events[-1].wait()
        out.append({"product_s": seconds(events[-1]), "ghz": gram.clock().ghz})
    window, capped = stop()
    return {"runs": out, "window_s": window, "rest_s": rest_s, "capped_s": capped}


def claim_of(found, max_ghz):
    """The exercise's answer: the first run against the median of the last five, in time
    and clock, and the time nvidia-smi counted at the power cap (None: unsettled)."""
    runs = (found or {}).get("runs") or []
    last = runs[-5:] if len(runs) >= 6 else []
    first = runs[0] if last else {}
    last_s = float(np.median([r["product_s"] for r in last])) if last else None
    return _said(
        "cov_ex_power", "last_ms >= 1.03 * first_ms and last_ghz <= 0.97 * first_ghz "
                        "and capped_ms >= 0.25 * window_ms",
        "After {rest:.0f} s at rest the first run's products took {first_ms:.1f} ms at {first_ghz:.2f} GHz; "
        "the last five of {runs:.0f} in a row took {last_ms:.1f} ms at {last_ghz:.2f} GHz (medians; the "
        "device gives {max_ghz:.2f} GHz as its clock), and nvidia-smi counted the clock held at the power "
        "cap for {capped_ms:.0f} of their {window_ms:.0f} ms. The same kernel on the same data slows by "
        "{slower:.0f}% as the card reaches its power limit: a time of tensor-core work depends on how "
        "long the tensor cores have been busy, which is why part 6.3 states the clock of its timed runs",
        "After {rest:.0f} s at rest the first run's products took {first_ms:.1f} ms at {first_ghz:.2f} GHz "
        "and the last five of {runs:.0f} {last_ms:.1f} ms at {last_ghz:.2f} GHz, with {capped_ms:.0f} of "
        "{window_ms:.0f} ms at the power cap: here the runs did not slow with the card's power",
        "This needs Hopper's wgmma, its clock and nvidia-smi, which are not all here",
        rest=found.get("rest_s") if found else None, runs=len(runs), max_ghz=max_ghz,
        first_ms=first["product_s"] * 1e3 if first else None, first_ghz=first.get("ghz"),
        last_ms=last_s * 1e3 if last else None,
        last_ghz=float(np.median([r["ghz"] for r in last])) if last else None,
        slower=100 * (last_s / first["product_s"] - 1) if last else None,
        capped_ms=None if not found or found.get("capped_s") is None else found["capped_s"] * 1e3,
        window_ms=found["window_s"] * 1e3 if found else None, kind="cause")


def draw(found, device_name):
    """Each run's product time (ms) and SM clock (GHz), against its place in the row."""
    runs = found["runs"]
    x = np.arange(1, len(runs) + 1)
    fig, (top, bottom) = new_figure(2, 1, height=4.2, sharex=True)
    top.plot(x, [r["product_s"] * 1e3 for r in runs], "o-", color="C0", ms=3)
    top.set_ylabel("products (ms)")
    bottom.plot(x, [r["ghz"] for r in runs], "o-", color="C3", ms=3)
    bottom.set_ylabel("SM clock (GHz)")
    bottom.set_xlabel("run, one after another after a rest")
    top.set_title(f"Step 8's 3xTF32 products, run after run ({device_name})", fontsize=10)
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
