"""Part 6.1's claim on step 3's local loads (cov_step3_local_rate, kind "cause"),
evaluated on the reference records: step 3's time from the chapter's record, local
memory's read rate from chapter 0's machine record (where the page reads it). It
replaces a "local-memory bound" that step 3 beat (116% of it on the H100)."""
import pytest

from gpubook.chapters.covariance import claims as cov
from gpubook.xtx import COL_PAD, ROW_PAD, round_up
from stored_outputs import all_held, record as data

DEVICES = ("nvidia-h200", "nvidia-h100-80gb-hbm3")
SOURCE = "the machine chapter's record"


pytestmark = pytest.mark.usefixtures("no_glue")   # tests/conftest.py


def made(slug):
    d, machine = data(slug, "06_covariance"), data(slug, "00_machine")
    mp, np_ = round_up(d["m"], ROW_PAD), round_up(d["n"], COL_PAD)
    return cov.step3_local_rate(d["steps"]["local_tiles"], mp, np_, 16, machine["local_gbs"], SOURCE), d


@pytest.mark.parametrize("slug", DEVICES)
def test_step3_local_rate_holds_on_the_records(slug):
    c, d = made(slug)
    all_held(c)
    assert c.kind == "cause" and c.as_record()["kind"] == "cause"
    # the old "bound" was local_gbs / 4 GFLOP/s; step 3 beat it, so its loads beat the read kernel
    assert 1.0 < c.values["pct"] / 100 < 1.5
    # 8 bytes per executed multiply-add: the useful rate times 4 bytes per flop, within the padding
    useful_gbs = 4 * d["useful_gflops"]["local_tiles"]
    assert c.values["rate"] == pytest.approx(useful_gbs, rel=0.01)
    assert "bound" not in c.sentence and f"{c.values['pct']:.0f}%" in c.sentence


def test_step3_local_rate_can_fail():
    c = cov.step3_local_rate(1.0, 1024, 1024, 16, 100.0, SOURCE)   # 4.3 GB/s against 100
    assert c.held is False and "only" in c.sentence and "something besides" in c.sentence


def test_step3_local_rate_without_a_measured_rate_says_so():
    c = cov.step3_local_rate(0.35, 131072, 4096, 16, None, SOURCE)
    assert c.held is None and "not known here" in c.sentence and "nan" not in c.sentence.lower()

