"""Which of Hopper's instructions NVIDIA's OpenCL compiler accepts as inline PTX
(part 6.3's tensor cores): wgmma, the warp-group MMA that Hopper's full tensor rate
needs, against instructions it is known or expected to take. Each probe is a kernel
of one instruction (built only, never launched); its row says whether the build
passed, with the `.target` line of the PTX the compiler wrote where it did and the
build log's first error line where it did not. The PTX ISA documents wgmma and
setmaxnreg for sm_90a only, cp.async.bulk for sm_90 and later, mma.sync for sm_80.
tools/probe_wgmma.py runs it from the shell."""
import pyopencl as cl

# name -> (the PTX ISA's target for it, kernel body); each body is one asm statement
# on the kernel's arguments (o: __global float *, g: __global ulong *, n: uint)
PROBES = {
    "mma.sync m16n8k8 tf32 (control)": ("sm_80", """
    float d0, d1, d2, d3;
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
                 : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
                 : "r"(n), "r"(n), "r"(n), "r"(n), "r"(n), "r"(n),
                   "f"(0.0f), "f"(0.0f), "f"(0.0f), "f"(0.0f));
    o[get_global_id(0)] = d0 + d1 + d2 + d3;"""),
    "cp.async.bulk.prefetch.L2 (sm_90)": ("sm_90", """
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(g), "r"(n * 16u));
    o[get_global_id(0)] = 0.0f;"""),
    "wgmma.fence": ("sm_90a", """
    asm volatile("wgmma.fence.sync.aligned;");
    o[get_global_id(0)] = 0.0f;"""),
    "wgmma.mma_async m64n8k8 tf32": ("sm_90a", """
    float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
    asm volatile("{\\n.reg .pred p;\\nsetp.ne.b32 p, %6, 0;\\n"
                 "wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 "
                 "{%0, %1, %2, %3}, %4, %5, p, 1, 1;\\n}"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "l"(g[0]), "l"(g[1]), "r"(n));
    asm volatile("wgmma.commit_group.sync.aligned;");
    asm volatile("wgmma.wait_group.sync.aligned 0;");
    o[get_global_id(0)] = d0 + d1 + d2 + d3;"""),
    "setmaxnreg.inc (sm_90a)": ("sm_90a", """
    asm volatile("setmaxnreg.inc.sync.aligned.u32 240;");
    o[get_global_id(0)] = 0.0f;"""),
}


def source(body):
    return ("__kernel void probe(__global float *o, __global const ulong *g, const uint n)\n{"
            + body + "\n}\n")


def first_error(log):
    """The build log's first line that names an error, else its first non-empty line."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower():
            return ln
    return lines[0] if lines else "(empty build log)"


def ptx_target(binary):
    """The `.target` line of NVIDIA's PTX binary, '' where there is none."""
    text = binary.decode("utf-8", "replace")
    return next((ln.strip() for ln in text.splitlines() if ln.strip().startswith(".target")), "")


# Build options to try beside the default: NVIDIA's compiler takes -cl-nv-arch, and
# sm_90a is the target that holds wgmma and setmaxnreg.
OPTIONS = {"default": [], "-cl-nv-arch sm_90a": ["-cl-nv-arch", "sm_90a"]}


def probe(ctx, device, options=()):
    """[(name, documented target, 'built' or 'refused', detail)] for every probe,
    built with these options."""
    rows = []
    for name, (target, body) in PROBES.items():
        program = cl.Program(ctx, source(body))
        try:
            program.build(options=list(options), devices=[device])
        except cl.RuntimeError as err:
            log = program.get_build_info(device, cl.program_build_info.LOG) or str(err)
            rows.append((name, target, "refused", first_error(log)))
            continue
        rows.append((name, target, "built", ptx_target(program.binaries[0])))
    return rows


def is_nvidia(device):
    return "NVIDIA" in device.vendor.upper()
