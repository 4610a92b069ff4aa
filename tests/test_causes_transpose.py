"""Chapter 5's causes read from hardware counters, evaluated on the reference records
(the H100's and the H200's own counters): the naive transpose's cost sits in the L2, the
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


@pytest.mark.parametrize("slug", (H100, "nvidia-h200"))
@pytest.mark.parametrize("cause", CAUSES)
def test_the_causes_hold_on_each_reference_gpu(cause, slug):
    c = cause(*counters(slug), KP)
    assert c.held is True and c.kind == "cause", c.sentence
    print(c.name, c.values)


def test_the_h200_page_reads_its_own_counters():
    # profiled on the H200 (2026-11-29): its page reads its own rows, and says nothing
    # about another device's
    device = SimpleNamespace(name="NVIDIA H200", platform=SimpleNamespace(name="NVIDIA CUDA"))
    whose, rows, why = gc.stored("05_transpose", device)
    assert rows and whose == "NVIDIA H200" and why is None


def test_a_launch_the_l2_holds_leaves_the_stream_unsettled():
    # the main line's small scores launch (J = 20,480: 23 MiB of X^T, under twice the
    # 50 MB L2) can neither show nor refute a stream; the H200's record counts the
    # 2^20 launch of 05's Going further (1.2 GB), which does
    rows, whose = counters("nvidia-h200")
    label = tc.COUNTED["cols"].format(kp=KP)
    small = copy.deepcopy(rows)
    small[label]["global"] = [5120]
    c = tc.cols_stream_cause(small, whose, KP)
    assert c.held is None and "L2" in c.sentence and "23 MiB" in c.sentence
    assert tc.cols_stream_cause(rows, whose, KP).held is True
    idle = copy.deepcopy(rows)
    idle[label]["metrics"]["dram_pct"] = 8.42     # the small launch's DRAM, at 2^20
    assert tc.cols_stream_cause(idle, whose, KP).held is False


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
