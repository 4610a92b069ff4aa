"""Q1 = A R^-1 alone on the FP64 tensor cores, for the tall case (1,000,000 x 129):
from a transposed copy of A (with the transpose's own time), and reading A as
stored with 4, 8 or 16 neighbouring lanes along a row (dmma_tiles.cl's ACROSS), in
chunks of 16 or 32 rows; each the median of 10 by the device's events.

    PYOPENCL_CTX=0 python3 tools/probe_q1_across.py"""
import sys

import numpy as np
import pyopencl as cl

sys.path.insert(0, __file__.rsplit("/", 2)[0])
sys.path.insert(0, __file__.rsplit("/", 1)[0])
import gpubook as gb  # noqa: E402
from sweep_dmma import product_inputs  # noqa: E402
from gpubook import dmma  # noqa: E402
from gpubook.timing import time_events  # noqa: E402

M, C = 1_000_000, 129
device, ctx, queue, _, _ = gb.open_device()
a, r, abuf, atbuf, rbuf = product_inputs(ctx, M, C, seed=1, diagonal=10.0)
out = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, a.nbytes)
expect = a[:2000] @ r


def run(shape, across):
    def go():
        src, ld = (abuf, C) if across else (atbuf, M)
        return dmma.product(queue, shape, src, 0, ld, rbuf, 0, C, out, 0, C, M, 128, 0, C, a_trans=across)
    t = time_events(go, repeats=10, warmup=2)
    got = np.empty((2000, C))
    cl.enqueue_copy(queue, got, out)
    err = np.max(np.abs(got[:, :128] - expect[:, :128])) / np.max(np.abs(expect))
    return t.median, err


base = dict(dmma.SHAPE)
print(f"{device.name}: Q1 of {M:,} x {C} (its first 128 columns, K = {C})")
for name, shape, across in [("transposed copy", base, False)] + [
        (f"across, ACROSS={n}, KC={kc}", {**base, "ACROSS": n, "KC": kc, **({"STAGES": 1} if kc > 16 else {})}, True)
        for kc in (16, 32) for n in (4, 8, 16)]:
    try:
        t, err = run(shape, across)
        print(f"  {name:28s} {t * 1e3:7.3f} ms  error {err:.1e}", flush=True)
    except Exception as exc:
        print(f"  {name}: {exc}", flush=True)
