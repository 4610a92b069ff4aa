"""Chapter 7's cause: the single pass is fastest because each scan's time follows the
bytes it moves near chapter 0's copy rate (8 per float against reduce-then-scan's 12),
evaluated on the reference records as tests/test_claims_ch4_8.py evaluates the
chapter's other claims."""
import pytest

from gpubook.chapters.scan import claims as scan
from stored_outputs import all_held as all_hold, record as data

DEVICES = ("nvidia-h200", "nvidia-h100-80gb-hbm3")


pytestmark = pytest.mark.usefixtures("no_glue")   # tests/conftest.py


def measured(slug):
    d = data(slug, "07_scan")
    full = {r["variant"]: r["median_s"] for r in d["scan_sweep"] if r["floats"] == d["n_scan"]}
    sp = min(t for v, t in full.items() if v.startswith("4_single_pass"))
    rts = min(t for v, t in full.items() if v.startswith("3_reduce_then_scan"))
    return sp, rts, d["n_scan"], d["copy_gbs"]


@pytest.mark.parametrize("slug", DEVICES)
def test_chapter7_bytes_set_the_pace_on_the_records(slug):
    c = scan.bytes_set_pace(*measured(slug))
    assert c.kind == "cause"
    all_hold(c)


def test_chapter7_bytes_cause_can_fail():
    sp, rts, n, copy = measured("nvidia-h200")
    # reduce-then-scan as slow as twice its bytes' time: the traffic does not explain it
    assert scan.bytes_set_pace(sp, 2 * rts, n, copy).held is False
    # the single pass far below the copy rate: something besides its bytes sets its pace
    assert scan.bytes_set_pace(2 * sp, 2 * rts, n, copy).held is False


def test_chapter7_bytes_cause_without_the_copy_rate_says_so():
    sp, rts, n, _ = measured("nvidia-h200")
    c = scan.bytes_set_pace(sp, rts, n, None)
    assert c.held is None and "copy_gbs" in c.sentence
