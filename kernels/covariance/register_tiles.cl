// Step 4: register tiles and float4 loads.
// A work-group owns a TB x TB tile of S and has (TB/WPT)^2 work-items; each
// work-item keeps a WPT x WPT block of the tile in registers. For each chunk
// of K rows, the work-group stages the two K x TB panels of the data in local
// memory with float4 loads; then, for each of the K rows, a work-item reads
// WPT values of each panel and does WPT*WPT multiply-adds with them: a value
// read from local memory serves WPT multiply-adds, a value read from global
// memory TB. While it computes on one chunk, each work-item already has the
// loads of the next chunk in flight (held in registers, stored after the
// compute), so memory latency hides behind arithmetic.
// A work-item's WPT rows (and columns) are WPT/4 groups of 4 adjacent ones,
// TB/(WPT/4) apart: its float4 reads from local memory then fall on
// consecutive addresses across a warp, free of bank conflicts.
// Two layouts of the output tiles: TRIANGLE = 1 launches the tiles of the
// lower triangle of a square S (group g = tile (bi, bj), bj <= bi), reading
// both panels from one matrix; TRIANGLE = 0 launches a full grid of
// tiles_x columns of tiles over A's columns (rows of S) x B's columns, for
// the tile pairs of the out-of-core path. A is m x lda, B is m x ldb, S is
// ldc wide; m is a multiple of K, the panels' widths multiples of TB. The
// sums are written to S, or added to it when `accumulate` is set.
#define TPR (TB / WPT)                 // work-items along a row of the tile
#define NT (TPR * TPR)                 // work-items per work-group
#define G (WPT / 4)                    // float4 groups per work-item and side
#define LOADS (K * TB / 4 / NT)        // float4 loads per work-item, panel and chunk

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void register_tiles(__global const float4 *restrict a, __global const float4 *restrict b,
                    __global float *restrict s, const int m, const int lda, const int ldb,
                    const int ldc, const int tiles_x, const int accumulate)
{
    __local float4 pa[K * TB / 4];     // pa[k * TB/4 + c]: row k, columns 4c..4c+3
    __local float4 pb[K * TB / 4];
    const int g = get_group_id(0);
#if TRIANGLE
    int bi = (int)((sqrt(8.0f * g + 1.0f) - 1.0f) * 0.5f);
    while (bi * (bi + 1) / 2 > g) --bi;
    while ((bi + 1) * (bi + 2) / 2 <= g) ++bi;
    const int bj = g - bi * (bi + 1) / 2;
#else
    const int bi = g / tiles_x, bj = g % tiles_x;
#endif
    const int lid = get_local_id(0);
    const int tx = lid % TPR, ty = lid / TPR;
    const int lda4 = lda / 4, ldb4 = ldb / 4;
    const int col1 = bi * (TB / 4), col2 = bj * (TB / 4);   // in float4s

    float acc[WPT][WPT];
#pragma unroll
    for (int p = 0; p < WPT; ++p)
#pragma unroll
        for (int q = 0; q < WPT; ++q)
            acc[p][q] = 0.0f;

    float4 na[LOADS], nb[LOADS];       // the next chunk, on its way from global memory
#pragma unroll
    for (int l = 0; l < LOADS; ++l) {
        const int e = lid + l * NT, k = e / (TB / 4), c = e % (TB / 4);
        na[l] = a[(size_t)k * lda4 + col1 + c];
        nb[l] = b[(size_t)k * ldb4 + col2 + c];
    }
    for (int i0 = 0; i0 < m; i0 += K) {
#pragma unroll
        for (int l = 0; l < LOADS; ++l) {
            pa[lid + l * NT] = na[l];
            pb[lid + l * NT] = nb[l];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (i0 + K < m) {
#pragma unroll
            for (int l = 0; l < LOADS; ++l) {
                const int e = lid + l * NT, k = i0 + K + e / (TB / 4), c = e % (TB / 4);
                na[l] = a[(size_t)k * lda4 + col1 + c];
                nb[l] = b[(size_t)k * ldb4 + col2 + c];
            }
        }
#pragma unroll
        for (int k = 0; k < K; ++k) {
            float ra[WPT], rb[WPT];
#pragma unroll
            for (int h = 0; h < G; ++h) {
                vstore4(pa[k * (TB / 4) + h * TPR + ty], 0, ra + 4 * h);
                vstore4(pb[k * (TB / 4) + h * TPR + tx], 0, rb + 4 * h);
            }
#pragma unroll
            for (int p = 0; p < WPT; ++p)
#pragma unroll
                for (int q = 0; q < WPT; ++q)
                    acc[p][q] = fma(ra[p], rb[q], acc[p][q]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const int row0 = bi * TB, colb = bj * TB;
#pragma unroll
    for (int h = 0; h < G; ++h)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int p = 4 * h + r;
            __global float *out = s + (size_t)(row0 + h * (TB / G) + 4 * ty + r) * ldc + colb;
#pragma unroll
            for (int hq = 0; hq < G; ++hq) {
                const int c = hq * (TB / G) + 4 * tx;
                float4 v = accumulate ? vload4(0, out + c) : (float4)(0.0f);
                v += (float4)(acc[p][4 * hq], acc[p][4 * hq + 1], acc[p][4 * hq + 2], acc[p][4 * hq + 3]);
                vstore4(v, 0, out + c);
            }
        }
}
