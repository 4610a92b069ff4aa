"""Where the host's time goes while it enqueues one CholeskyQR2 (cProfile of
`enqueue`, after a warm-up run), for the register tiles and, where the device
has them, the FP64 tensor cores. On the GPU host:

    PYOPENCL_CTX=0 python3 tools/profile_enqueue.py [m cols]"""
import cProfile
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import gpubook as gb  # noqa: E402
import gpubook.dmma  # noqa: E402,F401
import gpubook.tiles  # noqa: E402,F401
from gpubook import tensor  # noqa: E402
from gpubook.chapters.lsq import cholqr  # noqa: E402


def per_launch(queue, cq, n=400):
    """Host microseconds per launch of one small product: through Products (as
    CholeskyQR2 launches), through the kernel's invoker with the arguments set
    each time, and with enqueue_nd_range_kernel after set_args."""
    import pyopencl as cl
    shape = cq.chol.update_shape
    g = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 8 * 256 * 256)
    args = (g, 0, 256, g, 0, 256, g, 0, 256, 64, 64, 0, 64)
    out = {}
    queue.finish()
    t0 = time.perf_counter()
    for _ in range(n):
        ev = cq.products(queue, shape, *args, alpha=-1.0, accumulate=True)
    ev.wait()
    out["Products"] = (time.perf_counter() - t0) / n
    kern = (gb.dmma.get_kernel(queue.context, queue.device, shape) if "WARPS_M" in shape
            else gb.tiles.launch_kernel(queue.context, queue.device, shape, np.float64))
    i32 = np.int32
    full = (g, i32(0), i32(256), g, i32(0), i32(256), g, i32(0), i32(256), i32(64), i32(64), i32(0), i32(64),
            i32(64), i32(0), i32(1), np.float64(-1.0), i32(1))
    nt = gb.dmma.work_items(shape) if "WARPS_M" in shape else gb.tiles.work_items(shape)
    t0 = time.perf_counter()
    for _ in range(n):
        ev = kern(queue, (nt, 1), (nt, 1), *full)
    ev.wait()
    out["invoker"] = (time.perf_counter() - t0) / n
    kern.set_args(*full)
    t0 = time.perf_counter()
    for _ in range(n):
        ev = cl.enqueue_nd_range_kernel(queue, kern, (nt, 1), (nt, 1))
    ev.wait()
    out["enqueue_nd_range_kernel"] = (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    for _ in range(n):
        _ = queue.device
    out["queue.device"] = (time.perf_counter() - t0) / n
    print("host us per launch of a small product: " + ", ".join(f"{k} {v * 1e6:.1f}" for k, v in out.items()),
          flush=True)


def main():
    m, cols = [int(v) for v in sys.argv[1:3]] if len(sys.argv) > 2 else (4_000, 5_001)
    device, ctx, queue, _, _ = gb.open_device()
    a = np.random.default_rng(0).standard_normal((m + cols, cols))
    for mma in (False, True) if tensor.available(device)[0] else (False,):
        cq = cholqr.CholeskyQR2(ctx, queue, cols, mma=mma)
        buf = cq.upload(a)
        cq.enqueue(buf, len(a))
        queue.finish()
        trace = []
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        cq.enqueue(buf, len(a), trace)
        prof.disable()
        t1 = time.perf_counter()
        queue.finish()
        print(f"--- {'DMMA' if mma else 'FMA'}: {len(trace)} launches enqueued in {(t1 - t0) * 1e3:.1f} ms "
              f"({(t1 - t0) / len(trace) * 1e6:.1f} us each, under the profiler)", flush=True)
        pstats.Stats(prof).sort_stats("tottime").print_stats(16)
        per_launch(queue, cq)
        buf.release()


if __name__ == "__main__":
    main()
