// C = X'X (the tiles that hold its lower triangle) in TF32 on Hopper's warp-group MMA
// (wgmma), fed by cp.async from X' (gpubook.wgmma.Gram; a first tile kernel that copied
// X into local memory through registers could not feed it: gpubook.wgmma's docstring).
//
// tf32_transpose writes X' (n rows of m: row j is X's column j), so that each row of
// a tile's operand has its terms k side by side, the K-major order in which wgmma
// takes TF32 operands from local memory. MODE 0 and 2 copy the floats (the tensor core
// truncates them), 1 rounds each to TF32.
//
// wgmma_gram: a work-group of WGS warp groups (128 work-items each) owns a TM x TN
// tile of C, TM = 64 WGS MW: warp group g the rows 64 MW g.., MW blocks of 64, each
// one wgmma m64nTNk8 per step of 8 terms. The terms go KC at a time through STAGES
// stages of local memory, copied by cp.async 16 bytes at a time: piece e of a stage
// (8 rows r side by side, then KC / 4 groups of 4 terms, then the next 8 rows) lands
// at float 4 e, which is the core-matrix order (8 rows x 16 bytes, 128 bytes along
// K apart, KC * 32 bytes between groups of 8 rows) that the descriptors describe, and
// a warp's 32 pieces fill 512 bytes side by side: no bank conflict. WAIT wgmma groups
// stay in flight past a chunk (0 or 1): a stage is refilled once every warp group's
// products of it have ended. Every FLUSH terms (and at the end) each work-item adds
// its sums into C, which it alone owns, and the next product starts from zero: the
// tensor core's float32 sums drift over many terms (part 6.3), C's additions round.
// MODE 2 (3xTF32): x = hi + lo, hi = x truncated to TF32, which is what the tensor core
// reads of x itself, so only lo is computed, in local memory from the chunk as copied:
// a step is three products, lo hi, hi lo, then hi hi, and X' is read once (splitting it
// on the way into X' took 29.3 ms against 12.9 for one pass on an H200, reading twice
// the bytes). AREG=1 takes A from registers instead (each work-item its fragment, hi
// and lo computed there), so only B's lo parts go through local memory.
//
// Markers (PTX comments that gpubook.wgmma.rewrite makes instructions):
//   WG_FENCE_PROXY  fence.proxy.async: this work-item's cp.async stores, then wgmma's reads
//   WG_FENCE        wgmma.fence, before a chunk's first wgmma
//   WG_ACC d0..d15  16 accumulators of the next WG_MMA_GO (TN / 32 of them, in order)
//   WG_MMA_GO a b p one wgmma m64nNk8 (N = twice the accumulators listed): d += A B'
//                   (d = A B' where p is 0), A and B through descriptors a and b
//   WG_MMA_GOR a0 a1 a2 a3 b p  the same with A in four registers of each work-item
//   WG_COMMIT       wgmma.commit_group;  WG_WAIT w: wgmma.wait_group w
//   WG_HOLD d..     nothing: ties the accumulators' later reads to after a WG_WAIT
// NV_PTX=0 (any device): no markers, cp.async is a plain copy, and each product is
// computed by the work-items from local memory in float32, so a CPU checks the tiles,
// the copies, the layouts and the flushes.
// Build options: WGS, MW, TN (a multiple of 32), KC (of 8), STAGES (at least 2 +
// WAIT), WAIT, FLUSH (a multiple of KC), MODE, AREG, LOS, L2HINT, BULK, EARLY, CLOCKS,
// LANES, and tf32_transpose's TW work-items on blocks of TK rows by TJ columns. Sizes: m a
// multiple of KC and TK, n of TM, TN and TJ (gpubook.wgmma.Gram pads other sizes).
#ifndef NV_PTX
#define NV_PTX 0
#endif
#define TM (64 * WGS * MW)
#define THREADS (128 * WGS)
#ifndef LANES          // work-items of a work-group: THREADS, or (NV_PTX=0 only) a divisor
#define LANES THREADS  // of it, each work-item then playing THREADS / LANES of them in turn
#endif
#define VIRT (THREADS / LANES)
#if NV_PTX && VIRT != 1
#error "wgmma needs whole warp groups: LANES = THREADS"
#endif
#define PIECES ((TM + TN) * KC / 4)          // 16-byte pieces of one part of a stage
#define STAGE (4 * PIECES)                   // floats of a stage
#ifndef AREG           // MODE 2 only: 1 takes A from registers, its lo parts computed there,
#define AREG 0         // so that local memory holds B's lo parts only
#endif
#if AREG && MODE != 2
#error "AREG is for MODE 2 (3xTF32)"
#endif
#define LO_PART (AREG ? TN * KC : STAGE)     // floats of a stage of lo parts
#ifndef LOS            // MODE 2: stages of lo parts, 2 or 3 (3 saves a barrier a chunk)
#define LOS 2
#endif
#define LO_B (AREG ? 0 : TM * KC)            // where B's lo parts start in it
#if MODE == 2
#define AHEAD (STAGES - 2)                   // chunks copied ahead of the one in the products
#define LOCAL (STAGES * STAGE + LOS * LO_PART) // and LOS stages of lo parts
#else
#define AHEAD (STAGES - 1 - WAIT)
#define LOCAL (STAGES * STAGE)
#endif
#define ACC (MW * TN / 2)
#define SBO (KC * 32)

// ---- tf32_transpose ---------------------------------------------------------------
// X'[j][k] is stored at xt[blocked(j, k)]: chunk k / KC after chunk, and in a chunk the
// rows j in groups of 8, each group KC * 8 floats in core-matrix order (16 bytes of 4
// terms for each of 8 rows, then the next 4 terms). A tile's operand for one chunk is
// then TM * KC (or TN * KC) floats side by side, copied to local memory as they lie.
inline size_t blocked(const int j, const int k, const int n)
{
    return (size_t)(k / KC) * n * KC + (size_t)(j / 8) * (8 * KC) + k % KC / 4 * 32 + j % 8 * 4 + k % 4;
}

// One work-group per TK x TJ block of X (rows k0.., columns j0..), each value less
// scale * shift[j] (the centring, where scale is not 0): read along X's rows, written
// as runs of TJ KC floats of X' in the order above (KC divides TK), 16 bytes (4 terms
// of a row j) per store. In local memory X'[j][k] sits at j TK + (k + SWZ(j)) % TK:
// a warp's 32 stores (one k, 32 j) meet 32 banks, and so do its loads of 8 rows j x 4
// groups of terms.
#ifndef TJ
#define TJ 32
#endif
#ifndef TK
#define TK 32
#endif
#define SWZ(j) ((j) % 4 + 16 * ((j) / 4 % 2) + 4 * ((j) / 8))
#define AT(j, k) ((j) * TK + ((k) + SWZ(j)) % TK)
#ifndef TW
#define TW 256         // work-items of a work-group (a power of two up to TJ TK / 4)
#endif
__kernel __attribute__((reqd_work_group_size(TW, 1, 1)))
void tf32_transpose(__global const float *restrict x, const int ldx, __global const float *restrict shift,
                    const float scale, __global float *restrict xt, const int m, const int n)
{
    __local float tile[TJ * TK];
    const int j0 = get_group_id(0) * TJ, k0 = get_group_id(1) * TK, id = get_local_id(0);
#if TW % TJ == 0
    const int col = id % TJ;                   // the same column at every step: one shift
    const float less = scale * shift[j0 + col];
#pragma unroll
    for (int r = id / TJ; r < TK; r += TW / TJ)
        tile[AT(col, r)] = x[(size_t)(k0 + r) * ldx + j0 + col] - less;
#else
    for (int e = id; e < TJ * TK; e += TW) {
        const int r = e / TJ, col = e % TJ;
        tile[AT(col, r)] = x[(size_t)(k0 + r) * ldx + j0 + col] - scale * shift[j0 + col];
    }
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int o = 4 * id; o < TJ * TK; o += 4 * TW) {
        const int run = o / (TJ * KC), q = o % (TJ * KC);
        const int j = q / (8 * KC) * 8 + q % 32 / 4, k = run * KC + q % (8 * KC) / 32 * 4;
        float4 v = (float4)(tile[AT(j, k)], tile[AT(j, k + 1)], tile[AT(j, k + 2)], tile[AT(j, k + 3)]);
#if MODE == 1
        v = as_float4((as_uint4(v) + (uint4)(0x1000u)) & (uint4)(0xffffe000u));   // rounded to TF32
#endif
        *(__global float4 *)(xt + blocked(j0 + j, k0 + k, n)) = v;
    }
}

// ---- wgmma_gram -------------------------------------------------------------------
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
#error "STAGES must be 2 + WAIT to 6 + WAIT (3 to 7 in MODE 2)"
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

// Piece e = t + r LANES of a stage: its rounds r (a count known to the compiler, so that
// the loops over them unroll without a remainder), and whether it is in A's part.
#define ROUNDS ((PIECES + LANES - 1) / LANES)
#define IN_A(r, e) ((TM * KC / 4) % LANES == 0 ? (r) < TM * KC / 4 / LANES : (e) < TM * KC / 4)

// this work-item's copies have all landed
inline void copies_wait_all(void)
{
#if NV_PTX
    asm volatile(PENDING(0) ::: "memory");
#endif
}

// BULK=1 (NVIDIA): one work-item copies each chunk, A's run and B's, by cp.async.bulk,
// which completes on an mbarrier of the chunk's stage (after the stages in local memory);
// every work-item then waits on that barrier's phase. No proxy fence stands between
// these copies and wgmma: both are the async proxy's.
#ifndef BULK
#define BULK 0
#endif
#define USE_BULK (NV_PTX && BULK)
#define BARS (USE_BULK ? 2 * STAGES : 0)   // floats: an 8-byte mbarrier a stage
#ifndef CLOCKS         // 1: the first work-item of each work-group stamps the SM clock (built
#define CLOCKS 0       // after device/nv_clock.cl: gpubook.wgmma.Gram(clocks=True)), in
#endif                 // device/sm_clock.cl's order: cycles, nanoseconds, SM, start time
#ifndef EARLY          // MODE 2, LOS 3: a chunk's copy before the lo split (default with BULK)
#define EARLY USE_BULK
#endif

inline uint shared_address(__local const float *p)
{
    return (uint)(size_t)p;
}

// Chunk c (rows c KC..) of the rows i0.. (A) and j0.. (B) of X' into its stage: two runs
// of floats that lie side by side in X' (tf32_transpose's order).
inline void copy_chunk(__local float *st, const int c, __global const float *xt, const int n, const int i0,
                       const int j0, const int t)
{
    __local float *stage = st + c % STAGES * STAGE;
    __global const float *chunk = xt + (size_t)c * KC * n;
#if USE_BULK
    if (t == 0) {
        const uint bar = shared_address(st + LOCAL + 2 * (c % STAGES));
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(16 * PIECES)
                     : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     ::"r"(shared_address(stage)), "l"((ulong)(chunk + i0 * KC)), "r"(4 * TM * KC), "r"(bar)
                     : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     ::"r"(shared_address(stage + TM * KC)), "l"((ulong)(chunk + j0 * KC)), "r"(4 * TN * KC),
                       "r"(bar)
                     : "memory");
    }
#else
#pragma unroll
    for (int r = 0; r < ROUNDS; ++r) {
        const int e = t + r * LANES;
        if (PIECES % LANES == 0 || e < PIECES)
            copy16(stage + 4 * e, chunk + (IN_A(r, e) ? i0 * KC + 4 * e : j0 * KC + 4 * e - TM * KC));
    }
#endif
}

// Chunk c has landed in its stage: with BULK for every work-item (the phase of its
// stage's mbarrier for this use has completed); with cp.async, this work-item's copies
// (all of them where `all`, else all but the newest AHEAD - 1 groups).
inline void chunk_landed(__local float *st, const int c, const int all)
{
#if USE_BULK
    const uint bar = shared_address(st + LOCAL + 2 * (c % STAGES)), parity = (uint)(c / STAGES) & 1u;
    uint done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
#else
    if (all)
        copies_wait_all();
    else
        copies_wait();
#endif
}

// MODE 2: the lo parts of a stage (with AREG, of its B part only), x - hi with hi = x
// truncated to TF32 (what the tensor core reads of x itself), each work-item the pieces
// it copied (so its own copies having landed is enough).
inline void split_chunk(__local float *lo, __local const float *raw, const int t)
{
#pragma unroll
    for (int r = 0; r < ROUNDS; ++r) {
        const int e = t + r * LANES;
        if (PIECES % LANES != 0 && e >= PIECES)
            continue;
        if (AREG && IN_A(r, e))
            continue;
        const float4 v = *(__local const float4 *)(raw + 4 * e);
        *(__local float4 *)(lo + 4 * e - (AREG ? TM * KC : 0)) =
            v - as_float4(as_uint4(v) & (uint4)(0xffffe000u));
    }
}

inline ulong descriptor(const uint address)
{
    return (ulong)((address & 0x3FFFF) >> 4) | ((ulong)(128 >> 4) << 16) | ((ulong)(SBO >> 4) << 32);
}

// The float of row r, term k of an operand block that starts at `at` (core-matrix order).
#define CORE(at, r, k) (at)[(r) % 8 * 4 + (k) % 4 + (k) / 4 * 32 + (r) / 8 * (KC * 8)]

// x less x truncated to TF32
inline float lo_part(const float x)
{
    return x - as_float(as_uint(x) & 0xffffe000u);
}

// What one wgmma adds to (or, with z, sets in) a work-item's TN / 2 sums d: A's rows
// from a (alo: the lo parts of a's floats, as AREG computes them), B's from b (floats
// of local memory), terms 8 s.., in float32.

inline void mma_emulated(float *d, __local const float *a, __local const float *b, const int s,
                         const int z, const int warp, const int lane, const int alo)
{
    for (int v = 0; v < TN / 2; ++v) {
        const int row = 16 * warp + lane / 4 + 8 * (v % 4 / 2), col = 8 * (v / 4) + 2 * (lane % 4) + v % 2;
        float sum = z ? 0.0f : d[v];
        for (int kk = 8 * s; kk < 8 * s + 8; ++kk)
#if MODE != 1
            sum = fma(as_float(as_uint(alo ? lo_part(CORE(a, row, kk)) : CORE(a, row, kk)) & 0xffffe000u),
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

// One product: d (TN / 2 sums) += the A block at local float fa times the B block at fb.
inline void product(float *d, __local const float *st, const uint base,
                    const int fa, const int fb, const int s, const int z,
                    const int warp, const int lane)
{
#if NV_PTX
#pragma unroll
    for (int q = 0; q < TN / 32; ++q)   // the accumulators, 16 per marker
        MARK16("WG_ACC", d + 16 * q);
    // the wgmma: d += A B', or d = A B' where the last operand is 0
    asm volatile("// WG_MMA_GO %0 %1 %2"
                 ::"l"(descriptor(base + 4 * fa + 256 * s)),
                   "l"(descriptor(base + 4 * fb + 256 * s)), "r"(1 - z)
                 : "memory");
#else
    mma_emulated(d, st + fa, st + fb, s, z, warp, lane, 0);
#endif
}

#if AREG
// A's fragment of one wgmma in registers, in the order wgmma takes it (register v: row
// 16 warp + lane / 4 + 8 (v % 2), term lane % 4 + 4 (v / 2) of the block at `at`), its
// floats in hi (the tensor core truncates them) and their lo parts in lo; then the
// wgmma.fence that orders these writes before the products that read them.
inline void a_fragment(uint *hi, uint *lo, __local const float *at, const int s, const int warp,
                       const int lane)
{
#pragma unroll
    for (int v = 0; v < 4; ++v) {
        const float x = CORE(at, 16 * warp + lane / 4 + 8 * (v % 2), 8 * s + lane % 4 + 4 * (v / 2));
        hi[v] = as_uint(x);
        lo[v] = as_uint(lo_part(x));
    }
#if NV_PTX
    asm volatile("// WG_FENCE %0 %1 %2 %3 %4 %5 %6 %7"
                 : "+r"(hi[0]), "+r"(hi[1]), "+r"(hi[2]), "+r"(hi[3]),
                   "+r"(lo[0]), "+r"(lo[1]), "+r"(lo[2]), "+r"(lo[3])::"memory");
#endif
}

// One product with A from registers a (emulated: from local float fa, its lo parts
// where alo is 1).
inline void product_r(float *d, __local const float *st, const uint base, const uint *a,
                      const int fa, const int alo, const int fb, const int s, const int z,
                      const int warp, const int lane)
{
#if NV_PTX
#pragma unroll
    for (int q = 0; q < TN / 32; ++q)
        MARK16("WG_ACC", d + 16 * q);
    asm volatile("// WG_MMA_GOR %0 %1 %2 %3 %4 %5"
                 ::"r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]),
                   "l"(descriptor(base + 4 * fb + 256 * s)), "r"(1 - z)
                 : "memory");
#else
    mma_emulated(d, st + fa, st + fb, s, z, warp, lane, alo);
#endif
}
#endif

// Where the sums v, v + 1 of a work-item's block b go in C (row-major, ldc).
inline __global float2 *c_at(__global float *c, const int ldc, const int i0, const int j0, const int g,
                             const int b, const int v, const int warp, const int lane)
{
    const int row = i0 + 64 * (MW * g + b) + 16 * warp + lane / 4 + 8 * (v % 4 / 2);
    return (__global float2 *)(c + (size_t)row * ldc + j0 + 8 * (v / 4) + 2 * (lane % 4));
}

// C += or = (store) a work-item's sums. L2HINT=1 (NVIDIA): with L2 priority evict_last,
// so that C stays in L2 from one flush to the next while X' streams through; the old
// values are all loaded before the first sum is stored.
#ifndef L2HINT
#define L2HINT 0
#endif
inline void flush(float *acc, __global float *c, const int ldc, const int i0, const int j0, const int g,
                  const int warp, const int lane, const int store)
{
#if NV_PTX && L2HINT
    ulong pol;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
#pragma unroll
    for (int b = 0; b < MW; ++b) {
        float old[TN / 2];
#pragma unroll
        for (int v = 0; v < TN / 2; v += 2) {
            old[v] = old[v + 1] = 0.0f;
            if (!store)
                asm volatile("ld.global.L2::cache_hint.v2.f32 {%0, %1}, [%2], %3;"
                             : "=f"(old[v]), "=f"(old[v + 1])
                             : "l"((ulong)c_at(c, ldc, i0, j0, g, b, v, warp, lane)), "l"(pol));
        }
#pragma unroll
        for (int v = 0; v < TN / 2; v += 2)
            asm volatile("st.global.L2::cache_hint.v2.f32 [%0], {%1, %2}, %3;"
                         ::"l"((ulong)c_at(c, ldc, i0, j0, g, b, v, warp, lane)),
                           "f"(old[v] + acc[b * TN / 2 + v]), "f"(old[v + 1] + acc[b * TN / 2 + v + 1]),
                           "l"(pol) : "memory");
    }
#else
#pragma unroll
    for (int b = 0; b < MW; ++b)
#pragma unroll
        for (int v = 0; v < TN / 2; v += 2) {
            __global float2 *p = c_at(c, ldc, i0, j0, g, b, v, warp, lane);
            const float2 sum = (float2)(acc[b * TN / 2 + v], acc[b * TN / 2 + v + 1]);
            *p = store ? sum : *p + sum;
        }
#endif
}

// The chunk's products: A's rows of this warp group and B's from stage f (floats),
// and in MODE 2 the lo parts at l: lo hi, hi lo, then hi hi.
inline void chunk_products(float *acc, __local const float *st, const uint base, const int f, const int l,
                    const int z, const int g, const int warp, const int lane, uint *ra)
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
#if AREG
            uint *hi = ra + 8 * (s * MW + b), *lo = hi + 4;
            a_fragment(hi, lo, st + f + a, s, warp, lane);
            product_r(d, st, base, lo, f + a, 1, f + TM * KC, s, z && s == 0, warp, lane);
            product_r(d, st, base, hi, f + a, 0, l + LO_B, s, 0, warp, lane);
            product_r(d, st, base, hi, f + a, 0, f + TM * KC, s, 0, warp, lane);
#elif MODE == 2
            product(d, st, base, l + a, f + TM * KC, s, z && s == 0, warp, lane);
            product(d, st, base, f + a, l + LO_B, s, 0, warp, lane);
            product(d, st, base, f + a, f + TM * KC, s, 0, warp, lane);
#else
            product(d, st, base, f + a, f + TM * KC, s, z && s == 0, warp, lane);
#endif
        }
#if NV_PTX
    asm volatile("// WG_COMMIT" ::: "memory");
#endif
}

// Every product of the chunk: work-item t plays work-items t, t + LANES, ... of the warp
// groups (only itself with NV_PTX), each with its ACC sums.
inline void all_products(float *acc, __local const float *st, const uint base, const int f, const int l,
                         const int z, const int t, uint *ra)
{
#pragma unroll
    for (int v = 0; v < VIRT; ++v) {
        const int u = t + v * LANES;
        chunk_products(acc + v * ACC, st, base, f, l, z, u / 128, u % 128 / 32, u % 32, ra);
    }
}

// AREG: A's registers of a chunk whose products a wait has just ended, kept as they are
// until here, so that the compiler gives the next chunk's fragments other registers.
#define AREGS (AREG ? 8 * MW * KC / 8 : 8)
inline void hold_a(uint *r)
{
#if NV_PTX && AREG
#pragma unroll
    for (int q = 0; q < AREGS; q += 8)
        asm volatile("// WG_HOLD %0 %1 %2 %3 %4 %5 %6 %7"
                     : "+r"(r[q]), "+r"(r[q + 1]), "+r"(r[q + 2]), "+r"(r[q + 3]),
                       "+r"(r[q + 4]), "+r"(r[q + 5]), "+r"(r[q + 6]), "+r"(r[q + 7])::"memory");
#endif
}

// One chunk, ch (in stage ch % STAGES; in MODE 2 its lo parts in lo stage ch % LOS).
// MODE 0, 1: its copies waited for, one barrier (which also means every warp group's
// products of chunk ch - 1 - WAIT have ended), the copy of chunk ch + AHEAD into that
// chunk's stage, the products, the wait for all but WAIT of them. MODE 2, LOS 3: the
// products of chunk ch; the copy of ch + AHEAD (into the stage of ch - 2) where EARLY;
// the lo parts of ch + 1 (its copies waited for) into the lo stage that ch - 2 used, and
// the proxy fence; the copy of ch + AHEAD here where not EARLY; the wait for ch - 1's
// products; a barrier. The tensor cores work through the split. The proxy fence seems
// to wait for this work-item's cp.async copies in flight: with the copy before it, the
// product took 24.27 ms against 22.87 (one H200, 2026-11-28), so cp.async copies after
// it; bulk copies, which it does not wait for, go before it (EARLY, BULK's default).
// LOS 2: the copy, the wait for ch - 1's products, a barrier, the split, the fence, a
// barrier.
inline void step(float *acc, __local float *st, const uint base, __global const float *xt, const int n,
                 const int ch, const int chunks, const int z, const int i0, const int j0, const int t,
                 uint *ra, uint *prev)
{
    const int f = ch % STAGES * STAGE, l = STAGES * STAGE + ch % LOS * LO_PART;
#if MODE == 2 && LOS == 3
    all_products(acc, st, base, f, l, z, t, ra);
#if EARLY
    if (ch + AHEAD < chunks)
        copy_chunk(st, ch + AHEAD, xt, n, i0, j0, t);
#endif
    if (ch + 1 < chunks) {
        chunk_landed(st, ch + 1, 1);
        split_chunk(st + STAGES * STAGE + (ch + 1) % LOS * LO_PART, st + (ch + 1) % STAGES * STAGE, t);
#if NV_PTX
        asm volatile("// WG_FENCE_PROXY" ::: "memory");
#endif
    }
#if !EARLY
    if (ch + AHEAD < chunks)
        copy_chunk(st, ch + AHEAD, xt, n, i0, j0, t);
#endif
    copies_close();
#if NV_PTX
    asm volatile("// WG_WAIT 1" ::: "memory");
#endif
    hold_a(prev);
    if (ch + 1 < chunks)
        barrier(CLK_LOCAL_MEM_FENCE);
#elif MODE == 2
    all_products(acc, st, base, f, l, z, t, ra);
    if (ch + AHEAD < chunks)
        copy_chunk(st, ch + AHEAD, xt, n, i0, j0, t);
    copies_close();
#if NV_PTX
    asm volatile("// WG_WAIT 1" ::: "memory");
#endif
    hold_a(prev);   // the registers chunk ch - 1's products read
    if (ch + 1 < chunks) {
        chunk_landed(st, ch + 1, 0);
        if (LOS == 2)   // every warp group's products of ch - 1 have ended (with 3, those of
            barrier(CLK_LOCAL_MEM_FENCE);   // ch - 2 did, before the last chunk's barrier)
        split_chunk(st + STAGES * STAGE + (ch + 1) % LOS * LO_PART, st + (ch + 1) % STAGES * STAGE, t);
#if NV_PTX
        asm volatile("// WG_FENCE_PROXY" ::: "memory");
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#else
    chunk_landed(st, ch, 0);
#if NV_PTX && !USE_BULK
    asm volatile("// WG_FENCE_PROXY" ::: "memory");
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
    if (ch + AHEAD < chunks)
        copy_chunk(st, ch + AHEAD, xt, n, i0, j0, t);
    copies_close();
    all_products(acc, st, base, f, l, z, t, ra);
#if NV_PTX && WAIT
    asm volatile("// WG_WAIT 1" ::: "memory");
#elif NV_PTX
    asm volatile("// WG_WAIT 0" ::: "memory");
#endif
#endif
}

// Chunks from .. to - 1, after a chunk whose products read A from ra: in pairs, the
// first reading from rb, the second from ra, so that no chunk writes the registers of
// the chunk before, whose products may still run (AREG); one left over runs after every
// product has ended.
inline void run_chunks(float *acc, __local float *st, const uint base, __global const float *xt, const int n,
                       int from, const int to, const int chunks, const int i0, const int j0, const int t,
                       uint *ra, uint *rb)
{
#if NV_PTX && AREG
    for (; from + 1 < to; from += 2) {
        step(acc, st, base, xt, n, from, chunks, 0, i0, j0, t, rb, ra);
        step(acc, st, base, xt, n, from + 1, chunks, 0, i0, j0, t, ra, rb);
    }
    if (from < to) {
        asm volatile("// WG_WAIT 0" ::: "memory");
        step(acc, st, base, xt, n, from, chunks, 0, i0, j0, t, ra, rb);
    }
#else
    for (; from < to; ++from)
        step(acc, st, base, xt, n, from, chunks, 0, i0, j0, t, ra, rb);
#endif
}

// tiles: (i0, j0) of each work-group's tile. first != 0: C's old values are not read.
// The chunks between two flushes are a loop of their own, its first chunk (the one that
// starts the sums afresh) peeled off, so that wherever control flow meets the products
// are either all in flight or all ended: with the flush a branch inside one loop over
// all chunks, ptxas waited for every product at the loop's end ("warpgroup.wait is
// injected").
__kernel __attribute__((reqd_work_group_size(LANES, 1, 1)))
void wgmma_gram(__global const float *restrict xt, const int m, const int n, __global const int2 *tiles,
                __global float *restrict c, const int ldc, const int first
#if CLOCKS
                , __global ulong *stamps
#endif
                )
{
    __local float st[LOCAL + BARS] __attribute__((aligned(1024)));
    const int t = get_local_id(0);
#if CLOCKS      // the start goes to memory, not to registers held through the products
    if (t == 0) {
        stamps[4 * get_group_id(0)] = cycles();
        stamps[4 * get_group_id(0) + 3] = nanoseconds();
    }
#endif
    const int i0 = tiles[get_group_id(0)].x, j0 = tiles[get_group_id(0)].y;
    const uint base = shared_address(st);
    const int chunks = m / KC;
    float acc[VIRT * ACC];
#pragma unroll
    for (int v = 0; v < VIRT * ACC; ++v)
        acc[v] = 0.0f;
    uint ra[AREGS], rb[AREGS];   // A's fragments, two chunks' (AREG)
#pragma unroll
    for (int q = 0; q < AREGS; ++q)
        ra[q] = rb[q] = 0;
#if USE_BULK
    if (t == 0) {
        for (int s = 0; s < STAGES; ++s)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(st + LOCAL + 2 * s))
                         : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
    for (int s = 0; s < AHEAD; ++s) {
        if (s < chunks)
            copy_chunk(st, s, xt, n, i0, j0, t);
        copies_close();
    }
#if MODE == 2
    chunk_landed(st, 0, 0);
    split_chunk(st + STAGES * STAGE, st, t);
#if NV_PTX
    asm volatile("// WG_FENCE_PROXY" ::: "memory");
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
    for (int c0 = 0; c0 < chunks; c0 += FLUSH / KC) {
        const int c1 = min(c0 + FLUSH / KC, chunks);
        step(acc, st, base, xt, n, c0, chunks, 1, i0, j0, t, ra, rb);
        run_chunks(acc, st, base, xt, n, c0 + 1, c1, chunks, i0, j0, t, ra, rb);
#if NV_PTX
        asm volatile("// WG_WAIT 0" ::: "memory");
#pragma unroll
        for (int q = 0; q < ACC / 16; ++q)
            MARK16("WG_HOLD", acc + 16 * q);
#endif
#pragma unroll
        for (int v = 0; v < VIRT; ++v) {
            const int u = t + v * LANES;
            flush(acc + v * ACC, c, ldc, i0, j0, u / 128, u % 128 / 32, u % 32, first && c0 == 0);
        }
    }
#if CLOCKS
    if (t == 0) {
        const size_t g = 4 * get_group_id(0);
        const ulong c1 = cycles(), t1 = nanoseconds();
        stamps[g] = c1 - stamps[g];
        stamps[g + 1] = t1 - stamps[g + 3];
        stamps[g + 2] = sm_id();
    }
#endif
}
