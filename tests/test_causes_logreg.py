"""Chapters 1, 2 and 4's causes read from hardware counters (kind "cause"), evaluated on
the counters the H100's records hold (measured 2026-11-27; the H200's records hold none
yet), and chapter 4's arithmetic floor on both devices' records. Each claim must hold
there, and each must fail when its mechanism is changed."""
import copy
import json

import pytest

from gpubook.chapters.logreg import claims as lc, vectors as vt
from gpubook.paths import RESULTS
from stored_outputs import all_held as held, record as rec

H100 = "nvidia-h100-80gb-hbm3"
DEVICES = ("nvidia-h200", H100)
WHOSE = "NVIDIA H100 80GB HBM3"

pytestmark = pytest.mark.usefixtures("no_glue")   # tests/conftest.py


def rows(chapter, slug=H100):
    return json.loads((RESULTS / slug / f"{chapter}.json").read_text())["counters"]


def metrics(r, path, **defines):
    return r[lc.counter_label(r, path, **defines)]["metrics"]


def show(made):
    for c in made:
        print(c.name, {k: round(v, 3) for k, v in c.values.items()})


# --- chapter 1 ---------------------------------------------------------------------

def test_loop_order_causes_hold_on_the_h100_counters():
    made = lc.loop_order_counters(rows("01_loop_order"), WHOSE)
    held(*made)
    assert all(c.kind == "cause" for c in made)
    show(made)


def test_loop_order_causes_can_fail():
    r = copy.deepcopy(rows("01_loop_order"))
    naive = metrics(r, "logreg/naive.cl", ITERS=10, J=2048, K=8, N=1)
    reordered = metrics(r, "logreg/reordered.cl", ITERS=10, J=2048, K=8, N=1)
    merged = metrics(r, "logreg/merged.cl", ITERS=10, J=2048, K=8, N=1)
    naive["l1_pct"] = 60.0                                     # a bandwidth-bound L1
    naive["stalls"] = {"long_scoreboard": 0.3, "math_pipe_throttle": 0.6, "wait": 0.1}
    reordered["instructions"] = naive["instructions"] / 1.7    # the gain is fewer instructions
    merged["stalls"] = {"long_scoreboard": 0.7, "wait": 0.2, "short_scoreboard": 0.1}
    assert [c.held for c in lc.loop_order_counters(r, WHOSE)] == [False] * 4


def test_loop_order_causes_without_a_trusted_row_say_so():
    r = copy.deepcopy(rows("01_loop_order"))
    r[lc.counter_label(r, "logreg/merged.cl", ITERS=10, J=2048, K=8, N=1)]["why_not"] = "x"
    latency, naive, reorder, merged = lc.loop_order_counters(r, WHOSE)
    assert latency.held is None and merged.held is None and naive.held and reorder.held
    assert "no trusted counters row" in merged.sentence
    assert lc.loop_order_counters({}, None)[0].held is None


# --- chapter 2 ---------------------------------------------------------------------

def test_work_items_causes_hold_on_the_h100_counters():
    made = lc.work_items_counters(rows("02_work_items"), WHOSE)
    held(*made)
    assert all(c.kind == "cause" for c in made)
    show(made)


def test_work_items_causes_can_fail():
    r = copy.deepcopy(rows("02_work_items"))
    one = metrics(r, "logreg/work_items.cl", ITERS=1, J=2048, K=8, N=1)
    warp = metrics(r, "logreg/work_items.cl", ITERS=1, J=2048, K=8, N=32)
    big = metrics(r, "logreg/work_items.cl", ITERS=1, J=2048, K=8, N=1024)
    bare = metrics(r, "logreg/work_items.cl", ITERS=50000, J=2048, K=8, N=128, PER_ITEM=0)
    warp["instructions"] = one["instructions"] / 2             # no sharing in the warp
    big["stalls"] = {"long_scoreboard": 0.8, "barrier": 0.1, "wait": 0.1}
    big["issue_pct"] = 40.0                                    # the added warps issue
    bare["instructions"] *= 0.3                                # a sum that does not grow
    assert [c.held for c in lc.work_items_counters(r, WHOSE)] == [False] * 5
    r = copy.deepcopy(rows("02_work_items"))
    warp = metrics(r, "logreg/work_items.cl", ITERS=1, J=2048, K=8, N=32)
    warp["l1_pct"] /= 20                                       # coalesced: the L1 shares too
    assert lc.work_items_counters(r, WHOSE)[1].held is False


# --- chapter 4 ---------------------------------------------------------------------

def test_float4_causes_hold_on_the_h100_counters():
    made = vt.float4_counters(rows("04_vector_types"), rows("02_work_items"), WHOSE)
    held(*made)
    assert all(c.kind == "cause" for c in made)
    show(made)


def test_float4_causes_can_fail():
    r4 = copy.deepcopy(rows("04_vector_types"))
    for n in (1, 2, 4):                                        # loads were most of the loop
        metrics(r4, "logreg/float4.cl", ITERS=1, J=2048, K=8, N=n)["instructions"] /= 3
    top = metrics(r4, "logreg/float4.cl", ITERS=50000, J=2048, K=8, N=1024)
    top["stalls"] = {"long_scoreboard": 0.5, "barrier": 0.3, "wait": 0.2}
    assert [c.held for c in vt.float4_counters(r4, rows("02_work_items"), WHOSE)] == \
        [False, False]
    fewer, rounds = vt.float4_counters({}, {}, None)
    assert fewer.held is None and rounds.held is None
    assert "nan" not in (fewer.sentence + rounds.sentence).lower()


@pytest.mark.parametrize("slug", DEVICES)
def test_arithmetic_floor_is_a_cause_at_the_clock_used(slug):
    d = rec(slug, "04_vector_types")
    most = 1e3 / rec(slug, "00_device")["summary"]["max clock (MHz)"]
    limits = rec(slug, "00_device")["limits"]
    # the H100's SM clock under load, measured 2026-11-27, where chapter 0's record
    # does not hold it yet; the data sheet's largest clock where no clock is measured
    measured = limits.get("sm_clock_ghz") or (1.9796 if slug == H100 else None)
    for given in ({**limits, "sm_clock_ghz": None}, {**limits, "sm_clock_ghz": measured}):
        cyc, words = vt.clock_used(given, most)
        c = vt.arithmetic_floor(1e9 / d["fast_rate"], cyc, d["J"], d["K"], 128, 16,
                                clock=words)
        held(c)
        assert c.kind == "cause" and c.values["floor"] == 256 and words in c.sentence
        assert ("measured under load" in words) == bool(given["sm_clock_ghz"])
        print(slug, words, {k: round(v, 3) for k, v in c.values.items()})


def test_arithmetic_floor_can_fail_and_says_which_clock():
    cyc, words = vt.clock_used({}, 1 / 1.98)
    assert "largest clock" in words and abs(cyc - 1 / 1.98) < 1e-12
    assert vt.arithmetic_floor(200.0, cyc, 2048, 8, 128, 16, clock=words).held is False
    assert vt.clock_used(None, float("nan"))[1] is None
    c = vt.arithmetic_floor(500.0, float("nan"), 2048, 8, 128, 16)
    assert c.held is None and "nan" not in c.sentence.lower()
