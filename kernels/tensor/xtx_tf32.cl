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
// 3xTF32 from 70.7 to 46.7 ms at 131,072 x 4,096 (gpubook.tensor.XTX_SHAPES).
//
// Two stages: chunk c lives in stage c % 2, and chunk c + 1 is loaded from
// global memory into registers before chunk c's mma work, then split and
// stored after it: one barrier per chunk. On a tile of the diagonal A's panel
// is B's: it is loaded and stored once.
//
// FEED 1 changes how the data reach the tensor cores, not what they compute
// (the same products in the same order, so the same sums):
//   - cp.async copies chunk c + 1 from global into local memory without
//     registers (GV 4; a work-item waits for its own copies before the
//     barrier), and prefetch.global.L2 asks for chunk c + AHEAD before that;
//   - a lane reads its operands of a row as float4 (LDS.128): the rows and
//     columns a fragment covers are a permutation of the warp's block (VCOL
//     below), chosen so that a lane's values lie side by side, and one float4
//     gives a lane its operand of 4 fragments;
//   - the warps add their sums into S with red.global.add (fire and forget:
//     nothing waits for the old value; off the diagonal four neighbouring
//     sums at a time, with GV 4), and on a tile of the diagonal a whole warp
//     skips its block when it lies above the diagonal.
// With EMULATE the copies are plain loads and the flushes plain additions.
//
// Rows k_first to m - 1 of X: a launch over a slab of rows adds its sums into
// S, and only the launch from row 0 stores its first flush. With slabs that
// fit in L2 every tile reads X from L2 and device memory gives each row once
// (gpubook.tf32.XtX's slab_rows, the experiment of part 6.3).
//
// Build options (gpubook.tensor.XtX checks them):
//   T, WARPS_M, WARPS_N, KC   the tile, its warps, the rows per chunk
//   MODE      0, 1, 2 as above
//   GV        4: 16-byte global loads, and with FEED 16-byte flushes (needs
//             n, ldx and lds multiples of 4); 1: one float per load, each
//             checked against n
//   DIAG_SKIP 1 (default): on a tile of the diagonal, a warp skips the
//             fragments that lie wholly above it (the other tiles run a copy
//             of the mma work without that branch)
//   FEED      0 (default) or 1, as above (with MODE 2, LATE must be 1)
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
#ifndef FEED
#define FEED 0
#endif
#if FEED && MODE == 2 && !LATE
#error "FEED keeps raw floats in local memory: give LATE=1 with MODE 2"
#endif
// ASYNC: cp.async (plain copies with EMULATE); GV 1 goes through registers
#define ASYNC (FEED && GV == 4)
#define AHEAD 3  // the chunk that prefetch.global.L2 asks for, ahead of this one
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
#define STAGE (KC * LDL * PARTS)   // floats of one panel's chunk in local memory
#define LOADS (KC * T / GV / NTH)  // global loads per work-item per panel and chunk
#if GV == 4
#define GT float4
#else
#define GT float
#endif

// A raw float as the mma takes it: hi (and in MODE 2 lo).
inline void split_raw(const float v, float *hi, float *lo)
{
#if MODE == 0
    *hi = v;
#else
    *hi = tf32_round(v);
#endif
#if MODE == 2
    *lo = tf32_round(v - *hi);
#endif
}

// A float on its way into local memory: split there (hi, and in MODE 2 lo),
// or with LATE kept raw (hi = v) until part splits it.
inline void operand(const float v, float *hi, float *lo)
{
#if LATE
    *hi = v;
#else
    split_raw(v, hi, lo);
#endif
}

// The l-th piece of GV floats that this work-item moves of a panel's chunk:
// row r of the chunk, columns c.. of the panel (consecutive work-items take
// consecutive pieces of a row).
inline void slot(const int l, int *r, int *c)
{
    const int e = get_local_id(0) + l * NTH;
    *r = e / (T / GV);
    *c = e % (T / GV) * GV;
}

// Rows k0.. of the panel of columns c0.. into registers; zeros past m and n.
static void fetch(GT *next, __global const float *restrict x, const int m, const int n,
                  const int ldx, const int k0, const int c0)
{
#pragma unroll
    for (int l = 0; l < LOADS; ++l) {
        int r, c;
        slot(l, &r, &c);
        const int k = k0 + r, col = c0 + c;
#if GV == 4
        next[l] = k < m && col < n
                          ? *(__global const float4 *)(x + (size_t)k * ldx + col)
                          : (float4)(0.0f);
#else
        next[l] = k < m && col < n ? x[(size_t)k * ldx + col] : 0.0f;
#endif
    }
}

// The fetched rows, split, into one stage of a panel.
static void store(__local float *panel, const GT *next)
{
#pragma unroll
    for (int l = 0; l < LOADS; ++l) {
        int r, c;
        slot(l, &r, &c);
        __local float *q = panel + (r * LDL + c) * PARTS;
#if GV == 4
        float h0, h1, h2, h3, l0, l1, l2, l3;
        operand(next[l].s0, &h0, &l0);
        operand(next[l].s1, &h1, &l1);
        operand(next[l].s2, &h2, &l2);
        operand(next[l].s3, &h3, &l3);
#if PARTS == 2
        const float4 first = (float4)(h0, l0, h1, l1),
                     second = (float4)(h2, l2, h3, l3);
        const int swap = (get_local_id(0) >> 2) & 1;  // see "Bank conflicts" above
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

// FEED, GV 4: 16 bytes from global into local memory with cp.async (zeros
// when !ok), the work-item's copies so far closed as one group, and the wait
// for all but the newest group (two stages: the wait is for all of them).
inline void copy16(__local float *dst, __global const float *src, const bool ok)
{
#if EMULATE
    *(__local float4 *)dst = ok ? *(__global const float4 *)src : (float4)(0.0f);
#else
    asm volatile(
            "cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"((uint)(size_t)dst),
            "l"((ulong)src), "r"(ok ? 16 : 0)
            : "memory");
#endif
}

inline void copies_close(void)
{
#if !EMULATE
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

inline void copies_wait(void)
{
#if !EMULATE
    asm volatile("cp.async.wait_group 0;" ::: "memory");
#endif
}

// Rows k0.. of the panel of columns c0.. copied into one stage.
static void copy_chunk(__local float *panel, __global const float *restrict x,
                       const int m, const int n, const int ldx, const int k0,
                       const int c0)
{
#pragma unroll
    for (int l = 0; l < LOADS; ++l) {
        int r, c;
        slot(l, &r, &c);                             // GV is 4 here
        const int k = k0 + r, col = c0 + c;
        const bool ok = k < m && col < n;
        copy16(panel + r * LDL + c, ok ? x + (size_t)k * ldx + col : x, ok);
    }
}

// Rows k0.. of the two panels (of columns i0.. and, off the diagonal, j0..)
// into L2: one 128-byte line per work-item, as far as there are work-items.
static void prefetch_l2(__global const float *x, const int m, const int n,
                        const int ldx, const int k0, const int i0, const int j0,
                        const bool both)
{
#if !EMULATE
    const int lid = get_local_id(0), lines = KC * (T / 32);
    const int which = lid / lines, e = lid % lines, k = k0 + e / (T / 32),
              c = (which ? j0 : i0) + e % (T / 32) * 32;
    if (which < (both ? 2 : 1) && k < m && c < n)
        asm volatile(
                "prefetch.global.L2 [%0];" ::"l"((ulong)(x + (size_t)k * ldx + c)));
#endif
}

// One operand of a fragment: row k, column c of a panel's stage.
inline void part(__local const float *panel, const int k, const int c, float *hi,
                 float *lo)
{
#if PARTS == 2
    const float2 v = *(__local const float2 *)(panel + (k * LDL + c) * 2);
    *hi = v.x;
    *lo = v.y;
#elif LATE
    split_raw(panel[k * LDL + c], hi, lo);
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
static void chunk(float acc[MT][NF][4], __local const float *pa,
                  __local const float *pb, const int wm, const int wn, const bool skip,
                  __local float *scr)
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
                    mma_tf32(acc[p][q], al[p][0], al[p][1], al[p][2], al[p][3], bh[0],
                             bh[1], scr);
#pragma unroll
            for (int p = 0; p < MT; ++p)
                if (!(skip && ABOVE(p, q)))
                    mma_tf32(acc[p][q], ah[p][0], ah[p][1], ah[p][2], ah[p][3], bl[0],
                             bl[1], scr);
#endif
#pragma unroll
            for (int p = 0; p < MT; ++p)
                if (!(skip && ABOVE(p, q)))
                    mma_tf32(acc[p][q], ah[p][0], ah[p][1], ah[p][2], ah[p][3], bh[0],
                             bh[1], scr);
        }
    }
#undef LO
}

// FEED: a lane reads w values of a row (w = WA = 2 MT of A's: value 2 p + h
// is row 16 p + 8 h + g of fragment p; w = WB = NF of B's: value q is column
// g of fragment q). Value v of lane g is column VCOL(v, w, g) of the warp's
// block: 4 side by side per lane (w >= 4, 32 columns to a group of 8 lanes),
// else w. LDL = T + 8 keeps a float4 load free of bank conflicts: the 8 lanes
// served together (g in {2i, 2i + 1}, t in 0..3) read 16-byte slots
// 2 t + g (mod 8) of 128 bytes, all different.
#define VCOL(v, w, g) ((w) >= 4 ? 32 * ((v) / 4) + 4 * (g) + (v) % 4 : (w) * (g) + (v))
#define WA (2 * MT)
#define WB NF

// Lane g's w values of row k of a panel's stage, from column c0 of the warp's block.
inline void row_values(__local const float *panel, const int k, const int c0,
                       const int g, const int w, float *out)
{
    __local const float *row = panel + k * LDL + c0;
    if (w >= 4) {
#pragma unroll
        for (int b = 0; b < w / 4; ++b) {
            const float4 f = *(__local const float4 *)(row + 32 * b + 4 * g);
            out[4 * b] = f.x;
            out[4 * b + 1] = f.y;
            out[4 * b + 2] = f.z;
            out[4 * b + 3] = f.w;
        }
    } else if (w == 2) {
        const float2 f = *(__local const float2 *)(row + 2 * g);
        out[0] = f.x;
        out[1] = f.y;
    } else {
        out[0] = row[g];
    }
}

// chunk() with FEED's loads: the same mma in the same order.
static void chunk_feed(float acc[MT][NF][4], __local const float *pa,
                       __local const float *pb, const int wm, const int wn,
                       __local float *scr)
{
    const int g = mma_lane() / 4, t = mma_lane() % 4;
#pragma unroll
    for (int kk = 0; kk < KC; kk += 8) {
        float a[2][WA], b[2][WB], ah[2][WA], al[2][WA], bh[2][WB], bl[2][WB];
#pragma unroll
        for (int r = 0; r < 2; ++r) {               // rows kk + t and kk + t + 4
            row_values(pa, kk + t + 4 * r, wm, g, WA, a[r]);
            row_values(pb, kk + t + 4 * r, wn, g, WB, b[r]);
#pragma unroll
            for (int v = 0; v < WA; ++v)
                split_raw(a[r][v], &ah[r][v], &al[r][v]);
#pragma unroll
            for (int v = 0; v < WB; ++v)
                split_raw(b[r][v], &bh[r][v], &bl[r][v]);
        }
#pragma unroll
        for (int q = 0; q < NF; ++q) {
#if MODE == 2
#pragma unroll
            for (int p = 0; p < MT; ++p)
                mma_tf32(acc[p][q], al[0][2 * p], al[0][2 * p + 1], al[1][2 * p],
                         al[1][2 * p + 1], bh[0][q], bh[1][q], scr);
#pragma unroll
            for (int p = 0; p < MT; ++p)
                mma_tf32(acc[p][q], ah[0][2 * p], ah[0][2 * p + 1], ah[1][2 * p],
                         ah[1][2 * p + 1], bl[0][q], bl[1][q], scr);
#endif
#pragma unroll
            for (int p = 0; p < MT; ++p)
                mma_tf32(acc[p][q], ah[0][2 * p], ah[0][2 * p + 1], ah[1][2 * p],
                         ah[1][2 * p + 1], bh[0][q], bh[1][q], scr);
        }
    }
}

// FEED: the warp's block lies wholly above the diagonal of a tile of the diagonal.
#define WARP_ABOVE (wn > wm + WTM - 1)

// The mma work of one chunk: FEED's or chunk()'s, each with its skip on a
// tile of the diagonal. The emulated mma holds barriers, so there every
// work-item makes every call; the values the GPU skips are poisoned in flush.
static void chunk_any(float acc[MT][NF][4], __local const float *pa,
                      __local const float *pb, const int wm, const int wn,
                      const bool diag, __local float *scr)
{
#if FEED
#if DIAG_SKIP && !EMULATE
    if (!(diag && WARP_ABOVE))
#endif
        chunk_feed(acc, pa, pb, wm, wn, scr);
#elif DIAG_SKIP && !EMULATE
    if (diag)
        chunk(acc, pa, pb, wm, wn, true, scr);
    else
        chunk(acc, pa, pb, wm, wn, false, scr);
#else
    chunk(acc, pa, pb, wm, wn, false, scr);
#endif
}

// The warp's sums into S (stored the first time, added after) and back to
// zero. The tensor core adds each product into its float accumulator
// rounding toward zero, so a long sum drifts low (on the H200, about 1e-3
// of S after 131,072 rows); adding the warp's sums into S every FLUSH rows,
// rounded to nearest, keeps that drift to what FLUSH rows cause.
//
// FEED with GV 4 (n and lds multiples of 4) off the diagonal: the values
// acc[p][4 b + u][i], u = 0..3, lie side by side in a row of S (VCOL), and
// one red.global.add.v4 adds the four: a quarter of the atomic operations.
// On the H200 (131,072 x 4,096, 2 x 2 warps of 64 x 64) that took 3xTF32
// from 34.6 to 33.0 ms, with the flush out of the inner loop as below.
static void flush(float acc[MT][NF][4], __global float *s, const int lds, const int n,
                  const int i0, const int j0, const int wm, const int wn,
                  const bool diag, const bool first)
{
    const int g = mma_lane() / 4, t = mma_lane() % 4, r0 = i0 + wm, c0 = j0 + wn;
#if FEED && GV == 4 && WB % 4 == 0
    if (!diag) {  // every column of the tile lies left of every row
#pragma unroll
        for (int p = 0; p < MT; ++p)
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int b = 0; b < WB / 4; ++b) {
                    const int row = r0 + VCOL(2 * p + i / 2, WA, g),
                              col = c0 + VCOL(4 * b, WB, 2 * t + i % 2);
                    const float4 v =
                            (float4)(acc[p][4 * b][i], acc[p][4 * b + 1][i],
                                     acc[p][4 * b + 2][i], acc[p][4 * b + 3][i]);
                    // col % 4 == 0 and n % 4 == 0: all four are in S
                    if (row < n && col < n) {
                        __global float4 *d =
                                (__global float4 *)(s + (size_t)row * lds + col);
#if EMULATE
                        *d = first ? v : *d + v;
#else
                        if (first)
                            *d = v;
                        else
                            asm volatile(
                                    "red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::
                                            "l"((ulong)d),
                                    "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
                                    : "memory");
#endif
                    }
#pragma unroll
                    for (int u = 0; u < 4; ++u)
                        acc[p][4 * b + u][i] = 0.0f;
                }
        return;
    }
#endif
#pragma unroll
    for (int p = 0; p < MT; ++p)
#pragma unroll
        for (int q = 0; q < NF; ++q)
#pragma unroll
            for (int i = 0; i < 4; ++i) {
#if FEED
                const int row = r0 + VCOL(2 * p + i / 2, WA, g),
                          col = c0 + VCOL(q, WB, 2 * t + i % 2);
                const float v = EMULATE && DIAG_SKIP && diag && WARP_ABOVE
                                        ? NAN
                                        : acc[p][q][i];
#else
                const int row = r0 + p * 16 + g + 8 * (i / 2),
                          col = c0 + q * 8 + 2 * t + i % 2;
                const float v = EMULATE && DIAG_SKIP && diag && ABOVE(p, q)
                                        ? NAN
                                        : acc[p][q][i];
#endif
                if (row < n && col <= row) {
                    __global float *d = s + (size_t)row * lds + col;
#if FEED && !EMULATE
                    if (first)
                        *d = v;
                    else
                        asm volatile("red.global.add.f32 [%0], %1;" ::"l"((ulong)d),
                                     "f"(v)
                                     : "memory");
#else
                    *d = first ? v : *d + v;
#endif
                }
                acc[p][q][i] = 0.0f;
            }
}

__kernel __attribute__((reqd_work_group_size(NTH, 1, 1))) void xtx_tf32(
        __global const float *restrict x, const int m, const int n, const int ldx,
        __global float *restrict s, const int lds, const int k_first)
{
    __local float4 la4[STAGE / 2],
            lb4[STAGE / 2];  // two stages each; float4: 16-byte aligned
    __local float scratch[EMULATE ? NTH / 32 * MMA_TF32_SCRATCH : 1];
    __local float *la = (__local float *)la4, *lb = (__local float *)lb4;
    const int grp = get_group_id(0);
    int bi = (int)((sqrt(8.0f * grp + 1.0f) - 1.0f) * 0.5f);
    while (bi * (bi + 1) / 2 > grp) --bi;            // float rounding, either way
    while ((bi + 1) * (bi + 2) / 2 <= grp) ++bi;
    const int bj = grp - bi * (bi + 1) / 2;
    const int i0 = bi * T, j0 = bj * T;
    const bool diag = bi == bj;                      // A's panel is B's: load it once
    const int lid = get_local_id(0), warp = lid / 32, g = mma_lane() / 4,
              t = mma_lane() % 4;
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

#if ASYNC
    // Chunk c + 1 is copied into the other stage while chunk c's mma run; a
    // work-item waits for its own copies, and the barrier then says that every
    // copy of chunk c has landed and that every warp is done with chunk c - 1,
    // whose stage the next copies overwrite.
    copy_chunk(la, x, m, n, ldx, k_first, i0);
    if (!diag)
        copy_chunk(lb, x, m, n, ldx, k_first, j0);
    copies_close();
#else
    GT na[LOADS], nb[LOADS];                         // the next chunk, on its way
    fetch(na, x, m, n, ldx, k_first, i0);
    if (!diag)
        fetch(nb, x, m, n, ldx, k_first, j0);
#endif
    // Each FLUSH rows, the warps add their sums into S (flush): out of the
    // inner loop, whose registers then hold nothing of the flush.
    for (int kb = k_first, st = 0; kb < m; kb += FLUSH) {
        for (int k0 = kb; k0 < min(kb + FLUSH, m); k0 += KC, st ^= 1) {
#if ASYNC
            copies_wait();
            barrier(CLK_LOCAL_MEM_FENCE);
            prefetch_l2(x, m, n, ldx, k0 + AHEAD * KC, i0, j0, !diag);
            if (k0 + KC < m) {
                copy_chunk(la + (st ^ 1) * STAGE, x, m, n, ldx, k0 + KC, i0);
                if (!diag)
                    copy_chunk(lb + (st ^ 1) * STAGE, x, m, n, ldx, k0 + KC, j0);
            }
            copies_close();
#else
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
#endif
            chunk_any(acc, la + st * STAGE, lbx + st * STAGE, wm, wn, diag, scr);
        }
        flush(acc, s, lds, n, i0, j0, wm, wn, diag, kb == 0);
    }
}
