"""What the edges and the tiles buy CholeskyQR2 on the FP64 tensor cores, on the
GPU host: the tall case (1,000,000 x 129, whose Gram and Q1 tiles of 64 hold one
live column of the last 64) and the square one (25,000 x 5,001), several ways:

  before   whole tiles at the edges, and Q1 from a transposed copy of A
  edges    the Gram's last rows and Q1's last columns apart (cholqr.EDGE_ROWS,
           EDGE_COLS), Q1 still from the copy
  default  as CholeskyQR2 runs by default (edges; Q1 reading A as stored where
           the matrix is narrow: reads_a_across)
  then the default with other tiles for the Gram or Q1's product,

each timed by the device's clock (gpubook.chapters.lsq.measure.time_factor, as
part 8.3 times it), with ||Q'Q - I|| and the Gram check, against cuSOLVER's QR
in the same process (CUDA events).

    PYOPENCL_CTX=0 python3 tools/probe_dmma_edges.py [--json FILE] [--ways NAME,...] [--launches]

--launches: only the tall case as CholeskyQR2 runs it by default, each launch of its
Gram and Q1 products timed on its own (the median of 5 runs), edges included; with
--edge-shapes, once for each pair of EDGE_SHAPES (the Gram's edge rows, Q1's edge
columns) in place of cholqr.EDGE_ROWS and EDGE_COLS, with the factorisation's time."""
import json
import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import gpubook as gb  # noqa: E402
from check_qr import cusolver_seconds, gram_check  # noqa: E402
from gpubook import dmma  # noqa: E402
from gpubook.chapters import lsq  # noqa: E402
from gpubook.chapters.lsq import cholqr, measure as lm  # noqa: E402


WIDE = {"TM": 128, "TN": 128, "WARPS_M": 2, "WARPS_N": 4, "KC": 16, "STAGES": 1}
WAYS = {"before": {"edges": False, "across": False}, "edges": {"across": False}, "default": {},
        "Q1 128x64": {"product_shape": {"TM": 128, "TN": 64, "WARPS_M": 2, "WARPS_N": 2, "KC": 16, "STAGES": 1}},
        "Q1 128x128": {"product_shape": WIDE}, "Gram 128x128": {"gram_shape": WIDE},
        "Gram and Q1 128x128": {"gram_shape": WIDE, "product_shape": WIDE}}
SQUARE_WAYS = ("before", "edges", "default", "Q1 128x64", "Q1 128x128")


def _edge(tm, tn, wm, wn, **more):
    return {"TM": tm, "TN": tn, "WARPS_M": wm, "WARPS_N": wn, "KC": 16, **more}


EDGE_SHAPES = [(_edge(16, 64, 1, 2), _edge(64, 8, 4, 1)),          # cholqr's own
               (_edge(16, 64, 1, 4), _edge(128, 8, 8, 1)),
               (_edge(16, 32, 1, 2), _edge(32, 8, 2, 1)),
               (_edge(16, 32, 1, 4), _edge(64, 8, 4, 1, KC=32, STAGES=1)),
               (_edge(16, 64, 1, 8), _edge(64, 8, 4, 1, ACROSS=8))]


def launches(ctx, queue, a):
    """Each product launch of the default tall factorisation, its median time."""
    cq = cholqr.CholeskyQR2(ctx, queue, 129, mma=True)
    buf = cq.upload(a)
    times = {}
    for _ in range(6):
        trace = []
        cq.enqueue(buf, len(a), trace)
        cq.settle(buf, len(a), trace)
        queue.finish()
        for i, (name, ev) in enumerate(trace):
            if name.startswith("tiles: Gram") or name.startswith("tiles: Q1"):
                times.setdefault((i, name), []).append((ev.profile.end - ev.profile.start) * 1e-6)
    buf.release()
    for (i, name), ms in times.items():
        print(f"  launch {i:3d} {name:22s} {np.median(ms[1:]):7.3f} ms", flush=True)


def main():
    out = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
    only = sys.argv[sys.argv.index("--ways") + 1].split(",") if "--ways" in sys.argv else None
    device, ctx, queue, _, _ = gb.open_device()
    if "--launches" in sys.argv:
        x, y = lsq.make_problem(1_000_000, 128)
        a = np.column_stack([x, y])
        for rows, cols in EDGE_SHAPES if "--edge-shapes" in sys.argv else EDGE_SHAPES[:1]:
            cholqr.EDGE_ROWS, cholqr.EDGE_COLS = rows, cols
            print(f"edge rows {dmma.label(rows)}; edge columns {dmma.label(cols)}", flush=True)
            try:
                launches(ctx, queue, a)
                res, r = lm.time_factor(cholqr.CholeskyQR2(ctx, queue, 129, mma=True), a, repeats=5)
                print(f"  CholeskyQR2 {res['median_s'] * 1e3:.2f} ms, Gram check {gram_check(r, a):.1e}",
                      flush=True)
            except Exception as err:  # a shape the device cannot hold: say so and go on
                print(f"  {err}", flush=True)
        return None
    rows = []
    for m, k in ((1_000_000, 128), (25_000, 5_000)):
        x, y = lsq.make_problem(m, k)
        a = np.column_stack([x, y])
        cus = cusolver_seconds(a[:, :k] if k > 1000 else a)
        print(f"{m:,} x {k + 1:,}: cuSOLVER {cus * 1e3:.2f} ms", flush=True)
        for way in [w for w in (SQUARE_WAYS if k > 1000 else WAYS) if not only or w in only]:
            try:
                cq = cholqr.CholeskyQR2(ctx, queue, k + 1, mma=True, **WAYS[way])
            except Exception as err:  # a tile the device cannot hold: say so and go on
                print(f"  {way}: {err}", flush=True)
                continue
            res, r = lm.time_factor(cq, a, repeats=5)
            square = k > 1000          # Q'Q on the host takes a while there: the default way only
            orth = lm.cholqr2_orthogonality(cq, a)["q"] if way == "default" or not square else None
            gram = gram_check(r, a)
            by = {n: round(s * 1e3, 3) for n, s in res["by_kernel"].items()}
            print(f"  {way:7s} {res['median_s'] * 1e3:8.2f} ms ({cus / res['median_s']:.2f}x cuSOLVER) "
                  f"orth {orth}  gram {gram}\n          {by}", flush=True)
            rows.append({"m": m, "cols": k + 1, "way": way, "median_s": res["median_s"], "cusolver_s": cus,
                         "by_kernel_ms": by, "orthogonality": orth, "gram_error": gram})
            del cq
    if out:
        json.dump({"device": device.name, "rows": rows}, open(out, "w"), indent=1, default=str)


if __name__ == "__main__":
    main()
