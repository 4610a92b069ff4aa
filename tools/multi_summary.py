"""Print chapter 10's record of a host of several devices in a few lines:
strong and weak scaling, the bounds, the host's sum each way, the claims.

    python3 tools/multi_summary.py results/<group>/10_multi_gpu.json
"""
import json
import sys


def main(path):
    e = json.load(open(path))
    d = e["data"]
    print(f"{e['device']} ({e['date']}, scale {e['scale']}): m = {d['m']:,}, n = {d['n']:,}, "
          f"blocks of {d['block_rows']:,} rows, {d.get('sum_threads')} host threads, "
          f"triangle {d.get('sum_triangle')}, overlap {d.get('sum_overlap')}")
    print("sum options (ms):", {k: round(v * 1e3, 1) for k, v in d.get("sum_options_s", {}).items()})
    cov, after = d["covariance"], d.get("covariance_other_way", {})
    for g in cov:
        b = max(d["compute_bound_s"][g], d["transfer_bound_s"][g])
        r = cov[g]
        line = (f"  {g} dev: {r['seconds'] * 1e3:7.1f} ms, x{cov['1']['seconds'] / r['seconds']:.2f} "
                f"(bounds x{max(d['compute_bound_s']['1'], d['transfer_bound_s']['1']) / b:.2f}), "
                f"bound {b * 1e3:.1f} ms (h2d {d['h2d_gbs'][g]:.1f} GB/s), time/bound {r['seconds'] / b:.2f}, "
                f"host after last {r['host_s'] * 1e3:.1f} ms, blocks {r['blocks']}")
        if g in after:
            line += f"; the other way: {after[g]['seconds'] * 1e3:.1f} ms, host {after[g]['host_s'] * 1e3:.1f} ms"
        print(line)
    w = d.get("weak")
    if w:
        print(f"weak, {w['rows_each']:,} rows each:", {g: round(s * 1e3, 1) for g, s in w["seconds"].items()},
              "bounds:", {g: round(s * 1e3, 1) for g, s in w["bound_s"].items()})
    sub = d["subsets"]["seconds"]
    print("subsets (s):", {g: round(s, 3) for g, s in sub.items()},
          f"x{sub['1'] / sub[str(d['devices'])]:.2f} on {d['devices']}")
    k = d["dask"]
    print(f"dask: held {k['held_s'] * 1e3:.1f} ms vs threads {cov[str(d['devices'])]['seconds'] * 1e3:.1f} ms; "
          f"store {k['seconds'] * 1e3:.1f} ms, threads from the store {k['store_threads_s'] * 1e3:.1f} ms, "
          f"store {k['store_gbs']:.1f} GB/s, comm {k['comm_s'] * 1e3:.1f} ms")
    if "bound_s" in k:
        print(f"dask bound {k['bound_s'] * 1e3:.1f} ms (fan-in {k.get('fan_in')}); parts (ms):",
              {p: round(v * 1e3, 1) for p, v in k.get("held_parts_s", {}).items()})
        print("  alone (ms):", {p: round(v * 1e3, 1) for p, v in k.get("costs_s", {}).items()})
    if w and "host_s" in w:
        print("weak, host after the last device (ms):", {g: round(s * 1e3, 1) for g, s in w["host_s"].items()})
    for name, c in d.get("claims", {}).items():
        print(f"  claim {name}: {c['held']} {c['values']}")


if __name__ == "__main__":
    main(sys.argv[1])
