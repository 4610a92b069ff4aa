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
// read with an atomic add of 0, so a reader never sees a flag without its
// value (work-groups that talk through memory use atomics: a plain or
// volatile load racing with the exchange is a data race). Scan number `epoch` (1, 2,
// ...) of the same buffers uses flags 2*epoch - 1 and 2*epoch and takes tickets from
// (epoch - 1) * tiles on, so that nothing needs resetting between scans: a smaller
// flag is a previous scan's, and means "nothing published yet".
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#define AGGREGATE ((ulong)(2 * epoch - 1))
#define INCLUSIVE ((ulong)(2 * epoch))

void publish(volatile __global ulong *slot, const ulong flag, const float value)
{
    atom_xchg(slot, (flag << 32) | as_uint(value));
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void scan_single_pass(
        __global const float *restrict x, __global float *restrict y, const uint n,
        volatile __global ulong *status, volatile __global uint *counter,
        const uint epoch)
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
    load_items(x, n, base, v, stage);
    const float total = scan_items(v, tmp, &before);
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
    add_items(v, prefix + before);
    store_items(y, n, base, v, stage);
}
