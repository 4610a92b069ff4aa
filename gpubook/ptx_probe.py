"""Which of Hopper's instructions NVIDIA's OpenCL compiler accepts as inline PTX
(part 6.3's tensor cores): wgmma, the warp-group MMA that Hopper's full tensor rate
needs, against instructions it is known or expected to take. Each probe is a kernel
of one instruction (built only, never launched); its row says whether the build
passed, with the `.target` line of the PTX the compiler wrote where it did and the
build log's first error line where it did not. The PTX ISA documents wgmma and
setmaxnreg for sm_90a only, cp.async.bulk for sm_90 and later, mma.sync for sm_80.
tools/probe_wgmma.py runs it from the shell."""
import numpy as np
import pyopencl as cl

from . import launch, wgmma

WARP_GROUP = 128   # the work-items that issue one wgmma together (four warps)

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


def open_nvidia(consequence="wgmma does not apply"):
    """How the GPU-host tools start: (device, ctx, queue) of the chosen device
    (gpubook.open_device) where it is NVIDIA's, else None, once it has printed in one
    line that the device is not NVIDIA's, and the consequence."""
    from .device import open_device
    device, ctx, queue, _, _ = open_device()
    if is_nvidia(device):
        return device, ctx, queue
    print(f"{device.name.strip()} is not an NVIDIA device: {consequence}")
    return None


def run(ctx, device):
    """{option set: probe rows} for every set of OPTIONS; {} where the device is not NVIDIA's."""
    if not is_nvidia(device):
        return {}
    return {opt: probe(ctx, device, flags) for opt, flags in OPTIONS.items()}


def _short(row):
    """A probe's result in a few words: built and the PTX target, or refused."""
    _, _, build, detail = row
    return f"built ({detail.replace('.target', '').split(',')[0].strip()})" if build == "built" else "refused"


def message(detail):
    """The words of a ptxas error line, without its file and line prefix."""
    return detail.split("error")[-1].strip(" :") if "error" in detail else detail


def table(found):
    """Rows for gpubook.markdown_table: each instruction, the PTX ISA's target for it,
    and what each set of options gave."""
    sets = list(found)
    if not sets:
        return []
    head = ["instruction", "PTX ISA target"] + [f"build: {opt}" for opt in sets]
    return [head] + [[row[0], row[1]] + [_short(found[opt][i]) for opt in sets]
                     for i, row in enumerate(found[sets[0]])]


def verdict(found, device_name, binary=()):
    """Sentences, from the builds (`found`, of run) and the program binaries (`binary`,
    of from_binary), on what reaches Hopper's instructions here (plain text, for a glue)."""
    if not found:
        return f"{device_name} is not an NVIDIA device: inline PTX, and this question, do not apply"
    where = f"NVIDIA's OpenCL compiler on {device_name}"
    rows = [r for opt in found for r in found[opt]]
    control = [r for r in rows if r[0].startswith("mma.sync")]
    if not any(r[2] == "built" for r in control):
        return f"{where} refuses even mma.sync: \"{message(control[0][3])}\""
    built = [opt for opt in found for r in found[opt] if r[0].startswith("wgmma.mma_async") and r[2] == "built"]
    if built:
        return (f"{where} builds wgmma in OpenCL C with {', '.join(built)}: Hopper's full tensor rate is "
                "within reach of an OpenCL kernel here, though this step does not use it yet")
    targets = " or ".join(sorted({r[3].replace(".target", "").split(",")[0].strip()
                                  for r in control if r[2] == "built"}))
    if "sm_90" not in targets:
        return (f"{where} builds for {targets}: wgmma, an instruction of Hopper's sm_90a only, does not "
                "apply to this device")
    error = next(message(r[3]) for r in rows if r[0].startswith("wgmma.mma_async"))
    tried = ", ".join(opt for opt in found if opt != "default")
    text = (f"{where} refuses wgmma in OpenCL C, with its default options and with {tried}: \"{error}\". "
            f"The options are taken, and the PTX stays on {targets}, where wgmma does not exist (the PTX ISA "
            "has it for sm_90a only)")
    state = {what: (build, ran) for what, build, ran in binary}
    own = state.get("its own PTX, .target sm_90a", ("", ""))
    fence = state.get("with wgmma.fence, .target sm_90a", ("", ""))
    mma = state.get("with wgmma.mma_async m64n8k8 tf32, .target sm_90a", ("", ""))
    product = state.get(PRODUCT, ("", ""))
    if own == ("built", "ran") and fence == ("built", "ran") and mma[0] == "built":
        ran = (". An OpenCL kernel whose PTX had a marker rewritten into one m64n8k8 TF32 wgmma.mma_async "
               "gave, on 64 × 8 and 8 × 8 operands in local memory, the product NumPy gives, to the last bit"
               if product == ("built", "ran, equal to NumPy") else
               ". An OpenCL kernel with one wgmma.mma_async written into its PTX gave: "
               + ", ".join(x for x in product if x) if product[0] else "")
        return (text + ". The driver takes PTX for sm_90a as a program binary, though: the compiler's own "
                "PTX with its target changed to sm_90a built and ran, with a wgmma.fence in it ran on a warp "
                "group of 128 work-items, and with a whole wgmma.mma_async built" + ran + ". Hopper's full "
                "tensor rate is within reach of an OpenCL program through its PTX; this step, written in "
                "OpenCL C, stays on mma.sync")
    if binary:
        return (text + ". Handed to the driver as a program binary for sm_90a, the PTX gave: " +
                "; ".join(f"{what}, {build}{', ' + ran if ran else ''}" for what, build, ran in binary) +
                ". This step stays on mma.sync")
    return text + ". This step stays on mma.sync"


def _inline_asm(ptx, instruction):
    """ptx with the body of its one inline-asm block replaced by `instruction`."""
    lines, out, inside = ptx.splitlines(), [], False
    for ln in lines:
        if "begin inline asm" in ln:
            inside = True
            out += [ln, "\t" + instruction]
        elif "end inline asm" in ln:
            inside = False
            out.append(ln)
        elif not inside:
            out.append(ln)
    return "\n".join(out) + "\n"


# wgmma.mma_async in PTX of its own (the source probe cannot build, so it has no PTX to
# start from): registers of its own scope, descriptors from the kernel's argument g.
# Built only: its descriptors point nowhere.
WGMMA_PTX = ("{\n\t.reg .f32 f<4>;\n\t.reg .pred p;\n\tsetp.ne.b32 p, %r1, 0;\n"
             "\twgmma.fence.sync.aligned;\n"
             "\twgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {f0, f1, f2, f3}, %rd1, %rd1, p, 1, 1;\n"
             "\twgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;\n\t}")


# A wgmma operand in local memory, K-major (rows of 8 TF32 terms) in core matrices of
# 8 rows x 16 bytes: along K 128 bytes apart, along M (or N) 256 bytes apart. The
# descriptors give these as the leading and the stride byte offsets; on an H200
# (2026-11-28, tools/probe_wgmma_product.py) the two swapped made the launch fail and
# took the context with it.
K_STEP, MN_STEP = 128, 256
PRODUCT = "one m64n8k8 TF32 wgmma.mma_async in an OpenCL kernel's own PTX, .target sm_90a"


def core_image(x):
    """x (rows x 8, K-major) as wgmma_probe.cl's local memory holds it: element (r, k)
    at float (r % 8) * 4 + k % 4 + (k // 4) * K_STEP / 4 + (r // 8) * MN_STEP / 4."""
    r, k = np.meshgrid(np.arange(x.shape[0]), np.arange(8), indexing="ij")
    out = np.zeros(x.shape[0] // 8 * MN_STEP // 4, np.float32)
    out[(r % 8) * 4 + k % 4 + (k // 4) * K_STEP // 4 + (r // 8) * MN_STEP // 4] = x
    return out


def fragment(d):
    """D (64 x 8) from 128 work-items' 4 values each (d[4 t + i]), in mma.sync's
    layout: work-item t of warp w = t / 32, lane l, holds rows 16 w + l / 4 and
    + 8, columns 2 (l % 4) and + 1."""
    t, i = np.meshgrid(np.arange(WARP_GROUP), np.arange(4), indexing="ij")
    w, lane = t // 32, t % 32
    out = np.empty((64, 8), np.float32)
    out[16 * w + lane // 4 + 8 * (i // 2), 2 * (lane % 4) + i % 2] = np.asarray(d).reshape(WARP_GROUP, 4)
    return out


def wgmma_product(device, ptx_dir=None, emulate=False):
    """(PRODUCT, 'built' or 'refused', what the run gave): kernels/tensor/wgmma_probe.cl
    built as OpenCL C, its PTX rewritten (gpubook.wgmma.rewrite) and built as a program binary, then
    run on one warp group on A (64 x 8) and B (8 x 8) of small integers, exact in TF32,
    and its D compared with NumPy's A B'. In a context of its own, so that a failed
    launch leaves the caller's intact. ptx_dir: write both PTX texts there. emulate: the
    kernel as any device builds it (NV_PTX=0, D from local memory by the work-items),
    which checks the host's layouts on a CPU."""
    from .kernels import build

    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx)
    if emulate:
        prog = build(ctx, "tensor/wgmma_probe.cl")
    else:
        ptx = build(ctx, "tensor/wgmma_probe.cl", {"NV_PTX": 1}).binaries[0].decode("utf-8", "replace")
        text = wgmma.rewrite(ptx, sync=True)
        if ptx_dir is not None:
            (ptx_dir / "wgmma_probe.ptx").write_text(ptx.rstrip("\x00"))
            (ptx_dir / "wgmma_probe_sm90a.ptx").write_text(text)
        try:
            prog = cl.Program(ctx, [device], [text.encode() + b"\x00"]).build(devices=[device])
        except (cl.RuntimeError, cl.LogicError) as err:
            return PRODUCT, "refused", first_error(str(err))
    rng = np.random.default_rng(1)
    a, b = (rng.integers(-4, 5, (rows, 8)).astype(np.float32) for rows in (64, 8))
    mf = cl.mem_flags
    bufs = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=core_image(x)) for x in (a, b)]
    d_buf, info = cl.Buffer(ctx, mf.READ_WRITE, 4 * 4 * WARP_GROUP), cl.Buffer(ctx, mf.READ_WRITE, 16)
    d = np.full(4 * WARP_GROUP, np.nan, np.float32)
    try:
        launch.check(device, WARP_GROUP)
        cl.Kernel(prog, "wgmma_probe")(queue, (WARP_GROUP,), (WARP_GROUP,), *bufs, d_buf, info,
                                        np.uint32(K_STEP), np.uint32(MN_STEP), np.uint32(0))
        cl.enqueue_copy(queue, d, d_buf)
    except (cl.RuntimeError, cl.LogicError, launch.LaunchError) as err:
        return PRODUCT, "built", f"launch failed: {err}"
    err = float(np.max(np.abs(fragment(d) - a.astype(np.float64) @ b.T)))
    return PRODUCT, "built", "ran, equal to NumPy" if err == 0 else f"ran, off NumPy by up to {err:g}"


def from_binary(ctx, device, queue=None):
    """The other door: PTX handed to the driver as a program binary. The PTX that
    the compiler wrote for the cp.async.bulk probe, with its target line set to
    sm_90a; then with its instruction replaced by wgmma.fence; then by a whole
    wgmma.mma_async (WGMMA_PTX). With a queue, the first two are also launched on
    one warp group (128 work-items), after every build, and their output (0 where
    it was 1) checked, and a last row runs a whole wgmma product (wgmma_product):
    [(what, 'built', 'ran', '' or why not) or (what, 'refused', the first error)].
    A failed launch can leave the context unusable: call it last."""
    name = "cp.async.bulk.prefetch.L2 (sm_90)"
    program = cl.Program(ctx, source(PROBES[name][1])).build(devices=[device])
    ptx = program.binaries[0].decode("utf-8", "replace").rstrip("\x00")
    target = ptx_target(program.binaries[0])
    if "sm_90" not in target.split(",")[0].split():    # Hopper's PTX only: sm_90a is its target
        return []
    retarget = wgmma.to_sm90a(ptx)
    rows, built = [], {}
    for what, text, to_run in (("its own PTX, .target sm_90a", retarget, True),
                               ("with wgmma.fence, .target sm_90a",
                                _inline_asm(retarget, "wgmma.fence.sync.aligned;"), True),
                               ("with wgmma.mma_async m64n8k8 tf32, .target sm_90a",
                                _inline_asm(retarget, WGMMA_PTX), False)):
        try:
            prog = cl.Program(ctx, [device], [text.encode() + b"\x00"]).build(devices=[device])
            rows.append([what, "built", ""])
            built[what] = prog if to_run else None
        except (cl.RuntimeError, cl.LogicError) as err:
            rows.append([what, "refused", first_error(str(err))])
    for row in rows:                          # every build first: a failed launch can break the context
        prog = built.get(row[0])
        if prog is None or queue is None:
            continue
        mf = cl.mem_flags
        out = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.ones(WARP_GROUP, np.float32))
        g = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.zeros(64, np.uint64))
        host = np.empty(WARP_GROUP, np.float32)
        try:                                  # one warp group; n = 1: a prefetch of 16 bytes of g
            launch.check(device, WARP_GROUP)
            prog.probe(queue, (WARP_GROUP,), (WARP_GROUP,), out, g, np.uint32(1))
            cl.enqueue_copy(queue, host, out)
            row[2] = "ran" if np.all(host == 0) else "ran, wrong output"
        except (cl.RuntimeError, cl.LogicError, launch.LaunchError) as err:
            row[2] = f"launch failed: {err}"
    if queue is not None:
        rows.append(list(wgmma_product(device)))
    return [tuple(r) for r in rows]
