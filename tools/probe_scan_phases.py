"""GPU host: the single-pass scan of 2^28 floats (chapter 7) at a few tile shapes, each
with a work-item's loads all asked for before any is stored into local memory and
each stored as it comes (LOADS_FIRST): its time against chapter 0's copy figure,
checked against the float64 prefix sums, and where each tile's time goes
(gpubook.chapters.scan.phases), against the bytes in flight that Little's law asks for.

    PYOPENCL_CTX=0 python tools/probe_scan_phases.py [CSV]
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import pyopencl.array as cla  # noqa: E402

import gpubook as gb  # noqa: E402
from gpubook import clock  # noqa: E402
from gpubook.device import compute_units  # noqa: E402
from gpubook.chapters.machine import loaded  # noqa: E402
from gpubook.chapters.scan import phases  # noqa: E402
from gpubook.chapters.scan.steps import DeviceScan  # noqa: E402

SHAPES = [dict(wg=wg, items=items, shuffle=True, loads_first=first)
          for wg, items in [(512, 16), (256, 16), (128, 32), (512, 8), (256, 8), (1024, 8)]
          for first in (True, False)]
# PROBE_SET=look: the look-back window instead, the loads first
LOOK_SHAPES = [dict(wg=wg, items=items, shuffle=True, look=look)
               for wg, items in [(512, 16), (256, 16), (128, 32)]
               for look in (32, 64, 128, 256) if look <= wg]
# PROBE_SET=warp: the first warp looking back alone (WARP_LOOK) against the page's look-back
WARP_SHAPES = [dict(wg=wg, items=items, shuffle=True, warp_look=warp)
               for wg, items in [(512, 16), (256, 16), (128, 32), (512, 8), (1024, 8)]
               for warp in (False, True)]


def main():
    device, ctx, queue, scale, name = gb.open_device()
    n = int(os.environ.get("PROBE_N", 2**28))
    host = np.random.default_rng(5).random(n, dtype=np.float32)
    src, dst = cla.to_device(queue, host), cla.empty(queue, n, np.float32)
    ref = np.cumsum(host, dtype=np.float64)
    copy = gb.copy_gbs(ctx, queue, device)
    ghz = clock.measure(ctx, queue, device).ghz if not clock.why_not(device) else None
    lat = loaded.measure(ctx, queue, device, scale, ghz=ghz)
    knee = lat.get("knee", {})
    want = copy * knee.get("ns", float("nan")) / compute_units(device)
    print(f"{name}: copy {copy:,.0f} GB/s, SM clock {ghz or 0:.3f} GHz, loaded latency "
          f"{knee.get('ns', float('nan')):.0f} ns: Little asks {want / 1024:.1f} KiB "
          f"in flight per SM ({lat.get('why_not') or 'knee'})", flush=True)
    rows = []
    sets = {"look": LOOK_SHAPES, "warp": WARP_SHAPES}
    for shape in sets.get(os.environ.get("PROBE_SET"), SHAPES):
        try:
            ds = DeviceScan(ctx, queue, "4_single_pass", **shape)
        except Exception as err:  # noqa: BLE001 (a probe: say and go on)
            print(shape, "skipped:", str(err).splitlines()[0][:120])
            continue
        ds.enqueue(src, dst, n)
        err = float(np.max(np.abs(dst.get() - ref)) / ref[-1])
        t = gb.time_events(lambda: ds.enqueue(src, dst, n), repeats=10)
        ph = phases.measure(ctx, queue, src, dst, n, ghz, **shape)
        gbs = 8 * n / t.median / 1e9
        row = dict(shape, ms=t.median * 1e3, pct_of_copy=100 * gbs / copy, err=err, **ph)
        rows.append(row)
        print(f"{shape}: {t.median * 1e3:.3f} ms, {gbs / copy:.1%} of copy, err {err:.1e}"
              + ("" if err < 1e-5 else " WRONG"), flush=True)
        print("   ", {k: round(v, 1) if isinstance(v, float) else v for k, v in ph.items()},
              flush=True)
    if len(sys.argv) > 1:
        import csv
        keys = sorted({k for r in rows for k in r})
        with open(sys.argv[1], "w", newline="") as f:
            w = csv.DictWriter(f, keys)
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
