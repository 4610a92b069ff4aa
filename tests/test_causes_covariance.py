"""Part 6.1's causes, evaluated on the reference records: step 2's lower triangle
follows the work it skips (the H100 and the H200), and the register tile leaves
device memory idle (the H100's counters; the H200 has none for this chapter). Also
issue 45's check: step 3's local loads at 116% of the read kernel's rate hold the
floor claim the page now makes."""
import copy
import json

import pytest

from gpubook.chapters.covariance import claims as cc
from gpubook.paths import RESULTS
from stored_outputs import record as rec

H100, H200 = "nvidia-h100-80gb-hbm3", "nvidia-h200"

pytestmark = pytest.mark.usefixtures("no_glue")   # tests/conftest.py


def padded(n):
    return -(-n // 128) * 128


@pytest.mark.parametrize("slug", (H100, H200))
def test_symmetric_follows_work_on_the_records(slug):
    d = rec(slug, "06_covariance")
    c = cc.symmetric_follows_work(d["steps"]["naive"], d["steps"]["symmetric"], padded(d["n"]))
    assert c.held is True and c.kind == "cause", c.sentence
    print(slug, c.values)


def test_register_tiles_off_dram_on_the_h100():
    entry = json.loads((RESULTS / H100 / "06_covariance.json").read_text())
    c = cc.register_tiles_off_memory(entry["counters"], entry["device"])
    assert c.held is True and c.kind == "cause", c.sentence
    print(c.values)
    assert all(label in entry["counters"] for _, label in cc.COUNTED)


def test_step3_local_rate_is_a_floor_that_holds():
    d = rec(H100, "06_covariance")
    b = d["local_bound"]
    c = cc.step3_local_rate(d["steps"]["local_tiles"], d["m"], padded(d["n"]), 16,
                            b["local_gbs"], b["from"])
    print(c.values["pct"])
    assert c.held is True and c.values["pct"] > 100


def test_the_claims_can_fail():
    assert cc.symmetric_follows_work(1.0, 0.9, 4096).held is False     # does not halve
    entry = json.loads((RESULTS / H100 / "06_covariance.json").read_text())
    rows = copy.deepcopy(entry["counters"])
    rows[cc.REGISTER_TILES_COUNTED]["metrics"]["dram_pct"] = 80.0
    assert cc.register_tiles_off_memory(rows, "x").held is False
    rows[cc.REGISTER_TILES_COUNTED]["why_not"] = "its CUDA replay takes 0.5x"
    assert cc.register_tiles_off_memory(rows, "x").held is None
