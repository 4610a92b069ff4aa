"""The tall case's products (1,000,000 x 129) on the FP64 tensor cores, in tiles
as wide as the matrix: one work-group row then reads its rows of A once, and no
edge launch computes the last column apart. Against the way CholeskyQR2 runs
them today (64 x 64 tiles and cholqr.EDGE_ROWS / EDGE_COLS), each launch timed
by the device's clock (median of 10), with its largest error against NumPy on
the first rows:

  Q1 = A R^-1 reading A as stored (dmma_tiles.cl's ATRANS), all 129 columns;
  G = A'A, its main triangle in a few tiles and chunks of rows (one partial sum
  per chunk), its last row apart as CholeskyQR2 runs it.

    PYOPENCL_CTX=0 python3 tools/probe_full_width.py [ROWS] [--emulate]

(--emulate: the warp's product through local memory, to check the tiles on a CPU.)"""
import sys

import numpy as np
import pyopencl as cl

sys.path.insert(0, __file__.rsplit("/", 2)[0])
sys.path.insert(0, __file__.rsplit("/", 1)[0])
import gpubook as gb  # noqa: E402
from sweep_dmma import product_inputs  # noqa: E402
from gpubook import dmma  # noqa: E402
from gpubook.chapters.lsq import cholqr  # noqa: E402

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
M, C, CHECK = int(ARGS[0]) if ARGS else 1_000_000, 129, 2000
EMULATE = "--emulate" in sys.argv


def tile(tm, tn, wm, wn, **more):
    return {"TM": tm, "TN": tn, "WARPS_M": wm, "WARPS_N": wn, "KC": 16, **more}


Q1_SHAPES = [tile(128, 144, 4, 2, STAGES=1), tile(64, 144, 4, 2, STAGES=1), tile(64, 136, 4, 1, KC=8)]
# the Gram: a tile and the rows of a chunk (its last row apart, in cholqr.EDGE_ROWS)
GRAM_WAYS = [(dmma.SHAPE, 2048), (dmma.SHAPE, 1024), (tile(64, 64, 2, 1), 1024), (tile(64, 64, 4, 1), 2048)]


def _median(calls, repeats=10, warmup=2):
    """The median over repeats of the summed device time of the launches calls() makes."""
    times = []
    for i in range(warmup + repeats):
        evs = calls()
        evs[-1].wait()
        if i >= warmup:
            times.append(sum(ev.profile.end - ev.profile.start for ev in evs) * 1e-9)
    return float(np.median(times))


def main():
    device, ctx, queue, _, _ = gb.open_device()
    a, r, abuf, _, rbuf = product_inputs(ctx, M, C, seed=1, diagonal=10.0)
    out = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, a.nbytes)
    expect = a[:CHECK] @ r
    print(f"{device.name}: Q1 of {M:,} x {C} reading A as stored", flush=True)
    edge = C % dmma.SHAPE["TN"]

    def q1(shape, main=C, edge_shape=None):
        def calls():
            evs = [dmma.product(queue, shape, abuf, 0, C, rbuf, 0, C, out, 0, C, M, main, 0, C, a_trans=True, emulate=EMULATE)]
            if edge_shape:
                evs.append(dmma.product(queue, edge_shape, abuf, 0, C, rbuf, main, C, out, main, C, M, C - main,
                                        0, C, a_trans=True, emulate=EMULATE))
            return evs
        t = _median(calls)
        got = np.empty((CHECK, C))
        cl.enqueue_copy(queue, got, out)
        return t, np.max(np.abs(got - expect)) / np.max(np.abs(expect))

    for name, args in [("64x64 + edge (today)", (dmma.SHAPE, C - edge, cholqr.EDGE_COLS))] + [
            (dmma.label(s) + (f", ACROSS={s['ACROSS']}" if "ACROSS" in s else ""), (s,)) for s in Q1_SHAPES]:
        try:
            t, err = q1(*args)
            print(f"  {name:58s} {t * 1e3:7.3f} ms  error {err:.1e}", flush=True)
        except Exception as exc:  # a shape the device cannot hold: say so and go on
            print(f"  {name}: {exc}", flush=True)

    print(f"Gram of {M:,} x {C}, the main triangle and its last row apart", flush=True)
    main = C - edge

    def gram(shape, chunk):
        chunks = -(-M // chunk)
        part = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 8 * chunks * C * C)

        def calls():
            return [dmma.product(queue, shape, abuf, 0, C, abuf, 0, C, part, 0, C, main, main, 0, M,
                                 k_chunk=chunk, c_stride=C * C, triangle=True, emulate=EMULATE),
                    dmma.product(queue, cholqr.EDGE_ROWS, abuf, main, C, abuf, 0, C, part, main * C, C,
                                 edge, C, 0, M, k_chunk=chunk, c_stride=C * C, emulate=EMULATE)]
        t = _median(calls)
        # the first chunk's sums, against its rows' own
        got = np.empty((C, C))
        cl.enqueue_copy(queue, got, part)
        low = np.tril_indices(C)
        ref = a[:chunk].T @ a[:chunk]
        return t, chunks, np.max(np.abs(got[low] - ref[low])) / np.max(np.abs(ref))

    for shape, chunk in GRAM_WAYS:
        name = dmma.label(shape)
        try:
            t, chunks, err = gram(shape, chunk)
            print(f"  {name:62s} chunks of {chunk:5d} rows ({chunks:4d}) {t * 1e3:7.3f} ms  "
                  f"error {err:.1e}", flush=True)
        except Exception as exc:  # a shape the device cannot hold: say so and go on
            print(f"  {name}: {exc}", flush=True)


if __name__ == "__main__":
    main()
