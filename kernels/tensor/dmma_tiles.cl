// C (+)= alpha * A'B in double on the FP64 tensor cores (mma.sync in the
// build's FP64 shape, F64_M x 8 x F64_K: m8n8k4, or Hopper's m16n8k4 / m16n8k8;
// NVIDIA only; joined after kernels/tensor/mma.cl by gpubook.dmma): the same
// arguments and the same result as kernels/tiles/register_tiles.cl built in
// double, so that chapter 8's step 6 can run its products either way.
//
// A (rows k, columns i) and B (rows k, columns j) are row-major with strides
// lda, ldb from offsets a_off, b_off; C[i][j] = sum over k of A[k][i] B[k][j].
// A work-group owns a TM x TN tile of C; its WARPS_M x WARPS_N warps each
// own a (TM / WARPS_M) x (TN / WARPS_N) block, MF x NF fragments of F64_M x 8
// (F64_C doubles per lane, c_h = C[g + 8 (h / 2)][2t + h % 2]). The rows k go
// KC at a time through STAGES local buffers: with two, one barrier per chunk;
// with one (room for a KC twice as deep), a second barrier before each store.
// The next chunk's loads from global memory are issued before this chunk's
// products and wait in registers. Each step of F64_K rows is one mma per fragment:
// lane (g, t) reads A[k0 + t + 4 (i / R)][i0 + g + 8 (i % R)] (R = F64_M / 8)
// and B[k0 + t + 4 i][j0 + g] (g = lane / 4, t = lane % 4), as mma.cl lays out
// A' (the columns of A are the rows of the product).
// Local rows are 8 doubles past a multiple of 16 long (TM + 8, or TM where TM
// is itself an odd multiple of 8): the 4 rows t of a fragment load then
// fall 16 banks apart, so a warp's 64-bit loads take the two passes that
// 256 bytes need and no more.
// PAIRS=1 (each warp's block a multiple of 16 wide both ways): within every 16
// columns, local memory keeps column c + 8 beside column c, so that a lane
// reads the two values it needs from columns g and g + 8 as one 16-byte load
// (a double2: half the load instructions). Rows are then TM + 4 doubles long,
// 32 bytes apart modulo 128: a quarter warp's 16-byte loads hit 32 banks once.
//
// ATRANS=1: A is given the other way round, row i holding the terms k of
// column i of the product (A[a_off + i lda + k]): the Q1 = A R^-1 of chapter 8
// then reads A as it is stored, instead of a transposed copy. A work-item's
// loads then run along k, so that a warp reads two rows of KC doubles.
// Every warp computes its whole block, even where it lies past M or N: on an
// H200 (2026-11-28), a test around each fragment's mma slowed the Gram product
// of 1,000,000 x 129 from 2.81 to 3.96 ms, and one test per warp and chunk
// saved nothing there and cost 1 ms of the 34 ms of 25,000 x 5,001's. The host
// computes a matrix's last few rows or columns apart instead (gpubook.chapters.
// lsq.cholqr's edges). Running the Gram's last row in the same launch, as a third
// row of tiles whose warps past M skip their products, took 1.50 ms against 1.20 ms
// apart (tools/probe_full_width.py, 2026-11-28).
//
// Build options: TM, TN, WARPS_M, WARPS_N, KC (multiple of F64_K), STAGES (1 or
// 2, default 2), PAIRS (0 or 1, default 0), ATRANS (default 0), F64_M, F64_K
// (mma.cl), TRIANGLE (only tiles on and below the diagonal of a square C),
// UPPER (below), EMULATE (gpubook.tensor). The rows k_begin..k_end are split into
// chunks of k_chunk, one per get_group_id(1); chunk h writes its sums at
// c_off + h * c_stride.
//
// UPPER=1 (square tiles, a square C; not with TRIANGLE or ATRANS): C = A'B for a
// lower-triangular A (A[k][i] = 0 for k < i) and an upper-triangular B (B[k][j] = 0
// for k > j), indices as above (A[k][i] at a_off + k lda + i); chapter 8's
// R = R2 R1 in one launch. Only the tiles that touch C's upper triangle run (bi <= bj,
// tiles_x (tiles_x + 1) / 2 work-groups), and each sums over its rows
// max(k0, i0)..min(k1, j0 + TN) only: the other terms are zero. Group n
// takes diagonal d = tiles_x - 1 - r, where r (r + 1) / 2 <= n < (r + 1) (r + 2) / 2,
// and on it the tile bi = n - r (r + 1) / 2, bj = bi + d: the farthest diagonals,
// whose sums are the longest, start first.
#ifndef STAGES
#define STAGES 2
#endif
#define NTH (32 * WARPS_M * WARPS_N)
#define WTM (TM / WARPS_M)
#define WTN (TN / WARPS_N)
#define MF (WTM / F64_M)
#define NF (WTN / 8)
#ifndef PAIRS
#define PAIRS 0
#endif
#ifndef ATRANS
#define ATRANS 0
#endif
#ifndef TRIANGLE
#define TRIANGLE 0
#endif
#ifndef UPPER
#define UPPER 0
#endif
#if UPPER && (TRIANGLE || ATRANS || TM != TN)
#error "UPPER takes square tiles, and neither TRIANGLE nor ATRANS"
#endif
#define PAD(w) (PAIRS ? 4 : (w) % 16 == 8 ? 0 : 8)
#define LDA (TM + PAD(TM))
#define LDB (TN + PAD(TN))
#define LA ((KC * TM + NTH - 1) / NTH)
#define LB ((KC * TN + NTH - 1) / NTH)

// Element e of a chunk of A read the other way round: its term k and column i,
// in blocks of ACROSS terms x 32 / ACROSS columns (one block per 32 consecutive
// e: a warp reads ACROSS terms next to each other from each of 32 / ACROSS rows).
#ifndef ACROSS
#define ACROSS 4
#endif
inline int across_k(const int e)
{
    return e % ACROSS + ACROSS * (e / 32 % (KC / ACROSS));
}

inline int across_i(const int e)
{
    return e % 32 / ACROSS + 32 / ACROSS * (e / 32 / (KC / ACROSS));
}

// One chunk of a panel (KC rows, `width` columns) from global memory into
// registers, zeros past the rows k1 and the columns `left`.
static void fetch(double *next, const int per_item, const int width,
                  __global const double *p, const int ld, const int kk, const int k1,
                  const int left)
{
    const int lid = get_local_id(0);
#pragma unroll
    for (int l = 0; l < per_item; ++l) {
        const int e = lid + l * NTH, k = kk + e / width, i = e % width;
        next[l] = (e < KC * width && k < k1 && i < left) ? p[(size_t)k * ld + i] : 0.0;
    }
}

// The same chunk of A given the other way round (ATRANS): column i of the
// panel is row i of the buffer. With ACROSS = 4 (the default), four lanes read
// four terms k next to each other (32 bytes) of each of 8 rows i; their stores
// to local memory then fall on rows k 0-3 of 8 columns, which take the two
// passes 256 bytes need (16 lanes along a row would put 16 rows of one column
// on two banks: 8 passes).
static void fetch_across(double *next, __global const double *p, const int ld,
                         const int kk, const int k1, const int left)
{
    const int lid = get_local_id(0);
#pragma unroll
    for (int l = 0; l < LA; ++l) {
        const int e = lid + l * NTH, k = kk + across_k(e), i = across_i(e);
        next[l] = (e < KC * TM && k < k1 && i < left) ? p[(size_t)i * ld + k] : 0.0;
    }
}

// Where column c of a panel sits in a local row (PAIRS: c + 8 beside c in every 16).
inline int slot(const int c)
{
    return PAIRS ? (c & ~15) | ((c & 7) << 1) | ((c >> 3) & 1) : c;
}

static void store(__local double *panel, const double *next, const int per_item,
                  const int width, const int ldl, const int across)
{
    const int lid = get_local_id(0);
#pragma unroll
    for (int l = 0; l < per_item; ++l) {
        const int e = lid + l * NTH;
        if (e < KC * width) {
            if (across)
                panel[across_k(e) * ldl + slot(across_i(e))] = next[l];
            else
                panel[(e / width) * ldl + slot(e % width)] = next[l];
        }
    }
}

static void fetch_a(double *next, __global const double *p, const int ld, const int kk,
                    const int k1, const int left)
{
    if (ATRANS)
        fetch_across(next, p, ld, kk, k1, left);
    else
        fetch(next, LA, TM, p, ld, kk, k1, left);
}

// The row r of a triangle of tiles enumerated row by row (r + 1 tiles in row r)
// that holds tile n: r (r + 1) / 2 <= n < (r + 1) (r + 2) / 2.
inline int triangle_row(const int n)
{
    int r = (int)((sqrt(8.0f * n + 1.0f) - 1.0f) * 0.5f);
    while (r * (r + 1) / 2 > n) --r;                 // float rounding, either way
    while ((r + 1) * (r + 2) / 2 <= n) ++r;
    return r;
}

__kernel __attribute__((reqd_work_group_size(NTH, 1, 1)))
void dmma_tiles(__global const double *restrict a, const int a_off, const int lda,
                __global const double *restrict b, const int b_off, const int ldb,
                __global double *restrict c, const int c_off, const int ldc,
                const int M, const int N, const int k_begin, const int k_end,
                const int k_chunk, const int c_stride, const int tiles_x,
                const double alpha, const int accumulate)
{
    __local double la[STAGES * KC * LDA] __attribute__((aligned(16)));
    __local double lb[STAGES * KC * LDB] __attribute__((aligned(16)));
    __local double scratch[EMULATE ? NTH / 32 * MMA_F64_SCRATCH : 1];
    const int grp = get_group_id(0);
#if TRIANGLE
    const int bi = triangle_row(grp), bj = grp - bi * (bi + 1) / 2;
#elif UPPER
    const int tr = triangle_row(grp), bi = grp - tr * (tr + 1) / 2, bj = bi + tiles_x - 1 - tr;
#else
    const int bi = grp / tiles_x, bj = grp % tiles_x;
#endif
    const int i0 = bi * TM, j0 = bj * TN;
    const int lid = get_local_id(0), warp = lid / 32, g = mma_lane() / 4,
              t = mma_lane() % 4;
    const int wm = warp / WARPS_N * WTM, wn = warp % WARPS_N * WTN;
    __local double *scr = scratch + (EMULATE ? warp * MMA_F64_SCRATCH : 0);
    int k0 = k_begin + get_group_id(1) * k_chunk;
    int k1 = min(k_end, k0 + k_chunk);
#if UPPER
    k1 = min(k1, j0 + TN);  // rows k >= j0 + TN: B[k][j] = 0 for every j of the tile
    k0 = max(k0, i0);       // rows k < i0: A[k][i] = 0 for every i of the tile
#endif
    __global const double *pa = a + a_off + (ATRANS ? (size_t)i0 * lda : i0),
                          *pb = b + b_off + j0;

    double acc[MF][NF][F64_C];
#pragma unroll
    for (int p = 0; p < MF; ++p)
#pragma unroll
        for (int q = 0; q < NF; ++q)
#pragma unroll
            for (int h = 0; h < F64_C; ++h)
                acc[p][q][h] = 0.0;

    double na[LA], nb[LB];
    fetch_a(na, pa, lda, k0, k1, M - i0);
    fetch(nb, LB, TN, pb, ldb, k0, k1, N - j0);
    int s = 0;
    for (int kk = k0; kk < k1; kk += KC) {
        if (STAGES == 1)
            barrier(CLK_LOCAL_MEM_FENCE);  // every warp is done with the last chunk
        store(la + s * KC * LDA, na, LA, TM, LDA, ATRANS);
        store(lb + s * KC * LDB, nb, LB, TN, LDB, 0);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (kk + KC < k1) {  // the next chunk, in flight during the products
            fetch_a(na, pa, lda, kk + KC, k1, M - i0);
            fetch(nb, LB, TN, pb, ldb, kk + KC, k1, N - j0);
        }
        __local const double *sa = la + s * KC * LDA + wm + (PAIRS ? 2 : 1) * g;
        __local const double *sb = lb + s * KC * LDB + wn + (PAIRS ? 2 : 1) * g;
#pragma unroll
        for (int r = 0; r < KC; r += F64_K) {
            double fa[MF][F64_A], fb[NF][F64_B];
#if PAIRS
            // columns 16 u + g (x) and 16 u + 8 + g (y) of the warp's block, rows r +
            // t + 4 j
#pragma unroll
            for (int u = 0; u < WTM / 16; ++u)
#pragma unroll
                for (int j = 0; j < F64_K / 4; ++j) {
                    const double2 v =
                            *(__local const double2 *)(sa + (r + t + 4 * j) * LDA +
                                                       16 * u);
                    fa[16 * u / F64_M][j * F64_R + 16 * u % F64_M / 8] = v.x;
                    fa[(16 * u + 8) / F64_M][j * F64_R + (16 * u + 8) % F64_M / 8] =
                            v.y;
                }
#pragma unroll
            for (int u = 0; u < WTN / 16; ++u)
#pragma unroll
                for (int j = 0; j < F64_B; ++j) {
                    const double2 v =
                            *(__local const double2 *)(sb + (r + t + 4 * j) * LDB +
                                                       16 * u);
                    fb[2 * u][j] = v.x;
                    fb[2 * u + 1][j] = v.y;
                }
#else
#pragma unroll
            for (int p = 0; p < MF; ++p)
#pragma unroll
                for (int i = 0; i < F64_A; ++i)
                    fa[p][i] = sa[(r + t + 4 * (i / F64_R)) * LDA + p * F64_M +
                                  8 * (i % F64_R)];
#pragma unroll
            for (int q = 0; q < NF; ++q)
#pragma unroll
                for (int i = 0; i < F64_B; ++i)
                    fb[q][i] = sb[(r + t + 4 * i) * LDB + q * 8];
#endif
#pragma unroll
            for (int p = 0; p < MF; ++p)
#pragma unroll
                for (int q = 0; q < NF; ++q)
                    mma_f64(acc[p][q], fa[p], fb[q], scr);
        }
        s = (s + 1) % STAGES;
    }

    __global double *out = c + c_off + (size_t)get_group_id(1) * c_stride;
#pragma unroll
    for (int p = 0; p < MF; ++p)
#pragma unroll
        for (int q = 0; q < NF; ++q)
#pragma unroll
            for (int h = 0; h < F64_C; ++h) {
                const int row = i0 + wm + p * F64_M + g + 8 * (h / 2);
                const int col = j0 + wn + q * 8 + 2 * t + h % 2;
                if (row < M && col < N) {
                    __global double *dst = out + (size_t)row * ldc + col;
                    *dst = (accumulate ? *dst : 0.0) + alpha * acc[p][q][h];
                }
            }
}
