// The tensor cores' roof: every warp runs CHAINS independent chains of
// mma.sync, ITERS deep, on operands read once from global memory; the sums
// are written so that nothing is optimised away. WG work-items per
// work-group (a multiple of 32).
//   mma_peak_tf32: m16n8k8 TF32, 2 * 16 * 8 * 8 = 2048 flops per warp and mma
//   mma_peak_f64:  FP64 in the build's shape (kernels/tensor/mma.cl: F64_M, F64_K),
//                  2 * F64_M * 8 * F64_K flops per warp and mma (512 for m8n8k4,
//                  1,024 for m16n8k4)
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void mma_peak_tf32(__global const float *in, __global float *out, const int iters)
{
    __local float scratch[EMULATE ? WG / 32 * MMA_TF32_SCRATCH : 1];
    __local float *s =
            scratch + (EMULATE ? get_local_id(0) / 32 * MMA_TF32_SCRATCH : 0);
    const int lane = mma_lane();
    const float a0 = in[lane], a1 = in[lane + 32], a2 = in[lane + 64],
                a3 = in[lane + 96];
    const float b0 = in[lane + 128], b1 = in[lane + 160];
    float acc[CHAINS][4];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c)
        for (int i = 0; i < 4; ++i)
            acc[c][i] = 0.0f;
    for (int it = 0; it < iters; ++it)
#pragma unroll
        for (int c = 0; c < CHAINS; ++c)
            mma_tf32(acc[c], a0, a1, a2, a3, b0, b1, s);
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c)
        for (int i = 0; i < 4; ++i)
            sum += acc[c][i];
    out[get_global_id(0)] = sum;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void mma_peak_f64(__global const double *in, __global double *out, const int iters)
{
    __local double scratch[EMULATE ? WG / 32 * MMA_F64_SCRATCH : 1];
    __local double *s =
            scratch + (EMULATE ? get_local_id(0) / 32 * MMA_F64_SCRATCH : 0);
    const int lane = mma_lane();
    double fa[F64_A], fb[F64_B], acc[CHAINS][F64_C];
    for (int i = 0; i < F64_A; ++i)
        fa[i] = in[lane + 32 * i];
    for (int i = 0; i < F64_B; ++i)
        fb[i] = in[lane + 32 * (F64_A + i)];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c)
#pragma unroll
        for (int i = 0; i < F64_C; ++i)
            acc[c][i] = 0.0;
    for (int it = 0; it < iters; ++it)
#pragma unroll
        for (int c = 0; c < CHAINS; ++c)
            mma_f64(acc[c], fa, fb, s);
    double sum = 0.0;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c)
#pragma unroll
        for (int i = 0; i < F64_C; ++i)
            sum += acc[c][i];
    out[get_global_id(0)] = sum;
}
