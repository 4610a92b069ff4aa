// Tensor cores from OpenCL C: one warp's matrix multiply-add through inline
// PTX (NVIDIA only), joined in front of the kernels of kernels/tensor/ by
// gpubook.tensor. A warp is 32 work-items with consecutive local ids; every
// work-group is a whole number of warps, and all of a warp's work-items call
// mma together (mma.sync is a warp-wide instruction).
//
// Fragments (PTX ISA, "Matrix fragments for mma.m16n8k8" and the FP64 shapes),
// with g = lane / 4 and t = lane % 4:
//   TF32 m16n8k8, D(16x8) = A(16x8) B(8x8) + C, f32 accumulators:
//     A: a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4], a3 = A[g+8][t+4]
//     B: b0 = B[t][g], b1 = B[t+4][g]
//     C, D: c_i = C[g + 8 (i / 2)][2 t + i % 2], i = 0..3
//   FP64 mF64_M n8 kF64_K, D(F64_M x 8) = A(F64_M x F64_K) B(F64_K x 8) + C, one
//   shape per build (F64_M, F64_K: 8, 4 is Ampere's m8n8k4, the default; 16 with
//   4, 8 or 16 are Hopper's m16n8k4, m16n8k8, m16n8k16). With R = F64_M / 8
//   (1 or 2), a lane holds F64_A = F64_M F64_K / 32 values of A, F64_B = F64_K / 4
//   of B and F64_C = F64_M / 4 of C:
//     A: a_i = A[g + 8 (i % R)][t + 4 (i / R)]; B: b_i = B[t + 4 i][g]
//     C, D: c_i = C[g + 8 (i / 2)][2 t + i % 2]
//   (m8n8k4: a0 = A[g][t], b0 = B[t][g], c_i = C[g][2 t + i], i = 0, 1).
// TF32 operands are 32-bit registers holding a float whose low 13 mantissa
// bits the tensor core does not use (a raw float is truncated): tf32_round
// rounds to the nearest TF32 value first (ties away from zero, as
// cvt.rna.tf32.f32 does), in plain C.
//
// Built with EMULATE=1 (any OpenCL device), the same calls multiply through
// local memory instead: each lane writes its fragments where the layout above
// says they belong, and reads back the rows and columns of its results. The
// tests run the kernels' tiling, bounds and splitting that way on a CPU; the
// layout itself is proven on the GPU by kernels/tensor/check.cl.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#ifndef EMULATE
#define EMULATE 0
#endif
#define MMA_TF32_SCRATCH 192                 // floats per warp: A 16 x 8, B 8 x 8
#ifndef F64_M
#define F64_M 8
#endif
#ifndef F64_K
#define F64_K 4
#endif
#define F64_R (F64_M / 8)
#define F64_A (F64_M * F64_K / 32)           // a lane's values of A, B, C
#define F64_B (F64_K / 4)
#define F64_C (F64_M / 4)
#define MMA_F64_SCRATCH (F64_M * F64_K + F64_K * 8)  // doubles per warp: A, then B
#define MMA_CAT(a, b, c, d) a##b##c##d
#define MMA_NAME(a, b, c, d) MMA_CAT(a, b, c, d)

inline float tf32_round(const float x)
{
    return as_float((as_uint(x) + 0x1000u) & 0xffffe000u);
}

inline float tf32_truncate(const float x)
{
    return as_float(as_uint(x) & 0xffffe000u);
}

inline int mma_lane(void)
{
    return get_local_id(0) % 32;
}

#if EMULATE
inline void mma_tf32(float *d, const float a0, const float a1, const float a2,
                     const float a3, const float b0, const float b1, __local float *s)
{
    const int g = mma_lane() / 4, t = mma_lane() % 4;
    __local float *sa = s, *sb = s + 128;    // sa[row * 8 + k], sb[k * 8 + col]
    sa[g * 8 + t] = tf32_truncate(a0);
    sa[(g + 8) * 8 + t] = tf32_truncate(a1);
    sa[g * 8 + t + 4] = tf32_truncate(a2);
    sa[(g + 8) * 8 + t + 4] = tf32_truncate(a3);
    sb[t * 8 + g] = tf32_truncate(b0);
    sb[(t + 4) * 8 + g] = tf32_truncate(b1);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = 0; i < 4; ++i) {
        const int row = g + 8 * (i / 2), col = 2 * t + i % 2;
        float acc = d[i];
        for (int k = 0; k < 8; ++k)
            acc = fma(sa[row * 8 + k], sb[k * 8 + col], acc);
        d[i] = acc;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

inline void mma_f64(double *d, const double *a, const double *b, __local double *s)
{
    const int g = mma_lane() / 4, t = mma_lane() % 4;
    __local double *sa = s,
                   *sb = s + F64_M * F64_K;  // sa[row * F64_K + k], sb[k * 8 + col]
    for (int i = 0; i < F64_A; ++i)
        sa[(g + 8 * (i % F64_R)) * F64_K + t + 4 * (i / F64_R)] = a[i];
    for (int i = 0; i < F64_B; ++i)
        sb[(t + 4 * i) * 8 + g] = b[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = 0; i < F64_C; ++i) {
        const int row = g + 8 * (i / 2), col = 2 * t + i % 2;
        double acc = d[i];
        for (int k = 0; k < F64_K; ++k)
            acc = fma(sa[row * F64_K + k], sb[k * 8 + col], acc);
        d[i] = acc;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
#else
inline void mma_tf32(float *d, const float a0, const float a1, const float a2,
                     const float a3, const float b0, const float b1, __local float *s)
{
    float e0, e1, e2, e3;
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
                 : "=f"(e0), "=f"(e1), "=f"(e2), "=f"(e3)
                 : "r"(as_uint(a0)), "r"(as_uint(a1)), "r"(as_uint(a2)),
                   "r"(as_uint(a3)), "r"(as_uint(b0)), "r"(as_uint(b1)), "f"(d[0]),
                   "f"(d[1]), "f"(d[2]), "f"(d[3]));
    d[0] = e0;
    d[1] = e1;
    d[2] = e2;
    d[3] = e3;
}

// FP64: one function per shape (the result goes to e, then back to d, as
// TF32's does); mma_f64 calls the one that the build's F64_M and F64_K name.
inline void mma_f64_m8n8k4(double *d, const double *a, const double *b)
{
    double e0, e1;
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 "
                 "{%0, %1}, {%2}, {%3}, {%4, %5};"
                 : "=d"(e0), "=d"(e1)
                 : "d"(a[0]), "d"(b[0]), "d"(d[0]), "d"(d[1]));
    d[0] = e0;
    d[1] = e1;
}

inline void mma_f64_m16n8k4(double *d, const double *a, const double *b)
{
    double e0, e1, e2, e3;
    asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 "
                 "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};"
                 : "=d"(e0), "=d"(e1), "=d"(e2), "=d"(e3)
                 : "d"(a[0]), "d"(a[1]), "d"(b[0]),
                   "d"(d[0]), "d"(d[1]), "d"(d[2]), "d"(d[3]));
    d[0] = e0;
    d[1] = e1;
    d[2] = e2;
    d[3] = e3;
}

inline void mma_f64_m16n8k8(double *d, const double *a, const double *b)
{
    double e0, e1, e2, e3;
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
                 : "=d"(e0), "=d"(e1), "=d"(e2), "=d"(e3)
                 : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]),
                   "d"(d[0]), "d"(d[1]), "d"(d[2]), "d"(d[3]));
    d[0] = e0;
    d[1] = e1;
    d[2] = e2;
    d[3] = e3;
}

inline void mma_f64_m16n8k16(double *d, const double *a, const double *b)
{
    double e0, e1, e2, e3;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7, %8, %9, %10, %11}, "
                 "{%12, %13, %14, %15}, {%16, %17, %18, %19};"
                 : "=d"(e0), "=d"(e1), "=d"(e2), "=d"(e3)
                 : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]),
                   "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
                   "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]),
                   "d"(d[0]), "d"(d[1]), "d"(d[2]), "d"(d[3]));
    d[0] = e0;
    d[1] = e1;
    d[2] = e2;
    d[3] = e3;
}

inline void mma_f64(double *d, const double *a, const double *b, __local double *s)
{
    MMA_NAME(mma_f64_m, F64_M, n8k, F64_K)(d, a, b);
}
#endif
