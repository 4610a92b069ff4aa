"""Chapter 5's causes read from hardware counters, evaluated on the reference records
(the H100's counters, which the H200's page shows too): the naive transpose's cost sits in the L2, the
scores kernel over transposed X streams from device memory, and the gradient with one
work-item per feature waits for its loads with memory idle."""
import copy
import json
from types import SimpleNamespace

import pytest

from gpubook import counters as gc
from gpubook.chapters.transpose import claims as tc
from gpubook.paths import RESULTS

H100 = "nvidia-h100-80gb-hbm3"
KP = 296
CAUSES = (tc.naive_l2_cause, tc.cols_stream_cause, tc.feature_latency_cause)

pytestmark = pytest.mark.usefixtures("no_glue")   # tests/conftest.py


def counters(slug):
    entry = json.loads((RESULTS / slug / "05_transpose.json").read_text())
    return entry["counters"], entry["device"]


@pytest.mark.parametrize("cause", CAUSES)
def test_the_causes_hold_on_the_h100(cause):
    c = cause(*counters(H100), KP)
    assert c.held is True and c.kind == "cause", c.sentence
    print(c.name, c.values)


def test_the_h200_page_falls_back_to_the_h100s_counters():
    # the H200 has no counters of its own for this chapter (its first ones, of 2026-11-27,
    # came from a replay tool that kept no launch sizes, and were dropped): its page
    # shows the H100's, says whose they are, and the claims read those
    device = SimpleNamespace(name="NVIDIA H200", platform=SimpleNamespace(name="NVIDIA CUDA"))
    whose, rows, why = gc.stored("05_transpose", device)
    assert rows and "H100" in whose and why


def test_the_table_names_every_kernel():
    rows, _ = counters(H100)
    pairs = tc.counted(KP, "naive", "tiled", "rows", "rows4", "cols", "feature", "groups")
    assert all(label in rows for _, label in pairs)


def test_the_claims_can_fail():
    rows, whose = counters(H100)

    def changed(variant, **metrics):
        out = copy.deepcopy(rows)
        out[tc.COUNTED[variant].format(kp=KP)]["metrics"].update(metrics)
        return out

    assert tc.naive_l2_cause(changed("naive", dram_pct=90.0), whose, KP).held is False
    assert tc.naive_l2_cause(changed("naive", l2_pct=30.0, l1_pct=20.0), whose, KP).held is False
    assert tc.cols_stream_cause(changed("cols", dram_pct=50.0), whose, KP).held is False
    assert tc.cols_stream_cause(changed("cols", l2_hit_pct=60.0), whose, KP).held is False
    assert tc.feature_latency_cause(changed("feature", occupancy_pct=60.0), whose, KP).held is False
    assert tc.feature_latency_cause(
        changed("feature", stalls={"wait": 0.9, "long_scoreboard": 0.1}), whose, KP).held is False
    untrusted = copy.deepcopy(rows)
    untrusted[tc.COUNTED["naive"].format(kp=KP)]["why_not"] = "its CUDA replay takes 0.5x"
    c = tc.naive_l2_cause(untrusted, whose, KP)
    assert c.held is None and "no trusted counters" in c.sentence
