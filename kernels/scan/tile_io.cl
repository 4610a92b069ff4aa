// Shared by the device-wide scans: a tile of TILE = ITEMS * WG floats, each
// work-item holding ITEMS consecutive ones in registers as ITEMS/4 float4s.
// STAGE = 0: each work-item loads and stores its own floats directly. Across a
// warp the accesses are then ITEMS floats apart: one instruction uses part of
// each cache line it touches, and the next instructions of the same
// work-items use the rest while the lines are still in the cache. The
// accesses go through float4 pointers (the tile's start is a multiple of 4
// and buffers are aligned): only then does the compiler issue 16-byte loads,
// where vload4 on a float pointer may become four 4-byte ones. Scalar
// accesses at a ragged end of the array. Every loop has a constant trip count
// and is unrolled, so the float4s stay in registers.
#define TILE (ITEMS * WG)
#define Q (ITEMS / 4)

#if STAGE
// STAGE = 1: the tile passes through local memory on its way in and out, so
// that global memory sees neighbouring work-items read and write neighbouring
// float4s (one full line per quarter warp), and each work-item then takes its
// ITEMS consecutive floats from local memory. One spare float4 after every 8
// keeps both local access patterns free of bank conflicts.
#define PAD4(j) ((j) + ((j) >> 3))
#define STAGE_SIZE (TILE / 4 + TILE / 32)
#else
#define STAGE_SIZE 1
#endif

float4 load4(__global const float *x, const uint n, const uint i)
{
    if (i + 3 < n)
        return ((__global const float4 *)x)[i / 4];
    return (float4)(i < n ? x[i] : 0.0f, i + 1 < n ? x[i + 1] : 0.0f,
                    i + 2 < n ? x[i + 2] : 0.0f, i + 3 < n ? x[i + 3] : 0.0f);
}

void store4(__global float *y, const uint n, const uint i, const float4 v)
{
    if (i + 3 < n) {
        ((__global float4 *)y)[i / 4] = v;
    } else {
        if (i < n) y[i] = v.s0;
        if (i + 1 < n) y[i + 1] = v.s1;
        if (i + 2 < n) y[i + 2] = v.s2;
    }
}

// LOADS_FIRST = 1 (default): each work-item asks for all of its Q float4s
// before it stores any into local memory, so that Q loads are in flight at
// once. LOADS_FIRST = 0 stores each float4 as it comes, in one loop, and
// NVIDIA's compiler then waits for each load before it issues the next:
// chapter 7 times a tile's loads both ways (gpubook.chapters.scan.phases).
#ifndef LOADS_FIRST
#define LOADS_FIRST 1
#endif

void load_items(__global const float *x, const uint n, const uint base, float4 *v,
                __local float4 *stage)
{
    const uint lid = get_local_id(0);
#if STAGE
#if LOADS_FIRST
    float4 w[Q];
#pragma unroll
    for (int k = 0; k < Q; ++k)
        w[k] = load4(x, n, base + 4 * (k * WG + lid));
#pragma unroll
    for (int k = 0; k < Q; ++k)
        stage[PAD4(k * WG + lid)] = w[k];
#else
#pragma unroll
    for (int k = 0; k < Q; ++k)
        stage[PAD4(k * WG + lid)] = load4(x, n, base + 4 * (k * WG + lid));
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int q = 0; q < Q; ++q)
        v[q] = stage[PAD4(lid * Q + q)];
    // no barrier here: the scan's barriers come before store_items reuses stage
#else
#pragma unroll
    for (int q = 0; q < Q; ++q)
        v[q] = load4(x, n, base + lid * ITEMS + 4 * q);
#endif
}

void store_items(__global float *y, const uint n, const uint base, const float4 *v,
                 __local float4 *stage)
{
    const uint lid = get_local_id(0);
#if STAGE
#pragma unroll
    for (int q = 0; q < Q; ++q)
        stage[PAD4(lid * Q + q)] = v[q];
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int k = 0; k < Q; ++k)
        store4(y, n, base + 4 * (k * WG + lid), stage[PAD4(k * WG + lid)]);
#else
#pragma unroll
    for (int q = 0; q < Q; ++q)
        store4(y, n, base + lid * ITEMS + 4 * q, v[q]);
#endif
}

// Scan the tile: each work-item its ITEMS values in registers, then the
// work-group the work-items' totals. Afterwards v holds inclusive sums within
// the work-item, *before the total of the work-items to its left; returns the
// tile's total.
float scan_items(float4 *v, __local float *tmp, float *before)
{
    float total = 0.0f;
#pragma unroll
    for (int q = 0; q < Q; ++q) {
        v[q].s0 += total;
        v[q].s1 += v[q].s0;
        v[q].s2 += v[q].s1;
        v[q].s3 += v[q].s2;
        total = v[q].s3;
    }
    *before = wg_scan_exclusive(total, tmp);
    return tmp[WG_TOTAL];
}

void add_items(float4 *v, const float add)
{
#pragma unroll
    for (int q = 0; q < Q; ++q)
        v[q] += add;
}
