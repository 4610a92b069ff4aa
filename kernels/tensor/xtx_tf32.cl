// Chapter 6's S = X'X (the lower triangle) on the tensor cores: X is m x n
// float32, row-major with stride ldx; S is n x n float32 with stride lds.
// A work-group owns a T x T tile of S on or below the diagonal; its
// WARPS_M x WARPS_N warps each own a (T / WARPS_M) x (T / WARPS_N) block of
// it, MT x NF fragments of 16 x 8 in registers. The rows k of X go KC at a
// time through local memory (zeros past m and n); each step of 8 rows is
// one m16n8k8 mma per fragment, A[i][k] = X[k][i0 + i], B[k][j] = X[k][j0 + j].
//   MODE 0: the raw floats (the tensor core truncates them to TF32)
//   MODE 1: each float rounded to TF32 first
//   MODE 2: 3xTF32: x = hi + lo, hi = tf32(x), lo = tf32(x - hi), and
//           A B ~ lo_A hi_B + hi_A lo_B + hi_A hi_B (lo lo is below float's rounding)
// Local memory rows are T + 8 floats long: the 32 lanes of a fragment load
// (rows t, columns g) fall on 32 different banks.
#define NTH (32 * WARPS_M * WARPS_N)
#define WTM (T / WARPS_M)
#define WTN (T / WARPS_N)
#define MT (WTM / 16)
#define NF (WTN / 8)
#define LDL (T + 8)
#define LOADS (KC * T / NTH)

inline void operand(const float v, float *hi, float *lo)
{
#if MODE == 0
    *hi = v;
#else
    *hi = tf32_round(v);
#endif
    *lo = tf32_round(v - *hi);
}

__kernel __attribute__((reqd_work_group_size(NTH, 1, 1)))
void xtx_tf32(__global const float *restrict x, const int m, const int n, const int ldx,
              __global float *restrict s, const int lds)
{
    __local float as[KC * LDL], bs[KC * LDL];
    __local float scratch[EMULATE ? NTH / 32 * MMA_TF32_SCRATCH : 1];
    const int grp = get_group_id(0);
    int bi = (int)((sqrt(8.0f * grp + 1.0f) - 1.0f) * 0.5f);
    while (bi * (bi + 1) / 2 > grp) --bi;            // float rounding, either way
    while ((bi + 1) * (bi + 2) / 2 <= grp) ++bi;
    const int bj = grp - bi * (bi + 1) / 2;
    const int i0 = bi * T, j0 = bj * T;
    const int lid = get_local_id(0), warp = lid / 32, g = mma_lane() / 4, t = mma_lane() % 4;
    const int wm = warp / WARPS_N * WTM, wn = warp % WARPS_N * WTN;
    __local float *scr = scratch + (EMULATE ? warp * MMA_TF32_SCRATCH : 0);

    float acc[MT][NF][4];
#pragma unroll
    for (int p = 0; p < MT; ++p)
#pragma unroll
        for (int q = 0; q < NF; ++q)
#pragma unroll
            for (int i = 0; i < 4; ++i)
                acc[p][q][i] = 0.0f;

    for (int k0 = 0; k0 < m; k0 += KC) {
#pragma unroll
        for (int l = 0; l < LOADS; ++l) {
            const int e = lid + l * NTH, r = e / T, c = e % T, k = k0 + r;
            const size_t row = (size_t)k * ldx;
            as[r * LDL + c] = k < m && i0 + c < n ? x[row + i0 + c] : 0.0f;
            bs[r * LDL + c] = k < m && j0 + c < n ? x[row + j0 + c] : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
        for (int kk = 0; kk < KC; kk += 8) {
            float ah[MT][4], al[MT][4], bh[NF][2], bl[NF][2];
#pragma unroll
            for (int p = 0; p < MT; ++p) {
                const int r = wm + p * 16 + g;
                operand(as[(kk + t) * LDL + r], &ah[p][0], &al[p][0]);
                operand(as[(kk + t) * LDL + r + 8], &ah[p][1], &al[p][1]);
                operand(as[(kk + t + 4) * LDL + r], &ah[p][2], &al[p][2]);
                operand(as[(kk + t + 4) * LDL + r + 8], &ah[p][3], &al[p][3]);
            }
#pragma unroll
            for (int q = 0; q < NF; ++q) {
                const int c = wn + q * 8 + g;
                operand(bs[(kk + t) * LDL + c], &bh[q][0], &bl[q][0]);
                operand(bs[(kk + t + 4) * LDL + c], &bh[q][1], &bl[q][1]);
            }
#pragma unroll
            for (int p = 0; p < MT; ++p)
#pragma unroll
                for (int q = 0; q < NF; ++q) {
#if MODE == 2
                    mma_tf32(acc[p][q], al[p][0], al[p][1], al[p][2], al[p][3], bh[q][0], bh[q][1], scr);
                    mma_tf32(acc[p][q], ah[p][0], ah[p][1], ah[p][2], ah[p][3], bl[q][0], bl[q][1], scr);
#endif
                    mma_tf32(acc[p][q], ah[p][0], ah[p][1], ah[p][2], ah[p][3], bh[q][0], bh[q][1], scr);
                }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

#pragma unroll
    for (int p = 0; p < MT; ++p)
#pragma unroll
        for (int q = 0; q < NF; ++q)
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int row = i0 + wm + p * 16 + g + 8 * (i / 2);
                const int col = j0 + wn + q * 8 + 2 * t + i % 2;
                if (row < n && col <= row)
                    s[(size_t)row * lds + col] = acc[p][q][i];
            }
}
