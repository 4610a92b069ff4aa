// Arithmetic throughput: every work-item runs ITERS steps of x = x * a + b on
// eight independent chains, so eight fused multiply-adds can be in flight at
// once. Each step of each chain is 2 floating-point operations. TYPE is float
// (chapter 0's FP32 figure) unless built with -DTYPE=double -DFP64=1 (the FP64
// figure chapter 8 measures).
#ifndef TYPE
#define TYPE float
#endif
#if defined(FP64) && FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

__kernel void fma_chains(__global TYPE *out, const TYPE a, const TYPE b)
{
    const size_t gid = get_global_id(0);
    TYPE x0 = (TYPE)(gid & 1023) * (TYPE)1e-3f;
    TYPE x1 = x0 + (TYPE)0.125f, x2 = x0 + (TYPE)0.25f, x3 = x0 + (TYPE)0.375f;
    TYPE x4 = x0 + (TYPE)0.5f, x5 = x0 + (TYPE)0.625f, x6 = x0 + (TYPE)0.75f,
         x7 = x0 + (TYPE)0.875f;
#pragma unroll 16
    for (int i = 0; i < ITERS; i++) {
        x0 = fma(x0, a, b); x1 = fma(x1, a, b);
        x2 = fma(x2, a, b); x3 = fma(x3, a, b);
        x4 = fma(x4, a, b); x5 = fma(x5, a, b);
        x6 = fma(x6, a, b); x7 = fma(x7, a, b);
    }
    // Writing the chains out keeps the compiler from removing the loop.
    out[gid] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}
