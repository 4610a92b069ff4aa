// Arithmetic throughput: every work-item runs ITERS steps of x = x * a + b on
// eight independent chains, so eight fused multiply-adds can be in flight at
// once. Each step of each chain is 2 floating-point operations. TYPE is float
// (chapter 0's FP32 figure) unless built with -DTYPE=double -DFP64=1 (the FP64
// figure chapter 8 measures).
// VEC (1, 2, 4, 8 or 16; 1 unless given) makes every chain a vector of VEC
// lanes, lane l starting l * 1e-4 above lane 0: the device's preferred vector
// width. A GPU issues one instruction for a whole warp of work-items, so 1
// fills it; a CPU through PoCL runs each work-item's loop on one core, and
// only an explicit vector fills that core's SIMD lanes. The VEC lanes of
// work-item gid are written to out[gid * VEC .. gid * VEC + VEC - 1].
#ifndef TYPE
#define TYPE float
#endif
#ifndef VEC
#define VEC 1
#endif
#if defined(FP64) && FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#define JOIN(a, b) a##b
#define NAMED(a, b) JOIN(a, b)
#if VEC == 1
#define VTYPE TYPE
#define LANES(p) ((TYPE)0)
#define STORE(v, i, p) ((p)[i] = (v))
#define STEP(x) fma(x, va, vb)
#else
// A multiply and an add that the compiler contracts into one FMA instruction
// (FP_CONTRACT is on by default), and plain vector loads and stores: a call of
// a built-in (fma, vload, vstore) with a vector wider than the CPU's registers
// would go through a library function.
#define VTYPE NAMED(TYPE, VEC)
#define LANES(p) (*(__constant VTYPE *)(p))
#define STORE(v, i, p) (((__global VTYPE *)(p))[i] = (v))
#define STEP(x) ((x) * va + vb)
#endif

__constant TYPE lane_step[16] __attribute__((aligned(128))) = {0, 1e-4f, 2e-4f, 3e-4f, 4e-4f, 5e-4f, 6e-4f, 7e-4f,
                                 8e-4f, 9e-4f, 10e-4f, 11e-4f, 12e-4f, 13e-4f,
                                 14e-4f, 15e-4f};

__kernel void fma_chains(__global TYPE *out, const TYPE a, const TYPE b)
{
    const size_t gid = get_global_id(0);
    const VTYPE va = (VTYPE)(a), vb = (VTYPE)(b);
    VTYPE x0 = (VTYPE)((TYPE)(gid & 1023) * (TYPE)1e-3f) + LANES(lane_step);
    VTYPE x1 = x0 + (TYPE)0.125f, x2 = x0 + (TYPE)0.25f, x3 = x0 + (TYPE)0.375f;
    VTYPE x4 = x0 + (TYPE)0.5f, x5 = x0 + (TYPE)0.625f, x6 = x0 + (TYPE)0.75f,
          x7 = x0 + (TYPE)0.875f;
#pragma unroll 16
    for (int i = 0; i < ITERS; i++) {
        x0 = STEP(x0); x1 = STEP(x1); x2 = STEP(x2); x3 = STEP(x3);
        x4 = STEP(x4); x5 = STEP(x5); x6 = STEP(x6); x7 = STEP(x7);
    }
    // Writing the chains out keeps the compiler from removing the loop.
    STORE(x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7, gid, out);
}
