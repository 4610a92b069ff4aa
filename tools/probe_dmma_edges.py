"""What the FP64 tensor-core kernel's edge handling buys CholeskyQR2, on the GPU
host: the tall case (1,000,000 x 129, whose Gram and Q1 tiles of 64 hold one
live column of the last 64) and the square one (25,000 x 5,001), four ways:

  before   whole tiles at the edges, every warp computing (SKIP=0), and Q1
           from a transposed copy of A
  edges    the Gram's last rows and Q1's last columns apart (cholqr.EDGE_ROWS,
           EDGE_COLS)
  across   edges, and Q1 reading A as it is stored (no transposed copy)
  default  across, and the warps wholly past the matrix skipping their products

each timed by the device's clock (gpubook.chapters.lsq.measure.time_factor, as
part 8.3 times it), with ||Q'Q - I|| and the Gram check, against cuSOLVER's QR
in the same process (CUDA events).

    PYOPENCL_CTX=0 python3 tools/probe_dmma_edges.py [--json FILE]"""
import json
import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import gpubook as gb  # noqa: E402
from check_qr import cusolver_seconds, gram_check  # noqa: E402
from gpubook import dmma  # noqa: E402
from gpubook.chapters import lsq  # noqa: E402
from gpubook.chapters.lsq import cholqr, measure as lm  # noqa: E402


class Transposing(cholqr.CholeskyQR2):
    """CholeskyQR2 as it was: Q1 from a transposed copy of A."""
    reads_a_across = False


def factorisation(ctx, queue, cols, way):
    if way == "default":
        return cholqr.CholeskyQR2(ctx, queue, cols, mma=True)
    probe = cholqr.CholeskyQR2(ctx, queue, cols, mma=True)
    shapes = {"gram_shape": {**probe.gram_shape, "SKIP": 0}, "product_shape": {**probe.product_shape, "SKIP": 0},
              "update_shape": {**dmma.SHAPE, "SKIP": 0}, "inverse_shape": {**dmma.SHAPE, "SKIP": 0}}
    kind = Transposing if way in ("before", "edges") else cholqr.CholeskyQR2
    return kind(ctx, queue, cols, mma=True, edges=way != "before", **shapes)


def main():
    out = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
    device, ctx, queue, _, _ = gb.open_device()
    rows = []
    for m, k in ((1_000_000, 128), (25_000, 5_000)):
        x, y = lsq.make_problem(m, k)
        a = np.column_stack([x, y])
        cus = cusolver_seconds(a[:, :k] if k > 1000 else a)
        print(f"{m:,} x {k + 1:,}: cuSOLVER {cus * 1e3:.2f} ms", flush=True)
        for way in ("before", "edges", "across", "default"):
            cq = factorisation(ctx, queue, k + 1, way)
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
