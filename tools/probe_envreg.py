"""Which %envreg of NVIDIA's OpenCL PTX holds which launch value (a GPU-host probe).

NVIDIA's OpenCL compiler returns PTX (`program.binaries`) whose work-item functions
read driver-set registers %envreg0..31. To replay a kernel through the CUDA driver
(where Nsight Compute sees it), gpubook.counters writes each one as the launch's
value; this probe shows, per built-in, which registers its PTX reads.

    PYOPENCL_CTX=0 python3 tools/probe_envreg.py
"""
import re

import pyopencl as cl

BUILTINS = ["get_global_offset(0)", "get_global_offset(1)", "get_global_offset(2)",
            "get_global_size(0)", "get_global_size(1)", "get_global_size(2)",
            "get_num_groups(0)", "get_num_groups(1)", "get_local_size(0)",
            "get_local_size(1)", "get_enqueued_local_size(0)", "get_work_dim()",
            "get_global_id(0)", "get_global_id(1)", "get_group_id(0)",
            "get_group_id(1)", "get_local_id(0)", "get_global_linear_id()"]


def main():
    ctx = cl.create_some_context(interactive=False)
    dev = ctx.devices[0]
    print(dev.name, dev.version, dev.driver_version)
    for b in BUILTINS:
        src = f"__kernel void k(__global ulong *out) {{ out[0] = (ulong)({b}); }}"
        try:
            ptx = cl.Program(ctx, src).build(options=["-cl-std=CL3.0"]).binaries[0]
        except cl.RuntimeError as err:
            print(f"{b:28s} build failed: {str(err).splitlines()[0]}")
            continue
        text = ptx.decode(errors="replace")
        regs = sorted(set(re.findall(r"%(envreg\d+|nctaid\.\w|ntid\.\w|ctaid\.\w|tid\.\w)",
                                     text)))
        print(f"{b:28s} {' '.join(regs)}")
    src = ("__kernel void k(__global float *out, __local float *a, __local float2 *b, "
           "int n) { a[get_local_id(0)] = n; b[get_local_id(0)] = (float2)(n);"
           " barrier(CLK_LOCAL_MEM_FENCE); out[get_global_id(0)] = a[0] + b[1].y; }")
    ptx = cl.Program(ctx, src).build().binaries[0]
    print("ends with", ptx[-8:])
    print(ptx.decode(errors="replace").rstrip("\0"))


if __name__ == "__main__":
    main()
