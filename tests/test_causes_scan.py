"""Chapter 7's causes read from the H100's counters (the H200 has none for this
chapter): step 1's issue slots fill and its barriers take over as the work-group
grows; step 2 spends a far smaller share of its stalls at barriers."""
import copy
import json

import pytest

from gpubook.chapters.scan import claims as sc
from gpubook.paths import RESULTS

H100 = "nvidia-h100-80gb-hbm3"
CAUSES = (sc.seed_lanes_cause, sc.seed_barrier_cause, sc.work_efficient_barrier_cause)

pytestmark = pytest.mark.usefixtures("no_glue")   # tests/conftest.py


def counters(slug=H100):
    entry = json.loads((RESULTS / slug / "07_scan.json").read_text())
    return entry["counters"], entry["device"]


@pytest.mark.parametrize("cause", CAUSES)
def test_the_causes_hold_on_the_h100(cause):
    c = cause(*counters())
    assert c.held is True and c.kind == "cause", c.sentence
    print(c.name, c.values)


@pytest.mark.parametrize("cause", CAUSES)
def test_the_causes_hold_on_the_h200s_own_counters(cause):
    # profiled on the H200 (2026-11-29), with step 2 trusted up to WG = 128, where the
    # barrier's share of the stall cycles alone would not have shown the saving
    c = cause(*counters("nvidia-h200"))
    assert c.held is True and "H200" in c.values["whose"], c.sentence


def test_the_table_names_every_kernel():
    rows, _ = counters()
    labels = [label for _, label in sc.counted([32, 64, 128, 256, 512, 1024], [32, 64])]
    assert sum(label in rows for label in labels) == 8


def test_the_claims_can_fail():
    rows, whose = counters()

    def changed(template, wg, **metrics):
        out = copy.deepcopy(rows)
        out[template.format(wg=wg)]["metrics"].update(metrics)
        return out

    assert sc.seed_lanes_cause(changed(sc.HS, 1024, issue_pct=10.0), whose).held is False
    flat = changed(sc.HS, 1024, stalls={"long_scoreboard": 0.6, "barrier": 0.2})
    assert sc.seed_barrier_cause(flat, whose).held is False
    hs64 = rows[sc.HS.format(wg=64)]["metrics"]
    # step 2 at step 1's time and barrier share: no barrier cycles saved
    same = changed(sc.WE, 64, stalls={"barrier": 0.19}, duration_s=hs64["duration_s"])
    assert sc.work_efficient_barrier_cause(same, whose).held is False
    # a smaller share alone does not show it: the cycles are share times time
    longer = changed(sc.WE, 64, stalls={"barrier": 0.05}, duration_s=5 * hs64["duration_s"])
    assert sc.work_efficient_barrier_cause(longer, whose).held is False
    assert sc.seed_lanes_cause({}, None).held is None
