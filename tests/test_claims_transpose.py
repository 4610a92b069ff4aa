"""Chapter 5's cause claim (tr_rows_cache_serves), evaluated on the reference
records (the H100's and the H200's) the way tests/test_claims_ch4_8.py evaluates the
chapter's other claims, and on made-up values for each outcome.

The records predate the claim, so they do not hold its bytes moved per byte used:
that comes from the trace's sectors the way the page computes it (cell "Little's law
and the layout"), from the addresses the traced warp must read (the page asserts that
the trace equals `predicted_bytes`).

On both records the claim does not hold: counted in the sectors it moves, the scalar
row walk runs at more than 3x the rate at which the transposed kernel reads memory,
which memory cannot deliver; the cache serves most of its wasted sectors. The test
pins that finding, so a record where the wasted sectors do explain the time fails
here and must be read."""
import pytest

from gpubook.chapters.transpose import claims as tr
from gpubook.chapters.transpose import figures as tf
from stored_outputs import record as data

DEVICES = ("nvidia-h200", "nvidia-h100-80gb-hbm3")


pytestmark = pytest.mark.usefixtures("no_glue")   # tests/conftest.py


def waste(variant, kp):
    """Bytes moved over bytes used by one warp's first load, as the page computes it."""
    touched, used = tf.sectors(tf.predicted_bytes(variant, kp), tf.KERNELS[variant][2])
    return 32 * len(touched) / used


def test_waste_is_the_pages():
    # row-major float loads 1,184 bytes apart: 32 sectors for 128 bytes used
    assert waste("rows", 296) == 8.0
    assert waste("cols", 296) == 1.0


@pytest.mark.parametrize("slug", DEVICES)
def test_sectors_cause_on_the_records(slug):
    d = data(slug, "05_transpose")
    n = d["summary"]["J_max"]

    def at(variant):
        return next(r for r in d["scores"] if r["variant"] == variant and r["J"] == n)
    kp = d["summary"]["kp"]
    c = tr.sectors_cause(at("rows"), at("cols"), waste("rows", kp))
    assert c.kind == "cause" and c.as_record()["kind"] == "cause"
    stored = d.get("claims", {}).get("tr_rows_cache_saves")
    if stored:  # the H100 record: the same waste as the page's own run
        assert stored["values"]["waste_rows"] == c.values["waste_rows"]
    # the finding on both records: 3.73x (H100), 3.22x (H200): the cache serves them
    assert c.values["moved_over_read"] > 2 and c.held is True, (slug, c.values)
    assert "cache serves most of the wasted sectors" in c.sentence
    assert f"not {c.values['waste_rows']:.0f}×" in c.sentence


def rec(gbs, seconds):
    return {"rate": gbs, "median_s": seconds}


def test_sectors_cause_fails_where_memory_moves_the_waste():
    # 400 GB/s used x 8 = 3,200 GB/s moved, 1.07x a 3,000 GB/s read rate; 7.5x the time
    c = tr.sectors_cause(rec(400.0, 7.5e-3), rec(3000.0, 1e-3), 8.0)
    assert c.held is False and "within 2×" in c.sentence and "7.5× longer" in c.sentence


def test_sectors_cause_says_when_something_else_holds_the_walk_back():
    c = tr.sectors_cause(rec(100.0, 30e-3), rec(3000.0, 1e-3), 8.0)
    assert c.held is False and "latency" in c.sentence and "0.27×" in c.sentence


def test_sectors_cause_without_its_inputs_says_so():
    c = tr.sectors_cause(rec(100.0, 30e-3), None, 8.0)
    assert c.held is None and "not known here" in c.sentence and "nan" not in c.sentence.lower()
    assert tr.sectors_cause(rec(100.0, 30e-3), rec(3000.0, 1e-3), None).held is None
