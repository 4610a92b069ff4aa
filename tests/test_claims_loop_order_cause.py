"""Chapter 1's cause claim (reorder_gain_from_accesses), evaluated on the reference
records as tests/test_claims_early.py evaluates the chapter's other claims: the H100's
and the H200's step times, with the page's counts of accesses and lines of X per
iteration, against chapter 0's recorded launch time on the same device."""
import pytest

from gpubook.chapters.logreg import claims as lc
from stored_outputs import all_held as held, record as rec

DEVICES = ("nvidia-h200", "nvidia-h100-80gb-hbm3")


pytestmark = pytest.mark.usefixtures("no_glue")   # tests/conftest.py


def counts(J, K, line=64):
    # the page's memory table: accesses, and lines of X visited, per iteration
    x_lines = J * K * 4 // line
    return ({"naive": 3 * J * K + 2 * J, "reordered": 2 * J * K + 3 * J},
            {"naive": (1 + K) * x_lines, "reordered": 2 * x_lines})


@pytest.mark.parametrize("slug", DEVICES)
def test_reorder_gain_from_accesses_holds_on_the_records(slug):
    d = rec(slug, "01_loop_order")
    t = {r["variant"]: r["median_s"] for r in d["steps"]}
    accesses, visits = counts(d["J"], d["K"])
    c = lc.reorder_cause(t["naive"], t["reordered"], accesses, visits,
                         rec(slug, "00_device")["limits"]["launch_us"])
    v = c.values
    print(slug, v, f"above the accesses by {v['gain'] / v['access_ratio']:.3f}x,",
          f"below the midpoint by {v['midpoint'] / v['gain']:.3f}x")
    held(c)
    assert c.kind == "cause" and "not the cache lines fetched" in c.sentence


@pytest.mark.parametrize("t_naive", [4.3, 1.2])
def test_reorder_gain_fails_where_lines_or_something_else_set_it(t_naive):
    # a gain near the line-visit ratio (4.5 at K = 8), or below the access ratio
    accesses, visits = counts(2048, 8)
    c = lc.reorder_cause(t_naive, 1.0, accesses, visits, 17.5)
    assert c.held is False and "does not follow" in c.sentence


def test_reorder_gain_fails_where_the_launches_are_launch_bound():
    accesses, visits = counts(2048, 8)
    c = lc.reorder_cause(35e-6, 20e-6, accesses, visits, 17.5)
    assert c.held is False


def test_reorder_gain_without_chapter0_is_unsettled():
    accesses, visits = counts(2048, 8)
    c = lc.reorder_cause(1.7, 1.0, accesses, visits, None)
    assert c.held is None and "launch_us" in c.sentence
