"""Nsight Compute's view of part 6.3's wgmma product (gpubook.wgmma.Gram), on an NVIDIA GPU host.

ncu does not see OpenCL kernels, so this replays wgmma_gram through the CUDA driver from
the very PTX the book runs (Gram.ptx, rewritten for sm_90a, made loadable by
gpubook.counters.loadable_ptx) on X' of 131,072 x 4,096 standard normal floats, and
prints the replay's time (the median of 5 after 2). Under ncu, ONCE=1 launches it once:

    PYOPENCL_CTX=0 python3 tools/profile_wgmma_gram.py [--mode 3xtf32] [--flush-rows R]
    ONCE=1 ncu --set full --page raw --csv -k wgmma_gram -c 1 \\
        python3 tools/profile_wgmma_gram.py > ncu.csv

On an H200 (2026-11-28) this gave the counts in tools/probe_wgmma_gram.py's docstring:
instructions a warp a chunk (smsp__inst_executed.sum over 528 work-groups x 8 warps x
16,384 chunks) and the tensor pipe's busy share (sm__pipe_tensor_cycles_active)."""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 2)[0])
from gpubook import counters, ptx_probe, wgmma  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", default="3xtf32", choices=list(wgmma.GRAM_MODES))
    parser.add_argument("--flush-rows", type=int, help="default: the mode's own")
    args = parser.parse_args()
    opened = ptx_probe.open_nvidia()
    if opened is None:
        return 0
    _, ctx, queue = opened
    import cupy

    gram = wgmma.Gram(ctx, queue, args.mode, flush_rows=args.flush_rows)
    m, n = 131_072, 4_096
    tiles = gram.tile_list(n)
    ptx, _ = counters.loadable_ptx(gram.ptx, "wgmma_gram", [len(tiles)], 1, [])
    module = cupy.cuda.function.Module()
    module.load(ptx.encode() + b"\0")
    fn = module.get_function("wgmma_gram")
    xt = cupy.random.standard_normal(m * n, dtype=cupy.float32)
    c = cupy.zeros(n * n, cupy.float32)
    launch = ((len(tiles), 1, 1), (gram.lanes, 1, 1),
              [xt, np.int32(m), np.int32(n), cupy.asarray(tiles), c, np.int32(n), np.int32(1)])
    if os.environ.get("ONCE"):
        fn(*launch)
        cupy.cuda.Device().synchronize()
        return 0
    start, end, ms = cupy.cuda.Event(), cupy.cuda.Event(), []
    for _ in range(7):
        start.record()
        fn(*launch)
        end.record()
        end.synchronize()
        ms.append(cupy.cuda.get_elapsed_time(start, end))
    print(f"{args.mode} product replayed through CUDA: {np.median(ms[2:]):.2f} ms, a flush every "
          f"{gram.flush:,} rows, shape {gram.shape}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
