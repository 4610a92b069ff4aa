// FP64 throughput: chapter 0's FMA chains in double precision. Every
// work-item runs ITERS steps of x = x * a + b on eight independent chains;
// each step of each chain is 2 floating-point operations.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

__kernel void fma_chains64(__global double *out, const double a, const double b)
{
    const size_t gid = get_global_id(0);
    double x0 = (double)(gid & 1023) * 1e-3;
    double x1 = x0 + 0.125, x2 = x0 + 0.25, x3 = x0 + 0.375;
    double x4 = x0 + 0.5, x5 = x0 + 0.625, x6 = x0 + 0.75, x7 = x0 + 0.875;
#pragma unroll 16
    for (int i = 0; i < ITERS; i++) {
        x0 = fma(x0, a, b); x1 = fma(x1, a, b);
        x2 = fma(x2, a, b); x3 = fma(x3, a, b);
        x4 = fma(x4, a, b); x5 = fma(x5, a, b);
        x6 = fma(x6, a, b); x7 = fma(x7, a, b);
    }
    out[gid] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}
