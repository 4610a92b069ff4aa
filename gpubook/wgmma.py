"""Hopper's warp-group MMA (wgmma) from OpenCL, through the PTX (kernels/tensor/
wgmma_xtx.cl): NVIDIA's OpenCL compiler refuses wgmma, an sm_90a instruction, but
passes PTX comments in inline asm through with their operands' registers filled in.
`rewrite` turns those markers into the instructions and sets the target to sm_90a;
the driver then takes the text as a program binary (gpubook.ptx_probe found that
door, and one m64n8k8 product through it equal to NumPy's on an H200, 2026-11-28).

sync=True waits for each wgmma before the next (wgmma.fence, the product, commit,
wait): the accumulators are never in flight while the compiler's own instructions
run. sync=False issues a chunk's products back to back after one fence and waits once
at the chunk's end, as the instruction is meant to run; it is only right where the
compiler put nothing that touches the accumulators between the markers, which the
probe checks against NumPy.

On an H200 (2026-11-28, tools/probe_wgmma_xtx.py) every variant tried was exact
against NumPy on small integers; the whole 4,096 x 4,096 C of 131,072 rows took 47.4
ms (93 TFLOP/s) in 64 x 128 tiles with the copy into local memory four rows at a time,
the same whether each wgmma was waited for or not: the copy sets the pace. The copy
in 4 x 4 blocks (VEC=2) and `lower` are checked on PoCL, not yet timed on a GPU."""
import numpy as np
import pyopencl as cl

from . import launch
from .kernels import build

PATH = "tensor/wgmma_xtx.cl"
WARP_GROUP = 128


def to_sm90a(ptx):
    """NVIDIA's PTX (text, its NUL dropped) with its `.target sm_90` line set to sm_90a."""
    ptx = ptx.rstrip("\x00")
    target = next((ln.strip() for ln in ptx.splitlines() if ln.strip().startswith(".target")), "")
    return ptx.replace(target, target.replace("sm_90", "sm_90a", 1), 1) if target else ptx


def rewrite(ptx, sync=True):
    """PTX with its markers made instructions, for sm_90a (wgmma_xtx.cl's, and
    wgmma_probe.cl's): WG_MMA's shape is m64nNk8 with N twice its count of
    accumulator registers (4 in the probe, 16 in the tiles)."""
    out = []
    for ln in to_sm90a(ptx).splitlines():
        words = ln.split()
        mark = words[1] if words[:1] == ["//"] and len(words) > 1 else ""
        if mark == "WG_FENCE_PROXY":
            out.append("\tfence.proxy.async.shared::cta;")
        elif mark == "WG_FENCE":
            out += [] if sync else ["\twgmma.fence.sync.aligned;"]
        elif mark == "WG_COMMIT_WAIT":
            out += [] if sync else ["\twgmma.commit_group.sync.aligned;", "\twgmma.wait_group.sync.aligned 0;"]
        elif mark == "WG_MMA":
            d, (a, b, z) = words[2:-3], words[-3:]
            if len(words) < 9 or len(d) % 4:
                raise ValueError(f"a WG_MMA marker needs 4, 8, ... accumulators and 3 more operands, "
                                 f"not {len(words) - 2}: {ln.strip()}")
            mma = (f"\twgmma.mma_async.sync.aligned.m64n{2 * len(d)}k8.f32.tf32.tf32 {{{', '.join(d)}}}, "
                   f"{a}, {b}, p, 1, 1;")
            out += ["\t{", "\t.reg .pred p;", f"\tsetp.ne.b32 p, {z}, 0;"]
            out += (["\twgmma.fence.sync.aligned;", mma, "\twgmma.commit_group.sync.aligned;",
                     "\twgmma.wait_group.sync.aligned 0;"] if sync else [mma])
            out.append("\t}")
        else:
            out.append(ln)
    return "\n".join(out) + "\n"


def program(ctx, device, tn=128, kc=32, sync=True, vec=False, emulate=False):
    """(the built program, its rewritten PTX) for tiles of 64 x tn and chunks of kc rows;
    vec: the copy to local memory four rows at a time (1), or in blocks of 4 x 4 (2)
    (wgmma_xtx.cl's VEC). emulate: the kernel as any device builds it (NV_PTX=0: each
    product computed by the work-items from local memory), and no PTX ('')."""
    if tn % 32 or kc % 8:
        raise ValueError(f"TN ({tn}) must be a multiple of 32 and KC ({kc}) of 8")
    defines = {"TN": tn, "KC": kc, "VEC": int(vec), "NV_PTX": int(not emulate)}
    if emulate:
        return build(ctx, PATH, defines), ""
    ptx = build(ctx, PATH, defines).binaries[0].decode("utf-8", "replace")
    text = rewrite(ptx, sync)
    prog = cl.Program(ctx, [device], [text.encode() + b"\x00"]).build(devices=[device])
    return prog, text


def xtx(queue, prog, x_buf, m, n, c_buf, tn=128, kc=32, lower=False):
    """Launch C = X'X for X (m x n, float32) in x_buf; its event. All n x n entries, or
    with lower=True only the tiles that hold the lower triangle (the others left as
    they were: about half the work)."""
    if m % kc or n % 64 or n % tn:
        raise ValueError(f"m ({m}) must be a multiple of KC ({kc}), n ({n}) of 64 and of TN ({tn})")
    launch.check(queue.device, WARP_GROUP)
    kern = cl.Kernel(prog, "wgmma_xtx")
    return kern(queue, (n // tn * WARP_GROUP, n // 64), (WARP_GROUP, 1), x_buf, np.int32(m), np.int32(n),
                c_buf, np.uint32(0), np.int32(bool(lower)))
