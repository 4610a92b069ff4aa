// C (+)= alpha * A'B in double on the FP64 tensor cores (mma.sync m8n8k4,
// NVIDIA only; joined after kernels/tensor/mma.cl by gpubook.dmma): the same
// arguments and the same result as kernels/tiles/register_tiles.cl built in
// double, so that chapter 8's step 6 can run its products either way.
//
// A (rows k, columns i) and B (rows k, columns j) are row-major with strides
// lda, ldb from offsets a_off, b_off; C[i][j] = sum over k of A[k][i] B[k][j].
// A work-group owns a TM x TN tile of C; its WARPS_M x WARPS_N warps each
// own a (TM / WARPS_M) x (TN / WARPS_N) block, MF x NF fragments of 8 x 8
// (two doubles per lane, c_i = C[g][2t + i]). The rows k go KC at a time
// through two local buffers (one barrier per chunk); the next chunk's loads
// from global memory are issued before this chunk's products and wait in
// registers. Each step of 4 rows is one m8n8k4 per fragment: lane (g, t)
// reads A[k0 + t][i0 + g] and B[k0 + t][j0 + g] (g = lane / 4, t = lane % 4).
// Local rows are TM + 8 doubles long: the 4 rows t of a fragment load then
// fall 16 banks apart, so a warp's 64-bit loads take the two passes that
// 256 bytes need and no more.
//
// Build options: TM, TN, WARPS_M, WARPS_N, KC (multiple of 4), TRIANGLE (only
// tiles on and below the diagonal of a square C), EMULATE (gpubook.tensor).
// The rows k_begin..k_end are split into chunks of k_chunk, one per
// get_group_id(1); chunk h writes its sums at c_off + h * c_stride.
#define NTH (32 * WARPS_M * WARPS_N)
#define WTM (TM / WARPS_M)
#define WTN (TN / WARPS_N)
#define MF (WTM / 8)
#define NF (WTN / 8)
#define LDA (TM + 8)
#define LDB (TN + 8)
#define LA ((KC * TM + NTH - 1) / NTH)
#define LB ((KC * TN + NTH - 1) / NTH)

// One chunk of a panel (KC rows, `width` columns) from global memory into
// registers, zeros past the rows k1 and the columns `left`.
static void fetch(double *next, const int per_item, const int width, __global const double *p, const int ld,
                  const int kk, const int k1, const int left)
{
    const int lid = get_local_id(0);
#pragma unroll
    for (int l = 0; l < per_item; ++l) {
        const int e = lid + l * NTH, k = kk + e / width, i = e % width;
        next[l] = (e < KC * width && k < k1 && i < left) ? p[(size_t)k * ld + i] : 0.0;
    }
}

static void store(__local double *panel, const double *next, const int per_item, const int width,
                  const int ldl)
{
    const int lid = get_local_id(0);
#pragma unroll
    for (int l = 0; l < per_item; ++l) {
        const int e = lid + l * NTH;
        if (e < KC * width)
            panel[(e / width) * ldl + e % width] = next[l];
    }
}

__kernel __attribute__((reqd_work_group_size(NTH, 1, 1)))
void dmma_tiles(__global const double *restrict a, const int a_off, const int lda,
                __global const double *restrict b, const int b_off, const int ldb,
                __global double *restrict c, const int c_off, const int ldc,
                const int M, const int N, const int k_begin, const int k_end,
                const int k_chunk, const int c_stride, const int tiles_x,
                const double alpha, const int accumulate)
{
    __local double la[2 * KC * LDA], lb[2 * KC * LDB];
    __local double scratch[EMULATE ? NTH / 32 * MMA_F64_SCRATCH : 1];
    const int grp = get_group_id(0);
#if TRIANGLE
    int bi = (int)((sqrt(8.0f * grp + 1.0f) - 1.0f) * 0.5f);
    while (bi * (bi + 1) / 2 > grp) --bi;            // float rounding, either way
    while ((bi + 1) * (bi + 2) / 2 <= grp) ++bi;
    const int bj = grp - bi * (bi + 1) / 2;
#else
    const int bi = grp / tiles_x, bj = grp % tiles_x;
#endif
    const int i0 = bi * TM, j0 = bj * TN;
    const int lid = get_local_id(0), warp = lid / 32, g = mma_lane() / 4, t = mma_lane() % 4;
    const int wm = warp / WARPS_N * WTM, wn = warp % WARPS_N * WTN;
    __local double *scr = scratch + (EMULATE ? warp * MMA_F64_SCRATCH : 0);
    const int k0 = k_begin + get_group_id(1) * k_chunk;
    const int k1 = min(k_end, k0 + k_chunk);
    __global const double *pa = a + a_off + i0, *pb = b + b_off + j0;

    double acc[MF][NF][2];
#pragma unroll
    for (int p = 0; p < MF; ++p)
#pragma unroll
        for (int q = 0; q < NF; ++q)
            acc[p][q][0] = acc[p][q][1] = 0.0;

    double na[LA], nb[LB];
    fetch(na, LA, TM, pa, lda, k0, k1, M - i0);
    fetch(nb, LB, TN, pb, ldb, k0, k1, N - j0);
    int s = 0;
    for (int kk = k0; kk < k1; kk += KC) {
        store(la + s * KC * LDA, na, LA, TM, LDA);
        store(lb + s * KC * LDB, nb, LB, TN, LDB);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (kk + KC < k1) {                          // the next chunk, in flight during the products
            fetch(na, LA, TM, pa, lda, kk + KC, k1, M - i0);
            fetch(nb, LB, TN, pb, ldb, kk + KC, k1, N - j0);
        }
        __local const double *sa = la + s * KC * LDA + wm + g, *sb = lb + s * KC * LDB + wn + g;
#pragma unroll
        for (int r = 0; r < KC; r += 4) {
            double fa[MF], fb[NF];
#pragma unroll
            for (int p = 0; p < MF; ++p)
                fa[p] = sa[(r + t) * LDA + p * 8];
#pragma unroll
            for (int q = 0; q < NF; ++q)
                fb[q] = sb[(r + t) * LDB + q * 8];
#pragma unroll
            for (int p = 0; p < MF; ++p)
#pragma unroll
                for (int q = 0; q < NF; ++q)
                    mma_f64(acc[p][q], fa[p], fb[q], scr);
        }
        s ^= 1;
    }

    __global double *out = c + c_off + (size_t)get_group_id(1) * c_stride;
#pragma unroll
    for (int p = 0; p < MF; ++p)
#pragma unroll
        for (int q = 0; q < NF; ++q)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = i0 + wm + p * 8 + g, col = j0 + wn + q * 8 + 2 * t + h;
                if (row < M && col < N) {
                    __global double *dst = out + (size_t)row * ldc + col;
                    *dst = (accumulate ? *dst : 0.0) + alpha * acc[p][q][h];
                }
            }
}
