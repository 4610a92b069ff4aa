"""C = X'X on Hopper's wgmma fed by cp.async (gpubook.wgmma.Gram, kernels/tensor/
wgmma_gram.cl), each shape of gpubook.wgmma.GRAM_SHAPES in each mode that fits its
local memory: first on X of 256 x 512 small integers (exact in TF32 and in the float32
sums, so its C must equal NumPy's), then, if equal, on 131,072 x 4,096 standard normal
floats (part 6.3's size): the transpose and the product timed apart by the device's
events (the median of 5), and 64 rows of C against float64 (the chapter's error: the
largest difference over the largest entry). With --ptx DIR the rewritten PTX of each
build is kept, for `ptxas -arch=sm_90a -v`.

On an H200 (2026-11-28), the product alone (X' already written), every figure below
with a flush every 2,048 rows (3xTF32's default is now 1,024: 25.5-25.8 ms, part 6.3
and its Going further; --flush-rows 2048 gives the older): 128 x 128 tiles of two
warp groups, chunks of 16 rows, three stages, 9.97-10.37 ms for one-pass TF32 (the
default); chunks of 8 in six stages 12.4 ms; 128 x 256 tiles 18.1 ms (one work-group a
compute unit: too few bytes in flight); 64 x 128 tiles 14.2 ms. 3xTF32 (four stages of
8 rows, two of lo parts) 27.6-28.0 ms; with A from registers and three stages of B's lo
parts (the default) 25.2-25.4 ms, at 128 registers (ptxas: "wgmma.mma_async
instructions are serialized due to insufficient register resources"). Tried on it and
dropped: C's lines prefetched into L2 before each flush (25.1-31.7 ms), each flush's
additions as red.global.add (33.2: past 128 registers, one work-group a compute unit),
256 x 128 tiles (49.8), 128 x 64 (33.7), only A's lo parts from registers (116
registers, no serialized wgmma, 25.6-26.0 ms), flushes half a flush apart in the two
work-groups of a compute unit (25.8-26.1 against 25.8 the same run), a flush every
4,096 rows (24.4 ms, but off float64 by 7.4e-5 against 3.8e-5). Before A took two
register sets in turn, a run's C differed from the one before it in one warp's 2,048
entries: the next chunk's fragment overwrote registers that a running wgmma still read.
Before the chunks between flushes became a loop of their own, ptxas waited for every
product at each loop end and WAIT=1 lost to WAIT=0.
Copying X as stored and transposing each chunk in local memory instead of writing X'
first took 24.5 ms. On an H200 (2026-11-28, later) against 25.2-25.9 ms for the
default: each float of X copied by a 4-byte cp.async straight to its place in the
stage (no X' at all) took 51.6 ms at 164 registers (one work-group a compute unit) and
44.7 ms held to 128 by .maxnreg (40 bytes spilled); cp.async's L2::256B prefetch took
32 ms; float4 loads in tf32_transpose took it from 1.26 to 1.17-1.19 ms. L2 eviction
hints took 32-34 ms at 164 registers; held to 128 (REGS), C's flushes with evict_last
(L2HINT=1, now the default) took 25.7 ms at a flush every 1,024 rows against 26.1-26.3,
and X''s copies with evict_first as well 25.4-25.7 (not kept: within the spread).
On an H200 (2026-11-28, a third session), the copies' and splits' loops over a stage's
pieces given a count the compiler knows took the product from 25.95 to 23.40 ms (one-pass
TF32: 10.26 and 10.48); then C's lines prefetched into L1 one, three or eight chunks
before each flush took 27.3-28.1 ms (ptxas serialized the wgmma again: 114 registers),
and five stages with two of lo parts (48 KB) 24.06. On another H200 the same day, each
chunk's copy issued after the lo split's proxy fence instead of before it took 22.87 ms
against 24.27 (21.87 against 23.50 at a flush every 2,048 rows). On a third, each chunk
copied by two cp.async.bulk of one work-item completing on an mbarrier (BULK=1, now 3xTF32's
default) took 19.58 ms against 21.88, and 23.59 with the copy after the lo split: the
proxy fence does not wait for bulk copies. One-pass TF32 with BULK: 10.31 ms (chunks of 8,
five stages, one product in flight), 11.58 (none), 13.23 (chunks of 16, two stages),
against 9.74 for its default, whose three stages of 16 rows leave no room for mbarriers.
Nsight Compute on the bulk copies (tools/profile_wgmma_gram.py: the product replayed
through CUDA from the same PTX, at the profiler's clock): 99 instructions a warp a chunk
and the tensor pipe busy 78% of the time, against 114 and 63% with cp.async (before its
copy moved past the fence); dropping the commit_group each chunk still issued (no
cp.async left to close) changed nothing: 20.74 against 20.74-20.82 ms.
These products run at the card's power limit: on an H200 (2026-11-28, a fourth session)
nvidia-smi counted 3.55 s at the software power cap over 5 s of 3xTF32 products, whose
clock as the work-groups stamped it (Gram(clocks=True)) read 1.52-1.60 GHz (one-pass
TF32: 1.60-1.72), where chapter 0's FMA loop held 1.98. The first runs after an idle
spell, before the cap comes in, took 18.9-19.5 ms against 20.5-21.6 after: compare
shapes in one call, each after the same warm-up.

    PYOPENCL_CTX=0 python3 tools/probe_wgmma_gram.py [--ptx DIR] [--only N ...]
        [--shape JSON ...] [--flush-rows R]"""
import argparse
import json
import pathlib
import sys

import numpy as np
import pyopencl as cl

sys.path.insert(0, __file__.rsplit("/", 2)[0])
import gpubook as gb  # noqa: E402
from gpubook import ptx_probe, wgmma  # noqa: E402


def label(shape, mode):
    tm = 64 * shape["WGS"] * shape["MW"]
    return (f"{mode:8s} {tm} x {shape['TN']}, {shape['WGS']} warp group(s), KC {shape['KC']}, "
            f"{shape['STAGES']} stages, {shape['WAIT']} in flight"
            + (", A from registers" if shape.get("AREG") else "")
            + (f", {shape['LOS']} lo stages" if "LOS" in shape else "")
            + "".join(f", {k} {v}" for k, v in shape.items() if k in ("L2HINT", "REGS", "BULK")))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ptx", type=pathlib.Path)
    parser.add_argument("--only", type=int, nargs="*", help="indices into GRAM_SHAPES")
    parser.add_argument("--modes", nargs="*", default=list(wgmma.GRAM_MODES))
    parser.add_argument("--sync", action="store_true", help="wait for each wgmma")
    parser.add_argument("--shape", type=json.loads, action="append", default=[],
                        help="a shape of its own, as JSON (instead of --only's)")
    parser.add_argument("--flush-rows", type=int, help="default: the mode's own")
    args = parser.parse_args()
    opened = ptx_probe.open_nvidia()
    if opened is None:
        return 0
    device, ctx, queue = opened
    mf = cl.mem_flags
    small = np.random.default_rng(1).integers(-2, 3, (256, 512)).astype(np.float32)
    want = small.astype(np.float64).T @ small
    low = np.tril(np.ones(want.shape, bool))
    m, n = 131_072, 4_096
    big = np.random.default_rng(2).standard_normal((m, n), dtype=np.float32)
    rows = np.random.default_rng(3).choice(n, 64, replace=False)
    ref = big[:, rows].astype(np.float64).T @ big.astype(np.float64)      # C's rows `rows`
    scale = float(np.max(np.abs(ref)))
    xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=big)
    cb = cl.Buffer(ctx, mf.READ_WRITE, 4 * n * n)
    copy = cl.Buffer(ctx, mf.READ_WRITE, big.nbytes)
    copies = []
    for _ in range(5):
        ev = cl.enqueue_copy(queue, copy, xb)
        ev.wait()
        copies.append(gb.event_seconds(ev))
    del copy
    print(f"{device.name.strip()}: X'X on wgmma, {m:,} x {n:,}; X copied in {np.median(copies) * 1e3:.2f} ms "
          f"(the median of 5)", flush=True)
    shapes = args.shape or ([wgmma.GRAM_SHAPES[i] for i in args.only] if args.only else wgmma.GRAM_SHAPES)
    for shape in shapes:
        for mode in args.modes:
            if (shape.get("AREG") or "LOS" in shape) and mode != "3xtf32":
                continue
            name = label(shape, mode)
            if wgmma.gram_local_bytes(shape, mode) > wgmma.LOCAL_LIMIT:
                print(f"  {name}: needs {wgmma.gram_local_bytes(shape, mode):,} B of local memory", flush=True)
                continue
            try:
                gram = wgmma.Gram(ctx, queue, mode, shape, sync=args.sync, flush_rows=args.flush_rows)
            except (cl.RuntimeError, cl.LogicError, gb.KernelBuildError, ValueError) as err:
                print(f"  {name}: build failed: {ptx_probe.first_error(str(err))}", flush=True)
                continue
            if args.ptx:
                args.ptx.mkdir(parents=True, exist_ok=True)
                keys = ("WGS", "MW", "TN", "KC", "STAGES", "WAIT", "AREG", "LOS", "L2HINT", "REGS",
                        "BULK")
                tag = "_".join(str(shape.get(k, 0)) for k in keys)
                (args.ptx / f"gram_{tag}_{mode}.ptx").write_text(gram.ptx)
            got = gram.product(small)
            err = float(np.max(np.abs(got - want)[low]))
            if err != 0:
                print(f"  {name}: off NumPy by up to {err:g} on the small X", flush=True)
                continue
            times = []
            for rep in range(7):
                evs = gram.enqueue(xb, m, n, cb)
                cl.wait_for_events(evs)
                if rep >= 2:
                    times.append([gb.event_seconds(e) for e in evs])
            tt, tg = np.median(np.array(times), axis=0)
            c = np.empty((n, n), np.float32)
            cl.enqueue_copy(queue, c, cb)
            sub = c[rows]
            keep = np.arange(n)[None, :] <= rows[:, None]
            rel = float(np.max(np.abs(sub - ref)[keep]) / scale)
            flops = 2 * m * n * (n + 1) / 2 * (3 if mode == "3xtf32" else 1)
            print(f"  {name}: exact; transpose {tt * 1e3:.2f} ms, product {tg * 1e3:.2f} ms, "
                  f"together {(tt + tg) * 1e3:.2f} ms ({flops / tg / 1e12:.0f} useful TFLOP/s in the "
                  f"product); off float64 by {rel:.1e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
