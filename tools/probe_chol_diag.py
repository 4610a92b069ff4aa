"""Where chol_diag's time goes (kernels/lsq/7_cholesky.cl, the diagonal block of
chapter 8's Cholesky factorisation): work-item 0's %clock64 at each phase (the
block loaded, each column's step, L11 read back, the inverted sub-blocks M), for
one block of CB = 64 columns, at each work-group size, with the launch's time
by the device's events. NVIDIA only (the stamps are inline PTX).

    PYOPENCL_CTX=0 python3 tools/probe_chol_diag.py [lsq/OTHER.cl ...] [--steps]

(each file named after the script: another version of 7_cholesky.cl, timed the same way;
each with the block in local memory, DIAG_REGS=0, and in registers, DIAG_REGS=1)"""
import sys

import numpy as np
import pyopencl as cl

sys.path.insert(0, __file__.rsplit("/", 2)[0])
import gpubook as gb  # noqa: E402
from gpubook.kernels import kernel  # noqa: E402

CB = 64


def main():
    device, ctx, queue, _, _ = gb.open_device()
    a = np.random.default_rng(1).standard_normal((2 * CB, CB))
    g0 = a.T @ a
    mf = cl.mem_flags
    g = cl.Buffer(ctx, mf.READ_WRITE, g0.nbytes)
    diag, flag = cl.Buffer(ctx, mf.READ_WRITE, 8 * CB), cl.Buffer(ctx, mf.READ_WRITE, 4)
    linv = cl.Buffer(ctx, mf.READ_WRITE, 8 * CB * CB)
    stamps = cl.Buffer(ctx, mf.READ_WRITE, 8 * (CB + 4))
    i32, nv = np.int32, int("NVIDIA" in device.platform.name)
    print(f"{device.name}: chol_diag on one {CB} x {CB} block", flush=True)
    for path, wg, regs in [(p, w, r) for p in ["lsq/7_cholesky.cl"] + [a for a in sys.argv[1:] if not a.startswith("--")] for w in (256, 512, 1024)
                           for r in (0, 1)]:
        runs = {}
        for stamped in (0, 1):
            kern = kernel(ctx, ("device/nv_clock.cl", path) if stamped else path,
                          "chol_diag", {"CB": CB, "WG": wg, "STAMPS": stamped, "NV_PTX": nv,
                                       "DIAG_REGS": regs})
            times = []
            for rep in range(12):
                cl.enqueue_copy(queue, g, g0)
                args = (g, i32(CB), i32(0), i32(CB), diag, flag, i32(1), linv) + ((stamps,) if stamped else ())
                ev = kern(queue, (wg,), (wg,), *args)
                ev.wait()
                if rep >= 2:
                    times.append(gb.event_seconds(ev))
            runs[stamped] = float(np.median(times))
        out = np.empty((CB, CB))
        cl.enqueue_copy(queue, out, g)
        err = np.max(np.abs(np.tril(out) - np.linalg.cholesky(g0))) / np.max(np.abs(g0))
        st = np.empty(CB + 4, np.uint64)
        cl.enqueue_copy(queue, st, stamps)
        d = np.diff(st.astype(np.int64))
        steps = d[1:CB + 1]
        res = gb.resources.kernel_resources(kernel(ctx, path, "chol_diag", {"CB": CB, "WG": wg, "STAMPS": 0,
                                                                             "NV_PTX": nv, "DIAG_REGS": regs}),
                                            device)
        print(f"    registers {res['registers']}, stack {res['stack_bytes']}, spills {res['spill_stores']}")
        print(f"  {path} WG {wg:4d}{' registers' if regs else ' local    '}: {runs[0] * 1e6:6.1f} us ({runs[1] * 1e6:6.1f} us stamped), error {err:.1e}; "
              f"cycles: load {d[0]}, {CB} steps {steps.sum()} (first {steps[0]}, middle {steps[CB // 2]}, "
              f"last {steps[-1]}), read back {d[CB + 1]}, M {d[CB + 2]}, all {int(st[-1] - st[0])}", flush=True)
        if "--steps" in sys.argv:
            print("    each step's cycles: " + " ".join(str(int(c)) for c in steps), flush=True)


if __name__ == "__main__":
    main()
