"""Chapter 3's cause claims from the H100's counters (issue 45): steps 1 and 2 have no
bank conflicts and differ by their divergent warps' loads; tree.cl's partial gradients,
8 floats apart, conflict once a warp holds more than 4 active work-items; one iteration
with its examples waits on global loads. Each prints its values and each can fail."""
import json

import pytest

from gpubook.chapters.reduction import claims as rc
from stored_outputs import RESULTS, all_held as held, record as rec

H100 = "nvidia-h100-80gb-hbm3"
STEP = "reduction/{}.cl:reduce[WG=256]"

pytestmark = pytest.mark.usefixtures("no_glue")   # tests/conftest.py


def counters():
    return json.loads((RESULTS / H100 / "03_reduction.json").read_text())["counters"]


def steps12():
    c = counters()
    return c[STEP.format("1_interleaved")], c[STEP.format("2_sequential")]


def gain():
    r = rec(H100, "03_device_reduction")
    at = {x["variant"]: x["median_s"] for x in r["sweep"] if x["floats"] == r["n"]}
    return at["1_interleaved"] / at["2_sequential"]


def test_warp_rounds_of_the_two_trees():
    # step 1: all 8 warps in the rounds of stride 1 to 16, then 4, 2, 1; step 2: 4, 2,
    # then 1 for the last six rounds
    assert rc.warp_rounds(256, 32, False) == 8 * 5 + 4 + 2 + 1
    assert rc.warp_rounds(256, 32, True) == 4 + 2 + 1 * 6
    assert rc.warp_rounds(32, 32, False) == rc.warp_rounds(32, 32, True) == 5


def test_steps12_claims_hold_on_the_h100():
    a, b = steps12()
    made = held(rc.steps12_banks(a, b, "The H100"),
                rc.steps12_divergence(a, b, "The H100", 256, gain()))
    for c in made:
        assert c.kind == "cause"
        print(c.name, {k: round(v, 4) for k, v in c.values.items() if v is not None})


def test_steps12_claims_can_fail():
    a, b = steps12()
    conflicted = dict(a, metrics=dict(a["metrics"], shared_conflict_share=0.5))
    assert rc.steps12_banks(conflicted, b, "The H100").held is False
    same = dict(a, metrics=dict(a["metrics"],
                                shared_ld_wavefronts=b["metrics"]["shared_ld_wavefronts"]))
    assert rc.steps12_divergence(same, b, "The H100", 256, 1.0).held is False
    assert rc.steps12_banks(None, b, "The H100").held is None
    assert rc.steps12_divergence(a, dict(b, why_not="slow"), "x", 256, 1.0).held is None


def test_tree_claims_hold_on_the_h100():
    c = counters()
    alone, one = rc.tree_rows(c, 0), rc.tree_rows(c, None)
    assert sorted(alone) == [2, 4, 8, 16, 32, 64, 128] and sorted(one) == [1, 2, 4, 8, 16, 32]
    made = held(rc.tree_conflicts(alone, "The H100"), rc.tree_latency(one, "The H100"))
    for m in made:
        assert m.kind == "cause"
        print(m.name, m.values)


def test_tree_claims_can_fail():
    c = counters()
    alone, one = rc.tree_rows(c, 0), rc.tree_rows(c, None)
    big = max(alone)
    few = {**alone, big: dict(alone[big], metrics=dict(alone[big]["metrics"],
                                                       shared_conflict_share=0.1))}
    assert rc.tree_conflicts(few, "The H100").held is False
    n1 = min(one)
    busy = {**one, n1: dict(one[n1], metrics=dict(one[n1]["metrics"],
                                                 stalls={"barrier": 0.9}))}
    assert rc.tree_latency(busy, "The H100").held is False
    assert rc.tree_conflicts({}, None).held is None
    assert rc.tree_latency({}, None).held is None
