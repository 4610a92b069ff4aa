// C = X'X in TF32 on Hopper's warp-group MMA (wgmma), a first tile kernel for
// tools/probe_wgmma_xtx.py. NVIDIA's OpenCL compiler refuses wgmma (sm_90a), so the
// instructions are PTX comments here, markers that gpubook.wgmma rewrites in the
// compiler's PTX before handing it to the driver as a program binary for sm_90a:
//   WG_FENCE_PROXY        fence.proxy.async (local stores, then wgmma's reads)
//   WG_FENCE              wgmma.fence (before the first wgmma of a chunk)
//   WG_MMA d0..d15 a b z  one wgmma m64n32k8 TF32: d += A B' (A: 64 rows, B: 32 rows,
//                         both 8 terms, K-major in local memory, through descriptors a, b)
//   WG_COMMIT_WAIT        wgmma.commit_group and wait_group 0 (a chunk's products done)
// X is m x n, row-major, float32. A work-group of one warp group (128 work-items) owns
// a 64 x TN tile of C (rows i0.., columns j0..): per chunk of KC rows of X it copies
// X[k][i0 + r] and X[k][j0 + r] into local memory as core matrices (8 rows r x 4 terms
// k, 16 bytes a row: along k 128 bytes apart, along r KC * 32 bytes), then runs KC / 8
// k-steps of TN / 32 wgmma each. Work-item t of warp w, lane l, holds C's rows 16 w +
// l / 4 and + 8, columns 8 c + 2 (l % 4) and + 1 for each block of 8 columns c.
// Build options: TN (a multiple of 32), KC (a multiple of 8), VEC (1: each work-item
// copies four rows k of a column at once, one 16-byte local store; 2: a 4 x 4 block,
// 16-byte loads too; default 0); m a
// multiple of KC, n of 64 and of TN (the probe's sizes).
#ifndef VEC
#define VEC 0
#endif
// NV_PTX=0 (any device, the default): the markers are left out and each wgmma's
// product is computed from local memory by the work-item itself (wgmma_emulated),
// so that a CPU checks the tiles, the copy and the fragment layout.
#ifndef NV_PTX
#define NV_PTX 0
#endif
#define TM 64
#define NB (TN / 32)
#define CORE(r, k) (((r) % 8) * 4 + (k) % 4 + ((k) / 4) * 32 + ((r) / 8) * (KC * 8))
#define SBO (KC * 32)

inline ulong descriptor(const uint address)
{
    return (ulong)((address & 0x3FFFF) >> 4) | ((ulong)(128 >> 4) << 16) | ((ulong)(SBO >> 4) << 32);
}

// What one m64n32k8 wgmma adds to a work-item's 16 values d (k-step s, columns
// 32 q ..), from the same local memory, in float32.
static void wgmma_emulated(float *d, __local const float *sa, __local const float *sb, const int s,
                           const int q, const int warp, const int lane)
{
    for (int v = 0; v < 16; ++v) {
        const int row = 16 * warp + lane / 4 + 8 * (v % 4 / 2);
        const int col = 32 * q + 8 * (v / 4) + 2 * (lane % 4) + v % 2;
        float sum = d[v];
        for (int kk = 0; kk < 8; ++kk)
            sum = fma(sa[CORE(row, 8 * s + kk)], sb[CORE(col, 8 * s + kk)], sum);
        d[v] = sum;
    }
}

inline float pick(const float4 v, const int i)
{
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// VEC=2: a block of 4 rows k x 4 columns r per work-item, four 16-byte loads and four
// 16-byte stores (one per column, its 4 terms k). The columns go in an order rotated
// by (e / 2) % 4, so that 8 neighbouring work-items store to 8 different 16-byte slots
// of the 128 bytes that the banks span, where in plain order they would share 2.
static void copy_block(__local float *s, __global const float *x, const int n, const int k0, const int c0,
                       const int t, const int width)
{
    for (int e = t; e < KC / 4 * width / 4; e += 128) {
        const int r = e % (width / 4) * 4, k = e / (width / 4) * 4, rot = e / 2 % 4;
        __global const float *p = x + (size_t)(k0 + k) * n + c0 + r;
        const float4 v0 = vload4(0, p), v1 = vload4(0, p + n), v2 = vload4(0, p + 2 * n),
                     v3 = vload4(0, p + 3 * n);
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const int col = (q + rot) % 4;
            *(__local float4 *)(s + CORE(r + col, k)) =
                    (float4)(pick(v0, col), pick(v1, col), pick(v2, col), pick(v3, col));
        }
    }
}

__kernel __attribute__((reqd_work_group_size(128, 1, 1)))
void wgmma_xtx(__global const float *restrict x, const int m, const int n, __global float *restrict c,
               const uint zero, const int lower)
{
    __local float sa[TM * KC] __attribute__((aligned(1024)));
    __local float sb[TN * KC] __attribute__((aligned(1024)));
    const int t = get_local_id(0), warp = t / 32, lane = t % 32;
    const int i0 = get_group_id(1) * TM, j0 = get_group_id(0) * TN;
    if (lower && j0 >= i0 + TM)     // lower != 0: only the tiles that hold C's lower triangle
        return;                     // (the whole work-group leaves, before any barrier)
    const uint base_a = (uint)(ulong)sa, base_b = (uint)(ulong)sb;
    float acc[TN / 2];
#pragma unroll
    for (int v = 0; v < TN / 2; ++v)
        acc[v] = 0.0f;
    for (int k0 = 0; k0 < m; k0 += KC) {
#if VEC == 2
        copy_block(sa, x, n, k0, i0, t, TM);
        copy_block(sb, x, n, k0, j0, t, TN);
#elif VEC
        // four rows k of one column r each: four loads, one 16-byte store
        for (int e = t; e < KC / 4 * TM; e += 128) {
            __global const float *p = x + (size_t)(k0 + e / TM * 4) * n + i0 + e % TM;
            *(__local float4 *)(sa + CORE(e % TM, e / TM * 4)) = (float4)(p[0], p[n], p[2 * n], p[3 * n]);
        }
        for (int e = t; e < KC / 4 * TN; e += 128) {
            __global const float *p = x + (size_t)(k0 + e / TN * 4) * n + j0 + e % TN;
            *(__local float4 *)(sb + CORE(e % TN, e / TN * 4)) = (float4)(p[0], p[n], p[2 * n], p[3 * n]);
        }
#else
        for (int e = t; e < KC * TM; e += 128)
            sa[CORE(e % TM, e / TM)] = x[(size_t)(k0 + e / TM) * n + i0 + e % TM];
        for (int e = t; e < KC * TN; e += 128)
            sb[CORE(e % TN, e / TN)] = x[(size_t)(k0 + e / TN) * n + j0 + e % TN];
#endif
#if NV_PTX
        asm volatile("// WG_FENCE_PROXY" ::: "memory");
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
#if NV_PTX
        asm volatile("// WG_FENCE" ::: "memory");
#endif
#pragma unroll
        for (int s = 0; s < KC / 8; ++s) {
            const ulong da = descriptor(base_a + s * 256);
#pragma unroll
            for (int q = 0; q < NB; ++q) {
                const ulong db = descriptor(base_b + q * 4 * SBO + s * 256);
                float *d = acc + 16 * q;
#if NV_PTX
                asm volatile("// WG_MMA %0 %1 %2 %3 %4 %5 %6 %7 %8 %9 %10 %11 %12 %13 %14 %15 %16 %17 %18"
                             : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                               "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                               "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                             : "l"(da), "l"(db), "r"(1u - zero)
                             : "memory");
#else
                wgmma_emulated(d, sa, sb, s, q, warp, lane);
#endif
            }
        }
#if NV_PTX
        asm volatile("// WG_COMMIT_WAIT" ::: "memory");
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#pragma unroll
    for (int v = 0; v < TN / 2; ++v) {
        const int row = i0 + 16 * warp + lane / 4 + 8 * (v % 4 / 2);
        const int col = j0 + 8 * (v / 4) + 2 * (lane % 4) + v % 2;
        c[(size_t)row * n + col] = acc[v];
    }
}
