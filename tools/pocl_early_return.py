"""The smallest reproduction of the PoCL miscompile that gave TSQR a wrong R.

PoCL 3.0-rc2 (pocl-binary-distribution 3.0, LLVM 14), default work-group method
(loopvec): in a kernel with a uniform early `return` before a barrier, a later
work-item-strided loop `for (e = lid; e < N; e += WG)` runs its body for the
work-items with lid >= N too: WG - N values written past out[N - 1]. Valid
OpenCL C (Oclgrind reports nothing); without the return, or with
POCL_WORK_GROUP_METHOD=loops, nothing is written past it. kernels/lsq/6_tsqr.cl's
tsqr_tree had such a return (an unpaired triangle's copy); it has none now.

    python tools/pocl_early_return.py             # PoCL 3.0: 15 values past out[48]
    python tools/pocl_early_return.py no-return   # 0
    POCL_WORK_GROUP_METHOD=loops python tools/pocl_early_return.py   # 0

The device is PYOPENCL_CTX's (pyopencl's create_some_context), else the first.
"""
import sys

import numpy as np
import pyopencl as cl

SRC = """
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void k(__global const double *in, const int count, __global double *out)
{
    if (get_group_id(0) >= count)         /* uniform; never taken in this launch */
        return;
    __local double p[2 * N];
    for (int e = get_local_id(0); e < 2 * N; e += WG)
        p[e] = in[e];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = get_local_id(0); e < N; e += WG)
        out[e] = p[e];
}
"""
WG, N, GUARD = 64, 49, 1 << 12


def main():
    variant = sys.argv[1] if len(sys.argv) > 1 else "return"
    if variant not in ("return", "no-return"):
        raise SystemExit("usage: python tools/pocl_early_return.py [return|no-return]")
    src = SRC if variant == "return" else SRC.replace("return;", "out[N + GUARD - 1] = 0.0;")
    ctx = cl.create_some_context(interactive=False)
    q = cl.CommandQueue(ctx)
    dev = ctx.devices[0]
    if not dev.double_fp_config:
        raise SystemExit(f"{dev.name.strip()} has no float64")
    prg = cl.Program(ctx, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" + src).build(
        options=[f"-DWG={WG}", f"-DN={N}", f"-DGUARD={GUARD}"])
    mf = cl.mem_flags
    inp = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.arange(2 * N, dtype=np.float64))
    out = cl.Buffer(ctx, mf.READ_WRITE, 8 * (N + GUARD))
    cl.enqueue_fill_buffer(q, out, np.float64(np.nan), 0, 8 * (N + GUARD))
    prg.k(q, (WG,), (WG,), inp, np.int32(1), out)
    host = np.empty(N + GUARD)
    cl.enqueue_copy(q, host, out)
    past = np.flatnonzero(~np.isnan(host[N:N + GUARD - 1]))
    print(f"{dev.platform.version.strip()}, {dev.name.strip()}, {variant}: {past.size} values written "
          f"past out[{N - 1}]" + (f" (out[{N}] .. out[{N + past.max()}])" if past.size else ""))
    return 1 if past.size else 0


if __name__ == "__main__":
    sys.exit(main())
