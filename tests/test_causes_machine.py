"""Chapter 0's and the machine page's cause claims (issue 45), evaluated on the
reference records (the H100's and, where it has the data, the H200's) as
test_claims_reduction_cause.py evaluates chapter 3's: each prints its values and
each can fail."""
import json

import pytest

from gpubook.chapters.machine import claims as mc
from gpubook.chapters.machine import probes
from stored_outputs import RESULTS, all_held as held, record as rec

H100 = "nvidia-h100-80gb-hbm3"
# gpubook.clock.measure on the H100, 2026-11-27, iters=131072 (not yet in its record)
H100_CLOCK_GHZ = 1.9796
H100_LANES = 132 * 128

pytestmark = pytest.mark.usefixtures("no_glue")   # tests/conftest.py


def counters(slug, chapter):
    return json.loads((RESULTS / slug / f"{chapter}.json").read_text())["counters"]


def test_fma_roof_at_the_measured_clock_holds_on_the_h100():
    lim = rec(H100, "00_device")
    ghz = (lim.get("sm_clock") or {}).get("ghz", H100_CLOCK_GHZ)
    c = mc.fma_clock_cause(lim["limits"]["fp32_gflops"], ghz, H100_LANES)
    held(c)
    assert c.kind == "cause"
    print(f"FMA roof {c.values['fp32_gflops']:,.0f} / lanes x 2 x {ghz} GHz "
          f"{c.values['model']:,.0f} = {c.values['share']:.3f} (within 0.05 of 1)")


def test_fma_roof_can_fail_and_is_missing_without_a_clock():
    assert mc.fma_clock_cause(50_000, 1.98, H100_LANES).held is False    # 75% of it
    assert mc.fma_clock_cause(63_800, 1.5, H100_LANES).held is False     # a lower clock
    c = mc.fma_clock_cause(63_800, None, H100_LANES)
    assert c.held is None and "not known" in c.sentence


def test_l1_holds_more_than_reported_on_the_h100():
    d = rec(H100, "00_machine")
    c = mc.l1_size_cause(d["bandwidth_curve"], d["rotated_curve"], d["facts"])
    held(c)
    v = c.values
    assert v["lo"] == 32 * 2**20 and v["hi"] == 64 * 2**20
    print(f"wrapped / rotated {v['ratio_lo']:.2f} at 32 MiB, {v['ratio_hi']:.2f} at 64 MiB; "
          f"{v['lo_cu'] / 1024:.0f} KiB per compute unit = {v['times']:.1f} x OpenCL's "
          f"{v['reported_cu'] / 1024:.0f} KiB (> 4)")
    # the hierarchy figure's L1 row says the same
    rows = probes.hierarchy_levels(d["facts"], d["latency_curve"], d["bandwidth_curve"],
                                   d["local_gbs"], 55.0, None, d["rotated_curve"])
    assert "at least 248 KiB each" in rows[2][1]
    assert rows[3][3].startswith("143 ns")      # the L2's latency level, measured


def test_l1_size_can_fail_and_is_missing_without_the_rotated_sweep():
    d = rec(H100, "00_machine")
    # an L1 of OpenCL's size: the wrapped lead ends past 4 MiB
    wrapped = [dict(r, rate=r["rate"] if r["bytes"] <= 2**22 else 1.2 * rot["rate"])
               for r, rot in zip(d["bandwidth_curve"], d["rotated_curve"])]
    assert mc.l1_size_cause(wrapped, d["rotated_curve"], d["facts"]).held is False
    # a record made before the rotated sweep existed (the H200's of 2026-11-25) has none
    c = mc.l1_size_cause(d["bandwidth_curve"], None, d["facts"])
    assert c.held is None and "not measured" in c.sentence
    h200 = rec("nvidia-h200", "00_machine")     # recorded with it on 2026-11-28
    assert mc.l1_size_cause(h200["bandwidth_curve"], h200["rotated_curve"], h200["facts"]).held is True


def test_counter_claims_hold_on_the_h100():
    rows = counters(H100, "00_machine")
    made = [mc.chase_latency_cause(rows["machine/chase.cl:chase"], "The H100"),
            mc.read_l1_cause(rows["machine/read.cl:read[BLOCKED=0]"], "The H100"),
            mc.stride1_cause(rows["machine/local_stride.cl:local_stride[N=2048]"],
                             "The H100", 2048)]
    held(*made)
    for c in made:
        assert c.kind == "cause"
        print(c.name, c.values)


def test_counter_claims_can_fail():
    rows = counters(H100, "00_machine")
    chase = rows["machine/chase.cl:chase"]
    busy = dict(chase, metrics=dict(chase["metrics"], occupancy_pct=50.0))
    assert mc.chase_latency_cause(busy, "The H100").held is False
    read = rows["machine/read.cl:read[BLOCKED=0]"]
    from_l2 = dict(read, metrics=dict(read["metrics"], l2_pct=60.0))
    assert mc.read_l1_cause(from_l2, "The H100").held is False
    stride = rows["machine/local_stride.cl:local_stride[N=2048]"]
    conflicts = dict(stride, metrics=dict(stride["metrics"], shared_ld_conflicts=1e6))
    assert mc.stride1_cause(conflicts, "The H100", 2048).held is False
    assert mc.stride1_cause(stride, "The H100", 512).held is False   # other loads per item
    # a row whose replay is not trusted concludes nothing
    untrusted = rows["machine/read.cl:read[BLOCKED=0 ROTATE=1]"]
    assert mc.read_l1_cause(untrusted, "The H100").held is None
    assert mc.chase_latency_cause(None, None).held is None
