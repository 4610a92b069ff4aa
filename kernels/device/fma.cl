// FP32 throughput: every work-item runs ITERS steps of x = x * a + b on
// eight independent chains, so eight fused multiply-adds can be in flight
// at once. Each step of each chain is 2 floating-point operations.
__kernel void fma_chains(__global float *out, const float a, const float b)
{
    const size_t gid = get_global_id(0);
    float x0 = (float)(gid & 1023) * 1e-3f;
    float x1 = x0 + 0.125f, x2 = x0 + 0.25f, x3 = x0 + 0.375f;
    float x4 = x0 + 0.5f, x5 = x0 + 0.625f, x6 = x0 + 0.75f, x7 = x0 + 0.875f;
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
