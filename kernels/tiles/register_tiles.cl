// Register tiles: C (+)= alpha * A'B, one source for float and for double.
// Chapter 6 builds it in float for S = Xc'Xc, chapter 8 in double for the
// trailing updates of its tiled QR.
//
// A (rows k, columns i) and B (rows k, columns j) are row-major with strides
// lda and ldb from offsets a_off and b_off: row k of each holds the k-th term
// of every sum, so C[i][j] = sum over k of A[k][i] * B[k][j]. C is M x N with
// stride ldc from c_off. A work-group owns a TM x TN tile of C; each of its
// (TM/WM) x (TN/WN) work-items keeps a WM x WN block of it in registers. The
// rows k go K at a time through local memory: for each row of a chunk, a
// work-item reads WM values of A's panel and WN of B's and does WM*WN
// multiply-adds with them. A work-item's rows (and columns) are groups of LV
// adjacent ones, spread a warp apart, so that its 16-byte reads from local
// memory fall on consecutive addresses across a warp.
//
// Build options (the host checks the shapes):
//   TYPE      float or double; LV its 16-byte vector width (4 or 2)
//   TM, TN    the work-group's tile; WM, WN a work-item's block (multiples of LV)
//   K         rows of A and B per chunk in local memory
//   GV        width of the loads from global memory: LV when every offset and
//             stride is a multiple of LV and C needs no bounds, else 1
//   STAGES    1: one local buffer, two barriers per chunk (store, compute);
//             2: two local buffers, one barrier per chunk
//   PREFETCH  1: the next chunk's loads are issued before this chunk's
//             arithmetic, and wait in registers; 0: loaded when needed
//   TRIANGLE  1: only the tiles on and below the diagonal of a square C
//   CHECK     1: M, N and the rows need not be multiples of the tile
//   DIAG_SKIP 1 (default): on the tiles of the diagonal, skip the blocks that
//             lie above it; 0: chapter 6's earlier kernel, one plain loop over
//             the WM x WN products (kept to measure what the change bought)
// The rows k_begin..k_end are split into chunks of k_chunk rows, one per
// get_group_id(1); chunk h writes its sums at c_off + h * c_stride.
// Built with TRACE (gpubook.trace, for chapter 6's figure), each work-item
// records every element of C it writes: step = its chunk h, index into c.
#if FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#ifndef DIAG_SKIP
#define DIAG_SKIP 1
#endif
#define PASTE(a, b) a##b
#define VECTOR(t, n) PASTE(t, n)
#define VT VECTOR(TYPE, LV)
#if GV == 1
#define GT TYPE
#else
#define GT VECTOR(TYPE, GV)
#endif
#if LV == 4
#define SPLIT(v, p) \
    { (p)[0] = (v).s0; (p)[1] = (v).s1; (p)[2] = (v).s2; (p)[3] = (v).s3; }
#define JOIN(x) ((VT)((x)[0], (x)[1], (x)[2], (x)[3]))
#else
#define SPLIT(v, p) { (p)[0] = (v).s0; (p)[1] = (v).s1; }
#define JOIN(x) ((VT)((x)[0], (x)[1]))
#endif
#define TX (TN / WN)                     // work-items along a row of the tile
#define TY (TM / WM)                     // and along a column
#define NT (TX * TY)                     // work-items per work-group
#define CA (K * TM / GV)                 // loads of GV values per chunk, A
#define CB (K * TN / GV)                 // and B
#define LA ((CA + NT - 1) / NT)          // per work-item
#define LB ((CB + NT - 1) / NT)

// Rows kk.. of one panel, `width` columns wide (TM for A, TN for B), from
// global memory into registers: `count` loads of GV values, `per_item` per
// work-item; zeros past the edges when CHECK.
static void fetch(GT *next, const int per_item, const int count, const int width,
                  __global const TYPE *p, const int ld, const int kk, const int k1,
                  const int left)
{
    const int lid = get_local_id(0);
#pragma unroll
    for (int l = 0; l < per_item; ++l) {
        const int e = lid + l * NT, k = kk + e / (width / GV),
                  i = e % (width / GV) * GV;
        next[l] = 0;
#if CHECK
        if ((per_item * NT == count || e < count) && k < k1 && i < left)
#else
        if (per_item * NT == count || e < count)
#endif
            next[l] = *(__global const GT *)(p + (size_t)k * ld + i);
    }
}

// The fetched rows of one panel into its local buffer s.
static void store(__local GT *panel, const GT *next, const int per_item,
                  const int count, const int s)
{
    const int lid = get_local_id(0);
#pragma unroll
    for (int l = 0; l < per_item; ++l)
        if (per_item * NT == count || lid + l * NT < count)
            panel[s * count + lid + l * NT] = next[l];
}

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void register_tiles(__global const TYPE *restrict a, const int a_off, const int lda,
                    __global const TYPE *restrict b, const int b_off, const int ldb,
                    __global TYPE *restrict c, const int c_off, const int ldc,
                    const int M, const int N, const int k_begin, const int k_end,
                    const int k_chunk, const int c_stride, const int tiles_x,
                    const TYPE alpha, const int accumulate
#ifdef TRACE
                    , __global int *trace
#endif
                    )
{
#ifdef TRACE
    TRACE_START;
#endif
    __local VT la[STAGES * K * TM / LV];  // la[k * TM/LV + v]: row k, columns LV*v..
    __local VT lb[STAGES * K * TN / LV];
    const int g = get_group_id(0);
#if TRIANGLE
    int bi = (int)((sqrt(8.0f * g + 1.0f) - 1.0f) * 0.5f);
    while (bi * (bi + 1) / 2 > g) --bi;              // float rounding, either way
    while ((bi + 1) * (bi + 2) / 2 <= g) ++bi;
    const int bj = g - bi * (bi + 1) / 2;
#else
    const int bi = g / tiles_x, bj = g % tiles_x;
#endif
    const int lid = get_local_id(0), tx = lid % TX, ty = lid / TX;
    const int i0 = bi * TM, j0 = bj * TN;
#if TRIANGLE && DIAG_SKIP
    // On a tile of the diagonal, a work-item's LV x LV block (hp, hq) with
    // hp < hq holds only entries above the diagonal (rows and columns are
    // spread alike, TX = TY): every work-item skips the same blocks.
#if TX == TY
    const bool diag = bi == bj;
#else
    const bool diag = false;
#endif
#endif
    const int k0 = k_begin + get_group_id(1) * k_chunk;
    const int k1 = min(k_end, k0 + k_chunk);
    __global const TYPE *pa = a + a_off + i0, *pb = b + b_off + j0;
    __local GT *ga = (__local GT *)la, *gb = (__local GT *)lb;

    TYPE acc[WM][WN];
#pragma unroll
    for (int p = 0; p < WM; ++p)
#pragma unroll
        for (int q = 0; q < WN; ++q)
            acc[p][q] = 0;

    GT na[LA], nb[LB];                   // a chunk on its way from global memory
#if PREFETCH
    fetch(na, LA, CA, TM, pa, lda, k0, k1, M - i0);
    fetch(nb, LB, CB, TN, pb, ldb, k0, k1, N - j0);
#endif
    // With two buffers, chunk t goes to buffer t % 2: a work-item that stores
    // chunk t + 1 while others still compute on chunk t writes the other
    // buffer, and one barrier per chunk is enough.
    for (int kc = k0, s = 0; kc < k1; kc += K, s = (s + 1) % STAGES) {
#if !PREFETCH
        fetch(na, LA, CA, TM, pa, lda, kc, k1, M - i0);
        fetch(nb, LB, CB, TN, pb, ldb, kc, k1, N - j0);
#endif
        store(ga, na, LA, CA, s);
        store(gb, nb, LB, CB, s);
        barrier(CLK_LOCAL_MEM_FENCE);
#if PREFETCH
        if (kc + K < k1) {
            fetch(na, LA, CA, TM, pa, lda, kc + K, k1, M - i0);
            fetch(nb, LB, CB, TN, pb, ldb, kc + K, k1, N - j0);
        }
#endif
#pragma unroll
        for (int k = 0; k < K; ++k) {
            TYPE ra[WM], rb[WN];
#pragma unroll
            for (int h = 0; h < WM / LV; ++h)
                SPLIT(la[(s * K + k) * (TM / LV) + h * TY + ty], ra + LV * h)
#pragma unroll
            for (int h = 0; h < WN / LV; ++h)
                SPLIT(lb[(s * K + k) * (TN / LV) + h * TX + tx], rb + LV * h)
#if TRIANGLE && !DIAG_SKIP
#pragma unroll
            for (int p = 0; p < WM; ++p)
#pragma unroll
                for (int q = 0; q < WN; ++q)
                    acc[p][q] = fma(ra[p], rb[q], acc[p][q]);
#else
#pragma unroll
            for (int hp = 0; hp < WM / LV; ++hp)
#pragma unroll
                for (int hq = 0; hq < WN / LV; ++hq) {
#if TRIANGLE
                    // this block of the diagonal tile lies above it
                    if (diag && hp < hq)
                        continue;
#endif
#pragma unroll
                    for (int p = hp * LV; p < (hp + 1) * LV; ++p)
#pragma unroll
                        for (int q = hq * LV; q < (hq + 1) * LV; ++q)
                            acc[p][q] = fma(ra[p], rb[q], acc[p][q]);
                }
#endif
        }
#if STAGES == 1
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
    }

    __global TYPE *pc = c + c_off + (size_t)get_group_id(1) * c_stride;
#pragma unroll
    for (int p = 0; p < WM; ++p) {
        const int i = i0 + p / LV * (TY * LV) + ty * LV + p % LV;
#pragma unroll
        for (int hq = 0; hq < WN / LV; ++hq) {
            const int j = j0 + hq * (TX * LV) + tx * LV;
            __global TYPE *out = pc + (size_t)i * ldc + j;
#ifdef TRACE
            for (int r = 0; r < LV; ++r)
#if CHECK
                if (i < M && j + r < N)
#endif
                    TRACE_AT(get_group_id(1), (int)(out - c) + r);
#endif
#if GV > 1 && !CHECK
            const VT sum = alpha * JOIN(acc[p] + LV * hq);
            VECTOR(vstore, LV)(accumulate ? VECTOR(vload, LV)(0, out) + sum : sum, 0,
                               out);
#else
#pragma unroll
            for (int r = 0; r < LV; ++r)
#if CHECK
                if (i < M && j + r < N)
#endif
                    out[r] = (accumulate ? out[r] : 0) + alpha * acc[p][LV * hq + r];
#endif
        }
    }
}
