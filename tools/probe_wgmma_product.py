"""One Hopper wgmma product from an OpenCL program, checked against NumPy: the step
after gpubook.ptx_probe showed that the driver takes sm_90a PTX as a program binary.
kernels/tensor/wgmma_probe.cl is built as OpenCL C (its markers are PTX comments),
its PTX rewritten by ptx_probe.with_wgmma (target sm_90a, the markers made
fence.proxy.async and one m64n8k8 TF32 wgmma.mma_async), and the result handed to the
driver as a program binary, then run on one warp group of 128 work-items.

A (64 x 8) and B (8 x 8) hold small integers, exact in TF32, so D = A B' is exact.
Both are K-major (rows of 8 terms) in local memory, in core matrices of 8 rows x 16
bytes: along K 128 bytes apart, along M (or N) 256 bytes apart. The descriptors are
tried with those offsets as (leading, stride) byte offsets and swapped; each try's D
is read back in mma.sync's fragment layout (work-item t of warp w = t / 32, lane l:
rows 16 w + l / 4 and + 8, columns 2 (l % 4) and + 1) and compared with NumPy's.

    PYOPENCL_CTX=0 python3 tools/probe_wgmma_product.py [--ptx DIR]

(--ptx DIR: write the compiler's PTX and the rewritten PTX there.) On a device that is
not NVIDIA's Hopper it says so in one line."""
import argparse
import pathlib
import sys

import numpy as np
import pyopencl as cl

sys.path.insert(0, __file__.rsplit("/", 2)[0])
import gpubook as gb  # noqa: E402
from gpubook import ptx_probe  # noqa: E402
from gpubook.kernels import build  # noqa: E402

K_STEP, MN_STEP = 128, 256        # bytes between core matrices along K, and along M or N


def image(x):
    """x (rows x 8, K-major) as local memory holds it: element (r, k) at float
    (r % 8) * 4 + k % 4 + (k // 4) * K_STEP / 4 + (r // 8) * MN_STEP / 4."""
    rows = x.shape[0]
    out = np.zeros(rows // 8 * MN_STEP // 4, np.float32)
    for r in range(rows):
        for k in range(8):
            out[(r % 8) * 4 + k % 4 + (k // 4) * K_STEP // 4 + (r // 8) * MN_STEP // 4] = x[r, k]
    return out


def fragment(d):
    """D (64 x 8) from the 128 work-items' 4 values each, in mma.sync's layout."""
    out = np.full((64, 8), np.nan, np.float32)
    for t in range(128):
        w, lane = divmod(t, 32)
        for i in range(4):
            out[16 * w + lane // 4 + 8 * (i // 2), 2 * (lane % 4) + i % 2] = d[4 * t + i]
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ptx", type=pathlib.Path)
    args = parser.parse_args()
    device, ctx, queue, _, _ = gb.open_device()
    if not ptx_probe.is_nvidia(device):
        print(f"{device.name.strip()} is not an NVIDIA device: wgmma does not apply")
        return 0
    program = build(ctx, "tensor/wgmma_probe.cl")
    ptx = program.binaries[0].decode("utf-8", "replace")
    if "sm_90" not in ptx_probe.ptx_target(program.binaries[0]):
        print(f"{device.name.strip()}: the PTX targets {ptx_probe.ptx_target(program.binaries[0])}, not Hopper's")
        return 0
    text = ptx_probe.with_wgmma(ptx)
    if args.ptx:
        args.ptx.mkdir(parents=True, exist_ok=True)
        (args.ptx / "wgmma_probe.ptx").write_text(ptx.rstrip("\x00"))
        (args.ptx / "wgmma_probe_sm90a.ptx").write_text(text)
    marks = [ln.strip() for ln in text.splitlines() if "wgmma" in ln or "fence.proxy" in ln]
    print(f"{device.name.strip()}: rewritten PTX lines:\n  " + "\n  ".join(marks), flush=True)
    try:
        prog = cl.Program(ctx, [device], [text.encode() + b"\x00"]).build(devices=[device])
    except (cl.RuntimeError, cl.LogicError) as err:
        print(f"the driver refused the rewritten PTX: {ptx_probe.first_error(str(err))}")
        return 1
    rng = np.random.default_rng(1)
    a = rng.integers(-4, 5, (64, 8)).astype(np.float32)
    b = rng.integers(-4, 5, (8, 8)).astype(np.float32)
    want = a.astype(np.float64) @ b.T.astype(np.float64)
    mf = cl.mem_flags
    bufs = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=image(x)) for x in (a, b)]
    d_buf = cl.Buffer(ctx, mf.READ_WRITE, 4 * 512)
    info = cl.Buffer(ctx, mf.READ_WRITE, 16)
    for lbo, sbo in ((K_STEP, MN_STEP), (MN_STEP, K_STEP)):
        cl.enqueue_fill_buffer(queue, d_buf, np.float32(np.nan), 0, 4 * 512)
        try:
            prog.wgmma_probe(queue, (128,), (128,), *bufs, d_buf, info, np.uint32(lbo), np.uint32(sbo),
                             np.uint32(0))
            d, addr = np.empty(512, np.float32), np.empty(2, np.uint64)
            cl.enqueue_copy(queue, d, d_buf)
            cl.enqueue_copy(queue, addr, info)
        except (cl.RuntimeError, cl.LogicError) as err:
            print(f"  leading {lbo} B, stride {sbo} B: the launch failed: {err}")
            return 1
        got = fragment(d)
        err = np.nanmax(np.abs(got - want)) if np.isfinite(got).any() else np.inf
        print(f"  leading {lbo} B, stride {sbo} B: local addresses {int(addr[0]):#x}, {int(addr[1]):#x}; "
              f"largest error against NumPy {err:g} (D's largest entry {np.abs(want).max():g})", flush=True)
        if err != 0:
            print("    work-item 0-3's values: " + " ".join(f"{v:g}" for v in d[:16]))
            print("    NumPy's D, rows 0, 1, 8:\n" + "\n".join(f"      {want[r]}" for r in (0, 1, 8)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
