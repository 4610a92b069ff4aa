"""Chapter 3's cause claim, evaluated on the reference records (the H100's and the
H200's) as test_claims_early.py evaluates the chapter's other claims: step 5 is held by
memory bandwidth (at the machine chapter's read rate, unrolling changes nothing) and
step 4, with one float per load, is not."""
import pytest

from gpubook.chapters.reduction import claims as rc
from stored_outputs import all_held as held, record as rec

DEVICES = ("nvidia-h200", "nvidia-h100-80gb-hbm3")


pytestmark = pytest.mark.usefixtures("no_glue")   # tests/conftest.py


def inputs(slug):
    r = rec(slug, "03_device_reduction")
    n, gb = r["n"], 4 * r["n"] / 1e9
    at = {x["variant"]: x["median_s"] for x in r["sweep"] if x["floats"] == n}
    return (gb / at["4_multi"], gb / at["5_unrolled"], rec(slug, "00_machine")["read_gbs"],
            list(r["unroll"].values()))


@pytest.mark.parametrize("slug", DEVICES)
def test_step5_bandwidth_cause_holds_on_the_records(slug):
    c = rc.bandwidth_cause(*inputs(slug))
    held(c)
    assert c.kind == "cause" and c.sentence.startswith("Memory bandwidth")
    v = c.values
    print(slug, f"step5/read {v['share5']:.3f} (>= 0.85), unroll spread {v['unroll_spread']:.4f} "
                f"(< 1.1), step4/read {v['share4']:.3f} (< 0.85)")


@pytest.mark.parametrize("slug", DEVICES)
def test_step5_over_step4_is_not_within_10_percent(slug):
    # the relation first asked for (both steps bandwidth-bound) does not hold on the records
    gbs4, gbs5, _, _ = inputs(slug)
    assert abs(gbs4 / gbs5 - 1) > 0.1


def test_the_claim_can_fail():
    gbs4, gbs5, read, unroll = inputs("nvidia-h200")
    assert rc.bandwidth_cause(gbs4, 0.8 * read, read, unroll).held is False      # below the roof
    assert rc.bandwidth_cause(gbs4, gbs5, read, [1.0, 1.0, 1.0, 1.2]).held is False  # unrolling moves it
    assert rc.bandwidth_cause(0.9 * read, gbs5, read, unroll).held is False     # step 4 there too
    c = rc.bandwidth_cause(gbs4, gbs5, None, unroll)
    assert c.held is None and "no read rate" in c.sentence
