// One warp multiplies small tiles on the tensor cores, to check the
// fragment layouts of kernels/tensor/mma.cl against NumPy:
//   TF32: D (16 x 8) = A (16 x 8ks) B (8ks x 8) + C, the operands rounded to TF32
//   FP64: D (F64_M x 8) = A (F64_M x F64_K ks) B (F64_K ks x 8) + C, in the
//   build's shape (kernels/tensor/mma.cl)
// All matrices row-major. A wrong layout puts products in the wrong places:
// errors of order one, not of TF32's rounding.
__kernel __attribute__((reqd_work_group_size(32, 1, 1))) void mma_check_tf32(
        __global const float *a, __global const float *b, __global const float *c,
        __global float *d, const int ks)
{
    __local float scratch[EMULATE ? MMA_TF32_SCRATCH : 1];
    const int g = mma_lane() / 4, t = mma_lane() % 4, k = 8 * ks;
    float acc[4];
    for (int i = 0; i < 4; ++i)
        acc[i] = c[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2];
    for (int s = 0; s < ks; ++s) {
        const int k0 = 8 * s;
        mma_tf32(acc, tf32_round(a[g * k + k0 + t]),
                 tf32_round(a[(g + 8) * k + k0 + t]),
                 tf32_round(a[g * k + k0 + t + 4]),
                 tf32_round(a[(g + 8) * k + k0 + t + 4]),
                 tf32_round(b[(k0 + t) * 8 + g]), tf32_round(b[(k0 + t + 4) * 8 + g]),
                 scratch);
    }
    for (int i = 0; i < 4; ++i)
        d[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = acc[i];
}

__kernel __attribute__((reqd_work_group_size(32, 1, 1))) void mma_check_f64(
        __global const double *a, __global const double *b, __global const double *c,
        __global double *d, const int ks)
{
    __local double scratch[EMULATE ? MMA_F64_SCRATCH : 1];
    const int g = mma_lane() / 4, t = mma_lane() % 4, k = F64_K * ks;
    double acc[F64_C], fa[F64_A], fb[F64_B];
    for (int i = 0; i < F64_C; ++i)
        acc[i] = c[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2];
    for (int s = 0; s < ks; ++s) {
        const int k0 = F64_K * s;
        for (int i = 0; i < F64_A; ++i)
            fa[i] = a[(g + 8 * (i % F64_R)) * k + k0 + t + 4 * (i / F64_R)];
        for (int i = 0; i < F64_B; ++i)
            fb[i] = b[(k0 + t + 4 * i) * 8 + g];
        mma_f64(acc, fa, fb, scratch);
    }
    for (int i = 0; i < F64_C; ++i)
        d[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = acc[i];
}
