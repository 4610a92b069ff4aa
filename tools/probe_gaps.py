"""Where CholeskyQR2's device clock goes beyond its kernels: the idle time
before each launch, summed by the kernel launched, and how long the host took
to enqueue the whole step. On the GPU host:

    PYOPENCL_CTX=0 python3 tools/probe_gaps.py [m cols] ...

The device idles before a launch when the host has not enqueued it yet (the
host's enqueueing is slower than the kernels before it) or when the driver
holds the launch back."""
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import gpubook as gb  # noqa: E402
from gpubook.chapters import lsq  # noqa: E402
from gpubook.chapters.lsq import cholqr  # noqa: E402


def probe(ctx, queue, m, cols, mma, repeats=3):
    x, y = lsq.make_problem(m, cols - 1)
    a = np.column_stack([x, y])
    cq = cholqr.CholeskyQR2(ctx, queue, cols, mma=mma)
    buf = cq.upload(a)
    for rep in range(repeats + 1):
        queue.finish()
        trace = []
        t0 = time.perf_counter()
        cq.enqueue(buf, m, trace)
        t1 = time.perf_counter()
        cq.settle(buf, m, trace)
        queue.finish()
        t2 = time.perf_counter()
    span = (trace[-1][1].profile.end - trace[0][1].profile.start) * 1e-9
    busy = sum(gb.event_seconds(ev) for _, ev in trace)
    gaps = {}
    for (_, prev), (name, ev) in zip(trace, trace[1:]):
        gaps[name] = gaps.get(name, 0.0) + max(0, ev.profile.start - prev.profile.end) * 1e-9
    first_start = trace[0][1].profile.start
    # when the host had enqueued each launch against when it started, in ms from the first start
    print(f"{m:,} x {cols} {'DMMA' if mma else 'FMA'}: {len(trace)} launches; enqueue returned after "
          f"{(t1 - t0) * 1e3:.1f} ms, wall {(t2 - t0) * 1e3:.1f} ms; span {span * 1e3:.2f} ms, kernels "
          f"{busy * 1e3:.2f} ms, idle {(span - busy) * 1e3:.2f} ms; host per launch "
          f"{(t1 - t0) / len(trace) * 1e6:.1f} us", flush=True)
    print("    idle before: " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in
                                          sorted(gaps.items(), key=lambda kv: -kv[1])[:6]))
    queued = [(ev.profile.queued - first_start) * 1e-6 for _, ev in trace]
    started = [(ev.profile.start - first_start) * 1e-6 for _, ev in trace]
    submitted = [(ev.profile.submit - first_start) * 1e-6 for _, ev in trace]
    late = sum(1 for q, s in zip(queued, started) if s - q < 0.02)
    held = sum(s - u for u, s in zip(submitted, started) if s - u > 0.05)
    print(f"    launches that started within 20 us of being queued (the device waited for the host): "
          f"{late} of {len(trace)}; submit to start over 50 us: {held:.2f} ms in all; queued to submit "
          f"{sum(u - q for q, u in zip(queued, submitted)):.2f} ms in all", flush=True)


def flushing(queue):
    """DeviceCholesky with the queue flushed after every block."""
    block = cholqr.DeviceCholesky._block

    def _block(self, *args):
        block(self, *args)
        queue.flush()
    cholqr.DeviceCholesky._block = _block
    return block


def main():
    args = [int(v) for v in sys.argv[1:]] or [25_000, 5_001, 1_000_000, 129]
    device, ctx, queue, _, _ = gb.open_device()
    from gpubook import tensor
    kinds = (False, True) if tensor.available(device)[0] else (False,)
    shapes = list(zip(args[::2], args[1::2]))
    for m, cols in shapes:
        for mma in kinds:
            probe(ctx, queue, m, cols, mma)
    print("--- the queue flushed after every block of the Cholesky")
    block = flushing(queue)
    for m, cols in shapes:
        probe(ctx, queue, m, cols, kinds[-1])
    cholqr.DeviceCholesky._block = block
    try:
        import cupy
        _ = float(cupy.ones(4).sum())
    except Exception as err:  # noqa: BLE001
        print(f"no CuPy: {err}")
        return
    print("--- with a CUDA context (CuPy) in this process")
    for m, cols in shapes:
        probe(ctx, queue, m, cols, kinds[-1])


if __name__ == "__main__":
    main()
