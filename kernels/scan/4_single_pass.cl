// Step 3b: a single pass with decoupled look-back.
// Each work-group takes a ticket from an atomic counter: tiles are handed out
// in the order work-groups start, so a tile only ever waits for tiles that
// started before it. It scans its tile, publishes its total in status[tile]
// with flag AGGREGATE, and looks back: LOOK work-items each read the status of
// one of the LOOK tiles before it (waiting while a tile has published
// nothing), and work-item 0 adds their totals from the nearest one back to the
// first that carries its INCLUSIVE prefix; if none does, the next LOOK tiles
// further back. Then it publishes its own inclusive prefix and writes its
// tile with the exclusive prefix added. Data are read once and written once.
// Flag and value share one 64-bit word, written with an atomic exchange and
// read with an atomic add of 0 (in the warp look-back, PTX's relaxed load at the
// device's scope, also an atomic access), so a reader never sees a flag without
// its value (work-groups that talk through memory use atomics: a plain or
// volatile load racing with the exchange is a data race). Scan number `epoch` (1, 2,
// ...) of the same buffers uses flags 2*epoch - 1 and 2*epoch and takes tickets from
// (epoch - 1) * tiles on, so that nothing needs resetting between scans: a smaller
// flag is a previous scan's, and means "nothing published yet".
//
// PHASES=1 (NVIDIA, with device/nv_clock.cl joined in front and NV_PTX=1):
// work-item 0 writes its SM and the SM's cycle counter when the tile's loads
// were issued, had arrived, it was scanned, its prefix was known and it was
// written: marks[6 * tile + 0..5] (gpubook.chapters.scan.phases).
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#define AGGREGATE ((ulong)(2 * epoch - 1))
#define INCLUSIVE ((ulong)(2 * epoch))
#ifndef PHASES
#define PHASES 0
#endif
#if PHASES
#define MARKS_ARG , __global ulong *marks
#define MARK(i, v) if (lid == 0) marks[6 * (size_t)tile + (i)] = (v)
#else
#define MARKS_ARG
#define MARK(i, v)
#endif

void publish(volatile __global ulong *slot, const ulong flag, const float value)
{
    atom_xchg(slot, (flag << 32) | as_uint(value));
}

// WARP_LOOK=1 (NVIDIA, with WARP_SHUFFLE and LOOK = 32): the first warp looks
// back alone. Lane l reads the status of tile end - 32 + l; a ballot gives the
// lanes whose tile carries its inclusive prefix, and a butterfly of shuffles
// adds the values from the nearest such lane to the last: no local memory, no
// barrier and no serial sum in a round, one barrier after the look-back.
#ifndef WARP_LOOK
#define WARP_LOOK 0
#endif
#if WARP_LOOK
#if !WARP_SHUFFLE || LOOK != 32
#error "WARP_LOOK needs WARP_SHUFFLE=1 and LOOK=32"
#endif
uint ballot(const int p)
{
    uint m;
    asm volatile("{ .reg .pred q; setp.ne.s32 q, %1, 0; "
                 "vote.sync.ballot.b32 %0, q, 0xffffffff; }"
                 : "=r"(m) : "r"(p));
    return m;
}

// The warp reads a status word with a relaxed load at the device's scope (PTX
// ld.relaxed.gpu), not an atomic add of 0: flag and value still come in one
// 64-bit access, and the L2 serves the reads without its atomic unit (on an
// H200, 2^28 floats: 0.549 -> 0.544 ms at WG = 512, 0.568 -> 0.549 at 256).
ulong read_status(volatile __global ulong *slot)
{
    ulong w;
    asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(w) : "l"((ulong)slot)
                 : "memory");
    return w;
}

float warp_total(float v)
{
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) {
        uint r;
        asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;"
                     : "=r"(r) : "r"(as_uint(v)), "r"(d));
        v += as_float(r);
    }
    return v;
}
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void scan_single_pass(
        __global const float *restrict x, __global float *restrict y, const uint n,
        volatile __global ulong *status, volatile __global uint *counter,
        const uint epoch MARKS_ARG)
{
    __local float tmp[2 * WG + 1];
    __local float4 stage[STAGE_SIZE];
    __local ulong window[LOOK];
    __local uint ticket;
    __local float prefix;
    __local int found;
    const uint lid = get_local_id(0);
    if (lid == 0)
        ticket = atomic_inc(counter) - (epoch - 1) * get_num_groups(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint tile = ticket, base = tile * TILE;
    float4 v[Q];
    float before;
    MARK(1, cycles());
    load_items(x, n, base, v, stage);
    MARK(2, cycles());
    const float total = scan_items(v, tmp, &before);
    MARK(3, cycles());
#if WARP_LOOK
    if (lid < 32) {
        float sum = 0.0f;
        int done = tile == 0;
        if (lid == 0)
            publish(status + tile, tile == 0 ? INCLUSIVE : AGGREGATE, total);
        for (int end = (int)tile; !done; end -= 32) {  // the same in every lane
            const int j = end - 32 + (int)lid;
            ulong word = INCLUSIVE << 32;  // before tile 0: a prefix of 0
            if (j >= 0)
                do {
                    word = read_status(status + j);
                } while ((word >> 32) < AGGREGATE);
            // the nearest lane whose tile carries its inclusive prefix (lanes
            // before it are not needed), or lane 0 when none does
            const uint m = ballot((word >> 32) == INCLUSIVE);
            const int nearest = m ? 31 - (int)clz(m) : 0;
            sum += warp_total((int)lid >= nearest ? as_float((uint)word) : 0.0f);
            done = m != 0;
        }
        if (lid == 0) {
            if (tile > 0)
                publish(status + tile, INCLUSIVE, sum + total);
            prefix = sum;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#else
    if (lid == 0) {
        publish(status + tile, tile == 0 ? INCLUSIVE : AGGREGATE, total);
        prefix = 0.0f;
        found = tile == 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int end = (int)tile; !found; end -= LOOK) {  // `found` is the same for all
        if (lid < LOOK) {
            const int j = end - LOOK + (int)lid;
            ulong word = INCLUSIVE << 32;  // before tile 0: a prefix of 0
            if (j >= 0)
                do {
                    word = atom_add(status + j, (ulong)0);  // an atomic read
                } while ((word >> 32) < AGGREGATE);
            window[lid] = word;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0) {
            float sum = prefix;
            for (int k = LOOK - 1; k >= 0; --k) {
                sum += as_float((uint)window[k]);
                if ((window[k] >> 32) == INCLUSIVE) {
                    found = 1;
                    break;
                }
            }
            prefix = sum;
            if (found)
                publish(status + tile, INCLUSIVE, sum + total);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#endif
    MARK(4, cycles());
    add_items(v, prefix + before);
    store_items(y, n, base, v, stage);
    MARK(5, cycles());
    MARK(0, sm_id());
}
