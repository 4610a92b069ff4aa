"""Chapter 9's cause claim, made on two devices' records (the page records nothing)."""
from ...claims import claim
from ...curves import human_bytes
from ...limits import bytes_in_flight


def inflight(records):
    """The bytes Little's law asks to be in flight on a device (the machine chapter's
    read rate × a load's latency), or None where the device has no such record:
    {"idle": at the pointer chase's latency, which every record holds, "loaded": at the
    latency under load where the machine chapter timed one, else None}. Two devices are
    compared at the same kind of latency (`stream_keeps_share`)."""
    data = records.get("00_machine", {}).get("data", {})
    little = data.get("little") or {}
    if not little or data.get("latency_ns") is None:
        return None
    timed = (data.get("loaded_latency") or {}).get("knee")
    return {"idle": bytes_in_flight(data["latency_ns"], little["gbs"], 1)["device_bytes"],
            "loaded": little["device_bytes"] if timed else None}


_LATENCY = {"loaded": "both at a load's latency under load",
            "idle": "both at an idle load's latency, from the pointer chase, since not both "
                    "records timed a load under load"}


def _like_for_like(a, b):
    """(bytes on a, bytes on b, which latency) at the same kind of latency on both:
    under load where both records timed it, else idle; (None, None, None) where one is
    missing."""
    if a is None or b is None:
        return None, None, None
    kind = "loaded" if a.get("loaded") and b.get("loaded") else "idle"
    return a[kind], b[kind], _LATENCY[kind]


def stream_keeps_share(inflight_a, inflight_b, copy_ratio, r_sum, r_iter, r_scan):
    """Why chapter 5's fused iteration and chapter 7's scan gain less than the memory from
    the second GPU (a) over the first (b) (kind "cause"): bytes in flight. The two GPUs
    share compute units, clock and latency; (a)'s memory streams `copy_ratio` times as
    fast, so Little's law asks more bytes in flight of it (`inflight_a > inflight_b`). A
    kernel that stages tiles through local memory between barriers keeps a bounded number
    of bytes in flight per compute unit: on the faster memory it cannot run slower than
    on the slower one (same units, same latency) and cannot follow the memory all the
    way, so its ratio lies in [1, copy_ratio). The sum, a barrier-free stream of `float4`
    loads, is the control: it must gain more than either. Were the cause a slower H200
    run or the arithmetic, the staged kernels would fall below 1 or the sum would gain
    no more than they do. `inflight_a`, `inflight_b`: `inflight`'s dicts, compared at
    the same kind of latency (never one under load against one idle)."""
    inflight_a, inflight_b, latency = _like_for_like(inflight_a, inflight_b)
    return claim(
        "across_stream_keeps_share",
        "inflight_a > inflight_b and 1 <= r_iter < copy_ratio and 1 <= r_scan < copy_ratio"
        " and r_sum > max(r_iter, r_scan)",
        "The records fit a bound on bytes in flight: Little's law asks {a_bytes} in flight "
        "of the faster memory against {b_bytes} ({latency}); the fused iteration and the "
        "scan, which stage tiles between barriers, gained {r_iter:.2f}× and {r_scan:.2f}×, more than "
        "nothing and less than the copy's {copy_ratio:.2f}×, while the sum, a stream with "
        "no barrier, gained the most ({r_sum:.2f}×)",
        "The records do not fit a bound on bytes in flight alone: Little's law asks "
        "{a_bytes} in flight of the faster memory against {b_bytes} ({latency}), the fused "
        "iteration and the scan gained {r_iter:.2f}× and {r_scan:.2f}× against the copy's "
        "{copy_ratio:.2f}×, and the sum {r_sum:.2f}× (the test: both between 1 and the "
        "copy's ratio, the sum above both)",
        missing="A device has no record of the machine chapter or of chapters 3, 5 and 7, "
                "so the bytes in flight are not set against the gains",
        glue=False, kind="cause",
        inflight_a=inflight_a, inflight_b=inflight_b, copy_ratio=copy_ratio,
        r_sum=r_sum, r_iter=r_iter, r_scan=r_scan, latency=latency,
        a_bytes=None if inflight_a is None else human_bytes(inflight_a),
        b_bytes=None if inflight_b is None else human_bytes(inflight_b))
