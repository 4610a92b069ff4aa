"""Part 8.1's causes, evaluated on the reference records: house_step's time grows with
the panel width at a fixed number of launches (the H100 and the H200), step 2 waits
on its chain of dependent steps and the trailing updates on their loads (the H100's
counters; the H200 has none for this chapter)."""
import copy
import json

import pytest

from gpubook.chapters.lsq import claims as lc
from gpubook.paths import RESULTS
from stored_outputs import record as rec

H100, H200 = "nvidia-h100-80gb-hbm3", "nvidia-h200"

pytestmark = pytest.mark.usefixtures("no_glue")   # tests/conftest.py


def widths(slug):
    return {int(k): v["by_kernel"]["house_step"] for k, v in rec(slug, "08_lsq")["blocked"].items()}


@pytest.mark.parametrize("slug", (H100, H200))
def test_house_step_work_on_the_records(slug):
    c = lc.house_step_work(widths(slug))
    assert c.held is True and c.kind == "cause", c.sentence
    print(slug, c.values)


def counters():
    entry = json.loads((RESULTS / H100 / "08_lsq.json").read_text())
    return entry["counters"], entry["device"]


@pytest.mark.parametrize("cause", (lc.row_group_chain, lc.trailing_latency))
def test_the_counter_causes_hold_on_the_h100(cause):
    c = cause(*counters())
    assert c.held is True and c.kind == "cause", c.sentence
    print(c.name, c.values)


def test_the_table_names_every_kernel():
    rows, _ = counters()
    assert all(label in rows for _, label in lc.COUNTED)


def test_the_claims_can_fail():
    assert lc.house_step_work({8: 1.0, 32: 1.2}).held is False        # flat: launches
    assert lc.house_step_work({16: 1.0}).held is None
    rows, whose = counters()
    out = copy.deepcopy(rows)
    out[lc.ROW_GROUP_COUNTED]["metrics"]["stalls"] = {"long_scoreboard": 0.7, "wait": 0.2}
    assert lc.row_group_chain(out, whose).held is False
    out = copy.deepcopy(rows)
    label = next(k for k in out if ":trail_update[" in k)
    out[label]["metrics"]["dram_pct"] = 85.0
    assert lc.trailing_latency(out, whose).held is False
