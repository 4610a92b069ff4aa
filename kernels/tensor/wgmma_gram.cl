// C = X'X (the tiles that hold its lower triangle) in TF32 on Hopper's warp-group MMA
// (wgmma), fed by cp.async (gpubook.wgmma.Gram). X is m x n float32, row-major with
// stride ldx (16-byte aligned rows).
//
// A work-group of WGS warp groups (128 work-items each) owns a TM x TN tile of C,
// TM = 64 WGS MW: warp group g the rows 64 MW g.., MW blocks of 64, each one wgmma
// m64nTNk8 per step of 8 terms. wgmma takes TF32 operands from local memory K-major
// only (each row's terms k side by side, in core matrices of 8 rows x 16 bytes), and
// X as stored is the other way round, so each chunk of KC rows of X goes twice
// through local memory:
//   1. cp.async copies the chunk's rows (X[k][i0..], then X[k][j0..]) as they lie,
//      16 bytes at a time, into one of STAGES raw stages, AHEAD chunks ahead;
//   2. the work-items transpose it, blocks of 4 x 4, into one of two operand stages
//      in core-matrix order (8 rows x 4 terms, 128 bytes along K apart, KC * 32 bytes
//      between groups of 8 rows), the columns of a block in an order rotated so that
//      8 neighbouring work-items store to 8 different 16-byte slots: no bank conflict.
//      MODE 1 rounds each float to TF32 here; MODE 0 leaves it (the tensor core
//      truncates); MODE 2 (3xTF32) also writes lo = x - hi, hi = x truncated to TF32
//      (what the tensor core reads of x itself), for three products per step: lo hi,
//      hi lo, then hi hi.
//   3. wgmma reads the operand stage while the next chunk is transposed into the other:
//      per chunk the products are issued, then the copy of chunk ch + AHEAD (into the
//      raw stage whose chunk was transposed last time), then, between two barriers,
//      once this warp group's products of ch - 1 have ended (wgmma.wait_group 1),
//      chunk ch + 1 is transposed.
// Every FLUSH terms (and at the end) each work-item adds its sums into C, which it alone
// owns, and the next product starts from zero: the tensor core's float32 sums drift
// over many terms (part 6.3); C's additions round.
// (A first version wrote X' in that order in a pass of its own: on an H200 the pass
// took 2.0-2.2 ms for 131,072 x 4,096, a copy of X 1.0 ms, and its 3xTF32 split on the
// way into X' doubled the bytes the tiles read.)
//
// Markers (PTX comments that gpubook.wgmma.rewrite makes instructions):
//   WG_FENCE_PROXY  fence.proxy.async: local stores, then wgmma's reads
//   WG_FENCE        wgmma.fence, before a chunk's first wgmma
//   WG_ACC d0..d15  16 accumulators of the next WG_MMA_GO (TN / 32 of them, in order)
//   WG_MMA_GO a b p one wgmma m64nNk8 (N = twice the accumulators listed): d += A B'
//                   (d = A B' where p is 0), A and B through descriptors a and b
//   WG_COMMIT       wgmma.commit_group;  WG_WAIT w: wgmma.wait_group w
//   WG_HOLD d..     nothing: ties the accumulators' later reads to after a WG_WAIT
// NV_PTX=0 (any device): no markers, cp.async is a plain copy, and each product is
// computed by the work-items from local memory in float32 (operands truncated to TF32
// as the tensor core does), so a CPU checks the tiles, the copies, the layouts and the
// flushes.
// Build options: WGS, MW, TN (a multiple of 32), KC (of 8), STAGES (1 to 5), FLUSH (a
// multiple of KC), MODE. Sizes: m a multiple of KC, n of TM and TN, ldx of 4
// (gpubook.wgmma.Gram checks them).
#ifndef NV_PTX
#define NV_PTX 0
#endif
#define TM (64 * WGS * MW)
#define THREADS (128 * WGS)
#define WIDTH (TM + TN)                      // floats of a row of a raw stage
#define STAGE (WIDTH * KC)                   // floats of a stage
#define PARTS (MODE == 2 ? 2 : 1)
#define AHEAD STAGES
#define LOCAL ((STAGES + 2 * PARTS) * STAGE)
#define ACC (MW * TN / 2)
#define SBO (KC * 32)

inline void copy16(__local float *dst, __global const float *src)
{
#if NV_PTX
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((uint)(size_t)dst), "l"((ulong)src)
                 : "memory");
#else
    *(__local float4 *)dst = *(__global const float4 *)src;
#endif
}

inline void copies_close(void)
{
#if NV_PTX
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

// this work-item's copies, all but the newest AHEAD - 1 groups, have landed
#if AHEAD < 1 || AHEAD > 5
#error "STAGES must be 1 to 5"
#endif
#define PENDING_(w) "cp.async.wait_group " #w ";"
#define PENDING(w) PENDING_(w)
inline void copies_wait(void)
{
#if NV_PTX
#if AHEAD == 1
    asm volatile(PENDING(0) ::: "memory");
#elif AHEAD == 2
    asm volatile(PENDING(1) ::: "memory");
#elif AHEAD == 3
    asm volatile(PENDING(2) ::: "memory");
#elif AHEAD == 4
    asm volatile(PENDING(3) ::: "memory");
#else
    asm volatile(PENDING(4) ::: "memory");
#endif
#endif
}

// Chunk k0.. of X's columns i0.. (A) and j0.. (B) into a raw stage, row k of the chunk
// at floats k WIDTH.., A's TM then B's TN: 16-byte pieces, a warp's 32 side by side.
static void copy_chunk(__local float *raw, __global const float *x, const int ldx, const int k0,
                       const int i0, const int j0, const int t)
{
#pragma unroll
    for (int e = t; e < STAGE / 4; e += THREADS) {
        const int k = e / (WIDTH / 4), c = e % (WIDTH / 4) * 4;
        copy16(raw + 4 * e, x + (size_t)(k0 + k) * ldx + (c < TM ? i0 + c : j0 + c - TM));
    }
}

inline float pick(const float4 v, const int i)
{
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

inline float4 truncated(const float4 v)
{
    return as_float4(as_uint4(v) & (uint4)(0xffffe000u));
}

inline float4 rounded(const float4 v)
{
    return as_float4((as_uint4(v) + (uint4)(0x1000u)) & (uint4)(0xffffe000u));
}

// Offset in an operand stage of operand row r (A's rows, then B's), terms k.. k + 3.
#define CORE_AT(r, k) ((r) % 8 * 4 + (k) % 4 + (k) / 4 * 32 + (r) / 8 * (KC * 8))

// A raw stage into operand stage `op` (and MODE 2's lo parts into `lo`): work-item t
// takes blocks of 4 terms x 4 rows, four 16-byte loads along the rows, four 16-byte
// stores along the terms.
static void transpose_chunk(__local float *op, __local float *lo, __local const float *raw, const int t)
{
#pragma unroll
    for (int e = t; e < STAGE / 16; e += THREADS) {
        const int r = e % (WIDTH / 4) * 4, k = e / (WIDTH / 4) * 4, rot = e % (WIDTH / 4) / 2 % 4;
        __local const float *p = raw + k * WIDTH + r;
        const float4 v0 = *(__local const float4 *)p, v1 = *(__local const float4 *)(p + WIDTH),
                     v2 = *(__local const float4 *)(p + 2 * WIDTH), v3 = *(__local const float4 *)(p + 3 * WIDTH);
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const int col = (q + rot) % 4;
            float4 v = (float4)(pick(v0, col), pick(v1, col), pick(v2, col), pick(v3, col));
#if MODE == 1
            v = rounded(v);
#endif
            *(__local float4 *)(op + CORE_AT(r + col, k)) = v;
#if MODE == 2
            *(__local float4 *)(lo + CORE_AT(r + col, k)) = v - truncated(v);
#endif
        }
    }
}

inline ulong descriptor(const uint address)
{
    return (ulong)((address & 0x3FFFF) >> 4) | ((ulong)(128 >> 4) << 16) | ((ulong)(SBO >> 4) << 32);
}

// The float of row r, term k of an operand block that starts at `at` (core-matrix order).
#define CORE(at, r, k) (at)[(r) % 8 * 4 + (k) % 4 + (k) / 4 * 32 + (r) / 8 * (KC * 8)]

// What one wgmma adds to (or, with z, sets in) a work-item's TN / 2 sums d: A's rows
// from a, B's from b (floats of local memory), terms 8 s.., in float32.
static void mma_emulated(float *d, __local const float *a, __local const float *b, const int s,
                         const int z, const int warp, const int lane)
{
    for (int v = 0; v < TN / 2; ++v) {
        const int row = 16 * warp + lane / 4 + 8 * (v % 4 / 2), col = 8 * (v / 4) + 2 * (lane % 4) + v % 2;
        float sum = z ? 0.0f : d[v];
        for (int kk = 8 * s; kk < 8 * s + 8; ++kk)
#if MODE != 1
            sum = fma(as_float(as_uint(CORE(a, row, kk)) & 0xffffe000u),
                      as_float(as_uint(CORE(b, col, kk)) & 0xffffe000u), sum);  // truncated, as the tensor core does
#else
            sum = fma(CORE(a, row, kk), CORE(b, col, kk), sum);
#endif
        d[v] = sum;
    }
}

#if NV_PTX
#define ACC16(p) "+f"((p)[0]), "+f"((p)[1]), "+f"((p)[2]), "+f"((p)[3]), "+f"((p)[4]), "+f"((p)[5]), \
                 "+f"((p)[6]), "+f"((p)[7]), "+f"((p)[8]), "+f"((p)[9]), "+f"((p)[10]), "+f"((p)[11]), \
                 "+f"((p)[12]), "+f"((p)[13]), "+f"((p)[14]), "+f"((p)[15])
#define MARK16(name, p) asm volatile("// " name " %0 %1 %2 %3 %4 %5 %6 %7 %8 %9 %10 %11 %12 %13 %14 %15" \
                                     : ACC16(p) :: "memory")
#endif

// One product: d (TN / 2 sums) += the A block at local float `fa` times the B block at `fb`.
inline void product(float *d, __local const float *st, const uint base, const int fa, const int fb,
                    const int s, const int z, const int warp, const int lane)
{
#if NV_PTX
#pragma unroll
    for (int q = 0; q < TN / 32; ++q)
        MARK16("WG_ACC", d + 16 * q);
    asm volatile("// WG_MMA_GO %0 %1 %2" ::"l"(descriptor(base + 4 * fa + 256 * s)),
                 "l"(descriptor(base + 4 * fb + 256 * s)), "r"(1 - z) : "memory");  // 0: d = A B
#else
    mma_emulated(d, st + fa, st + fb, s, z, warp, lane);
#endif
}

// C (row-major, ldc) += or = (store) a work-item's sums.
static void flush(float *acc, __global float *c, const int ldc, const int i0, const int j0, const int g,
                  const int warp, const int lane, const int store)
{
#pragma unroll
    for (int b = 0; b < MW; ++b)
#pragma unroll
        for (int v = 0; v < TN / 2; v += 2) {
            const int row = i0 + 64 * (MW * g + b) + 16 * warp + lane / 4 + 8 * (v % 4 / 2);
            __global float2 *p = (__global float2 *)(c + (size_t)row * ldc + j0 + 8 * (v / 4) + 2 * (lane % 4));
            const float2 sum = (float2)(acc[b * TN / 2 + v], acc[b * TN / 2 + v + 1]);
            *p = store ? sum : *p + sum;
        }
}

// The chunk's products from operand stage `op` (and MODE 2's lo parts at `lo`), floats
// of local memory: A's rows of this warp group, and B's.
inline void chunk_products(float *acc, __local const float *st, const uint base, const int op, const int lo,
                           const int z, const int g, const int warp, const int lane)
{
#if NV_PTX
    asm volatile("// WG_FENCE" ::: "memory");
#endif
#pragma unroll
    for (int s = 0; s < KC / 8; ++s)
#pragma unroll
        for (int b = 0; b < MW; ++b) {
            const int a = (MW * g + b) * 64 * KC;
            float *d = acc + b * TN / 2;
#if MODE == 2
            product(d, st, base, lo + a, op + TM * KC, s, z && s == 0, warp, lane);
            product(d, st, base, op + a, lo + TM * KC, s, 0, warp, lane);
            product(d, st, base, op + a, op + TM * KC, s, 0, warp, lane);
#else
            product(d, st, base, op + a, op + TM * KC, s, z && s == 0, warp, lane);
#endif
        }
#if NV_PTX
    asm volatile("// WG_COMMIT" ::: "memory");
#endif
}

// The operand stages of chunk ch: two of them in turn (each PARTS stages long).
#define OP(ch) ((STAGES + (ch) % 2 * PARTS) * STAGE)

// Chunk ch + 1 (its own copies landed) transposed once every warp group is done with
// the operand stage it goes to (the first barrier) and before any reads it (the second).
inline void next_chunk(__local float *st, const int ch, const int t)
{
    copies_wait();
    barrier(CLK_LOCAL_MEM_FENCE);
    transpose_chunk(st + OP(ch + 1), st + OP(ch + 1) + STAGE, st + (ch + 1) % STAGES * STAGE, t);
#if NV_PTX
    asm volatile("// WG_FENCE_PROXY" ::: "memory");
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
}

// tiles: (i0, j0) of each work-group's tile. first != 0: C's old values are not read.
__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1)))
void wgmma_gram(__global const float *restrict x, const int m, const int ldx, __global const int2 *tiles,
                __global float *restrict c, const int ldc, const int first)
{
    __local float st[LOCAL] __attribute__((aligned(1024)));
    const int t = get_local_id(0), g = t / 128, warp = t % 128 / 32, lane = t % 32;
    const int i0 = tiles[get_group_id(0)].x, j0 = tiles[get_group_id(0)].y;
    const uint base = (uint)(size_t)st;
    const int chunks = m / KC;
    float acc[ACC];
#pragma unroll
    for (int v = 0; v < ACC; ++v)
        acc[v] = 0.0f;
    for (int s = 0; s < AHEAD; ++s) {
        if (s < chunks)
            copy_chunk(st + s * STAGE, x, ldx, s * KC, i0, j0, t);
        copies_close();
    }
    next_chunk(st, -1, t);
    int z = 1, store = first;
    for (int ch = 0; ch < chunks; ++ch) {
        chunk_products(acc, st, base, OP(ch), OP(ch) + STAGE, z, g, warp, lane);
        z = 0;
        if (ch + AHEAD < chunks)      // its raw stage's chunk, ch, was transposed before
            copy_chunk(st + ch % STAGES * STAGE, x, ldx, (ch + AHEAD) * KC, i0, j0, t);
        copies_close();
        const int last = ch == chunks - 1 || (ch + 1) % (FLUSH / KC) == 0;
#if NV_PTX
        if (last) {
            asm volatile("// WG_WAIT 0" ::: "memory");
#pragma unroll
            for (int q = 0; q < ACC / 16; ++q)
                MARK16("WG_HOLD", acc + 16 * q);
        } else {
            asm volatile("// WG_WAIT 1" ::: "memory");
        }
#endif
        if (last) {
            flush(acc, c, ldc, i0, j0, g, warp, lane, store);
            z = 1;
            store = 0;
        }
        if (ch + 1 < chunks)
            next_chunk(st, ch, t);
    }
}
