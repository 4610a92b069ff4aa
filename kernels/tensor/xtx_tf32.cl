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
//
// Where MODE 2 splits its floats (LATE below): on their way from global into
// local memory (local memory holds the pair (hi, lo) side by side: one 8-byte
// load gives a lane both parts), or as each lane loads a fragment (local
// memory holds the raw float, as in MODE 0; MODE 1 stores tf32(x)). The late
// split reads half the bytes from local memory per mma; on the H200 it took
// 3xTF32 from 70.7 to 46.7 ms at 131,072 x 4,096 (gpubook.tensor.XTX_SHAPES). Two stages: chunk c lives in stage c % 2,
// and chunk c + 1 is loaded from global memory into registers before chunk
// c's mma work, then split and stored after it: one barrier per chunk. On a
// tile of the diagonal A's panel is B's: it is loaded and stored once.
//
// Build options (gpubook.tensor.XtX checks them):
//   T, WARPS_M, WARPS_N, KC   the tile, its warps, the rows per chunk
//   MODE      0, 1, 2 as above
//   GV        4: 16-byte global loads (needs n % 4 == 0 and ldx % 4 == 0);
//             1: one float per load, each checked against n
//   DIAG_SKIP 1 (default): on a tile of the diagonal, a warp skips the
//             fragments that lie wholly above it (the other tiles run a copy
//             of the mma work without that branch)
//   LATE      MODE 2 only. 0 (default): split on the way into local memory,
//             as above. 1: local memory holds the raw floats (PARTS = 1),
//             and each lane splits its operands as it loads a fragment: half
//             the local memory and half the local loads per mma, for a few
//             more integer operations per operand (the same hi and lo)
//
// Local memory: 2 stages x 2 panels x KC rows x LDL x PARTS floats, with
// PARTS = 2 (hi, lo) in MODE 2 split early and 1 otherwise. T = 128, KC = 8,
// split early: 2 x 2 x 8 x 132 x 2 x 4 B = 33,792 B; KC = 16 would need
// 67,584 B, over the 48 KB that NVIDIA's OpenCL gives a work-group. Split
// late, KC = 16: 2 x 2 x 16 x 136 x 4 B = 34,816 B.
//
// Bank conflicts. A fragment load reads, in lane (g = lane / 4, t = lane % 4),
// row k = kk + t (or + 4) and column c + g of a panel, c a multiple of 8.
//   PARTS 1: word t LDL + g (+ a constant); LDL = T + 8 is 8 or 24 modulo 32
//     (T is a multiple of 16), so t LDL mod 32 is {0, 8, 16, 24} or
//     {0, 24, 16, 8} and the 32 lanes hit 32 different banks.
//   PARTS 2: 8-byte loads, served half a warp (16 lanes, g in 0..3 or 4..7)
//     at a time: words 2 (t LDL + g) and + 1; LDL = T + 4 is 4 modulo 16,
//     so 2 t LDL mod 32 is {0, 8, 16, 24} and 2 g + {0, 1} spans 8 words:
//     16 lanes, 32 different banks.
//   The stores of a chunk: with GV = 4 each lane writes 16 consecutive bytes
//   (PARTS 1) and rows start on a multiple of 8 lanes when T >= 32: a quarter
//   warp writes 128 consecutive bytes. In MODE 2 a lane writes 32 bytes
//   (hi0 lo0 hi1 lo1 | hi2 lo2 hi3 lo3) in two 16-byte stores; lanes 4..7 of
//   each quarter warp write their second half first, so that each store's 8
//   lanes hit the 16-byte slots 0 2 4 6 9 11 13 15 of their 256 bytes, which
//   are 0 2 4 6 1 3 5 7 modulo 128 bytes: all 32 banks, no conflict.
#ifndef GV
#define GV 1
#endif
#ifndef DIAG_SKIP
#define DIAG_SKIP 1
#endif
#ifndef LATE
#define LATE 0
#endif
#if LATE && MODE != 2
#error "LATE splits 3xTF32's operands: MODE 2 only"
#endif
#define NTH (32 * WARPS_M * WARPS_N)
#define WTM (T / WARPS_M)
#define WTN (T / WARPS_N)
#define MT (WTM / 16)
#define NF (WTN / 8)
#if MODE == 2 && !LATE
#define PARTS 2
#define LDL (T + 4)
#else
#define PARTS 1
#define LDL (T + 8)
#endif
#define STAGE (KC * LDL * PARTS)            // floats of one panel's chunk in local memory
#define LOADS (KC * T / GV / NTH)           // global loads per work-item per panel and chunk
#if GV == 4
#define GT float4
#else
#define GT float
#endif

// A float as the tensor core will be given it: hi, and in MODE 2 lo
// (with LATE, local memory keeps the raw float: hi = v until part splits it).
inline void operand(const float v, float *hi, float *lo)
{
#if MODE == 0 || LATE
    *hi = v;
#else
    *hi = tf32_round(v);
#endif
    *lo = tf32_round(v - *hi);
}

// Rows k0.. of the panel of columns c0.. into registers; zeros past m and n.
static void fetch(GT *next, __global const float *restrict x, const int m, const int n, const int ldx,
                  const int k0, const int c0)
{
    const int lid = get_local_id(0);
#pragma unroll
    for (int l = 0; l < LOADS; ++l) {
        const int e = lid + l * NTH, k = k0 + e / (T / GV), c = c0 + e % (T / GV) * GV;
#if GV == 4
        next[l] = k < m && c < n ? *(__global const float4 *)(x + (size_t)k * ldx + c) : (float4)(0.0f);
#else
        next[l] = k < m && c < n ? x[(size_t)k * ldx + c] : 0.0f;
#endif
    }
}

// The fetched rows, split, into one stage of a panel.
static void store(__local float *panel, const GT *next)
{
    const int lid = get_local_id(0);
#pragma unroll
    for (int l = 0; l < LOADS; ++l) {
        const int e = lid + l * NTH, r = e / (T / GV), c = e % (T / GV) * GV;
        __local float *q = panel + (r * LDL + c) * PARTS;
#if GV == 4
        float h0, h1, h2, h3, l0, l1, l2, l3;
        operand(next[l].s0, &h0, &l0);
        operand(next[l].s1, &h1, &l1);
        operand(next[l].s2, &h2, &l2);
        operand(next[l].s3, &h3, &l3);
#if PARTS == 2
        const float4 first = (float4)(h0, l0, h1, l1), second = (float4)(h2, l2, h3, l3);
        const int swap = (lid >> 2) & 1;                    // see "Bank conflicts" above
        *(__local float4 *)(q + 4 * swap) = swap ? second : first;
        *(__local float4 *)(q + 4 - 4 * swap) = swap ? first : second;
#else
        *(__local float4 *)q = (float4)(h0, h1, h2, h3);
#endif
#else
        float h, lo;
        operand(next[l], &h, &lo);
#if PARTS == 2
        *(__local float2 *)q = (float2)(h, lo);
#else
        *q = h;
#endif
#endif
    }
}

// One operand of a fragment: row k, column c of a panel's stage.
inline void part(__local const float *panel, const int k, const int c, float *hi, float *lo)
{
#if PARTS == 2
    const float2 v = *(__local const float2 *)(panel + (k * LDL + c) * 2);
    *hi = v.x;
    *lo = v.y;
#elif LATE
    *hi = tf32_round(panel[k * LDL + c]);
    *lo = tf32_round(panel[k * LDL + c] - *hi);
#else
    *hi = panel[k * LDL + c];
#endif
}

// Fragment (p, q) of the warp at (wm, wn) lies wholly above the diagonal of
// a tile of the diagonal: its smallest column exceeds its largest row. The
// same for all of a warp's lanes.
#define ABOVE(p, q) (wn + (q) * 8 > wm + (p) * 16 + 15)

// The mma work of one chunk in local memory (panels pa and pb) for one warp.
// `skip`: leave out the fragments ABOVE the diagonal (a constant at each call:
// the tiles off the diagonal get a copy without a branch).
static void chunk(float acc[MT][NF][4], __local const float *pa, __local const float *pb,
                  const int wm, const int wn, const bool skip, __local float *scr)
{
    const int g = mma_lane() / 4, t = mma_lane() % 4;
#if MODE == 2
#define LO(v) &(v)
#else
    float unused;
#define LO(v) &unused
#endif
#pragma unroll
    for (int kk = 0; kk < KC; kk += 8) {
        float ah[MT][4];
#if MODE == 2
        float al[MT][4];
#endif
#pragma unroll
        for (int p = 0; p < MT; ++p) {
            const int r = wm + p * 16 + g;
            part(pa, kk + t, r, &ah[p][0], LO(al[p][0]));
            part(pa, kk + t, r + 8, &ah[p][1], LO(al[p][1]));
            part(pa, kk + t + 4, r, &ah[p][2], LO(al[p][2]));
            part(pa, kk + t + 4, r + 8, &ah[p][3], LO(al[p][3]));
        }
#pragma unroll
        for (int q = 0; q < NF; ++q) {
            const int c = wn + q * 8 + g;
            float bh[2];
#if MODE == 2
            float bl[2];
#endif
            part(pb, kk + t, c, &bh[0], LO(bl[0]));
            part(pb, kk + t + 4, c, &bh[1], LO(bl[1]));
            // Each fragment adds lo hi, hi lo, then hi hi (the small products
            // first), in one pass over p each: independent mma follow each other.
#if MODE == 2
#pragma unroll
            for (int p = 0; p < MT; ++p)
                if (!(skip && ABOVE(p, q)))
                    mma_tf32(acc[p][q], al[p][0], al[p][1], al[p][2], al[p][3], bh[0], bh[1], scr);
#pragma unroll
            for (int p = 0; p < MT; ++p)
                if (!(skip && ABOVE(p, q)))
                    mma_tf32(acc[p][q], ah[p][0], ah[p][1], ah[p][2], ah[p][3], bl[0], bl[1], scr);
#endif
#pragma unroll
            for (int p = 0; p < MT; ++p)
                if (!(skip && ABOVE(p, q)))
                    mma_tf32(acc[p][q], ah[p][0], ah[p][1], ah[p][2], ah[p][3], bh[0], bh[1], scr);
        }
    }
#undef LO
}

// The warp's sums into S (stored the first time, added after) and back to
// zero. The tensor core adds each product into its float accumulator
// rounding toward zero, so a long sum drifts low (on the H200, about 1e-3
// of S after 131,072 rows); adding the warp's sums into S every FLUSH rows,
// rounded to nearest, keeps that drift to what FLUSH rows cause.
static void flush(float acc[MT][NF][4], __global float *s, const int lds, const int n, const int i0,
                  const int j0, const int wm, const int wn, const bool diag, const bool first)
{
    const int g = mma_lane() / 4, t = mma_lane() % 4, r0 = i0 + wm, c0 = j0 + wn;
#pragma unroll
    for (int p = 0; p < MT; ++p)
#pragma unroll
        for (int q = 0; q < NF; ++q)
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int row = r0 + p * 16 + g + 8 * (i / 2), col = c0 + q * 8 + 2 * t + i % 2;
                const float v = EMULATE && DIAG_SKIP && diag && ABOVE(p, q) ? NAN : acc[p][q][i];
                if (row < n && col <= row) {
                    __global float *d = s + (size_t)row * lds + col;
                    *d = first ? v : *d + v;
                }
                acc[p][q][i] = 0.0f;
            }
}

__kernel __attribute__((reqd_work_group_size(NTH, 1, 1)))
void xtx_tf32(__global const float *restrict x, const int m, const int n, const int ldx,
              __global float *restrict s, const int lds)
{
    __local float4 la4[STAGE / 2], lb4[STAGE / 2];   // two stages each; float4: 16-byte aligned
    __local float scratch[EMULATE ? NTH / 32 * MMA_TF32_SCRATCH : 1];
    __local float *la = (__local float *)la4, *lb = (__local float *)lb4;
    const int grp = get_group_id(0);
    int bi = (int)((sqrt(8.0f * grp + 1.0f) - 1.0f) * 0.5f);
    while (bi * (bi + 1) / 2 > grp) --bi;            // float rounding, either way
    while ((bi + 1) * (bi + 2) / 2 <= grp) ++bi;
    const int bj = grp - bi * (bi + 1) / 2;
    const int i0 = bi * T, j0 = bj * T;
    const bool diag = bi == bj;                      // A's panel is B's: load it once
    const int lid = get_local_id(0), warp = lid / 32, g = mma_lane() / 4, t = mma_lane() % 4;
    const int wm = warp / WARPS_N * WTM, wn = warp % WARPS_N * WTN;
    __local float *scr = scratch + (EMULATE ? warp * MMA_TF32_SCRATCH : 0);
    __local float *lbx = diag ? la : lb;

    float acc[MT][NF][4];
#pragma unroll
    for (int p = 0; p < MT; ++p)
#pragma unroll
        for (int q = 0; q < NF; ++q)
#pragma unroll
            for (int i = 0; i < 4; ++i)
                acc[p][q][i] = 0.0f;

    GT na[LOADS], nb[LOADS];                         // the next chunk, on its way
    fetch(na, x, m, n, ldx, 0, i0);
    if (!diag)
        fetch(nb, x, m, n, ldx, 0, j0);
    for (int k0 = 0, st = 0; k0 < m; k0 += KC, st ^= 1) {
        // A work-item that stores chunk c + 1 while others still compute on
        // chunk c writes the other stage: one barrier per chunk is enough.
        store(la + st * STAGE, na);
        if (!diag)
            store(lb + st * STAGE, nb);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (k0 + KC < m) {
            fetch(na, x, m, n, ldx, k0 + KC, i0);
            if (!diag)
                fetch(nb, x, m, n, ldx, k0 + KC, j0);
        }
        __local const float *pa = la + st * STAGE, *pb = lbx + st * STAGE;
#if DIAG_SKIP && !EMULATE
        if (diag)
            chunk(acc, pa, pb, wm, wn, true, scr);
        else
            chunk(acc, pa, pb, wm, wn, false, scr);
#else
        // The emulated mma holds barriers, so every work-item makes every
        // call there; the fragments the GPU skips are poisoned below instead.
        chunk(acc, pa, pb, wm, wn, false, scr);
#endif
        if ((k0 + KC) % FLUSH == 0 && k0 + KC < m)   // the same for every work-item
            flush(acc, s, lds, n, i0, j0, wm, wn, diag, k0 + KC == FLUSH);
    }

    flush(acc, s, lds, n, i0, j0, wm, wn, diag, m <= FLUSH);
}
