"""Chapter 2's cause claim (gain_from_sharing), evaluated on the reference records as
tests/test_claims_early.py evaluates the chapter's other claims: the H100's and the
H200's sweep, against chapter 0's recorded launch time on the same device."""
import pytest

from gpubook.chapters.logreg import claims as lc
from stored_outputs import all_held as held, record as rec

DEVICES = ("nvidia-h200", "nvidia-h100-80gb-hbm3")


pytestmark = pytest.mark.usefixtures("no_glue")   # tests/conftest.py


@pytest.mark.parametrize("slug", DEVICES)
def test_gain_from_sharing_holds_on_the_records(slug):
    d = rec(slug, "02_work_items")
    launch_us = rec(slug, "00_device")["limits"]["launch_us"]
    c = lc.sharing_cause(d["sweep"], d["iterations"], d["J"], launch_us)
    print(slug, c.values)
    held(c)
    assert c.kind == "cause" and "not from a launch cost" in c.sentence


def test_gain_from_sharing_fails_where_launch_cost_would_explain_it():
    # a sweep whose launches are as short as chapter 0's empty kernel, and whose first
    # doubling gains little: the claim must fail and say so
    sweep = [{"work_items": n, "median_s": 20e-6 / min(n, 1.2)} for n in (1, 2, 4)]
    c = lc.sharing_cause(sweep, 1, 2048, 17.5)
    assert c.held is False and "does not show" in c.sentence


def test_gain_from_sharing_without_chapter0_is_unsettled():
    sweep = [{"work_items": n, "median_s": 1.0 / n} for n in (1, 2)]
    c = lc.sharing_cause(sweep, 50000, 2048, None)
    assert c.held is None and "launch_us" in c.sentence
