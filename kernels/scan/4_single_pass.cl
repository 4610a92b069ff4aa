// Step 3b: a single pass with decoupled look-back.
// Each work-group takes a ticket from an atomic counter: tiles are handed out
// in the order work-groups start, so a tile only ever waits for tiles that
// started before it. It scans its tile in local memory, then publishes its
// total in status[tile] with flag AGGREGATE, looks back at the tiles before
// it, adding their totals until it meets one that has published its
// INCLUSIVE prefix, publishes its own inclusive prefix, and writes its tile
// with the exclusive prefix added. Data are read once and written once.
// Flag and value share one 64-bit word, written and read atomically, so a
// reader never sees a flag without its value. The host zeroes status and the
// counter before every scan.
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#define AGGREGATE 1UL
#define INCLUSIVE 2UL

void publish(volatile __global ulong *slot, const ulong flag, const float value)
{
    atom_xchg(slot, (flag << 32) | as_uint(value));
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void scan_single_pass(__global const float *restrict x, __global float *restrict y, const uint n,
                      volatile __global ulong *status, volatile __global uint *counter)
{
    __local float buf[TILE + TILE / 32];
    __local float tmp[WG];
    __local uint ticket;
    __local float prefix;
    const uint lid = get_local_id(0);
    if (lid == 0)
        ticket = atomic_inc(counter);
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint tile = ticket, base = tile * TILE;
    load_tile(x, n, base, buf);
    const float total = scan_tile(buf, tmp, 0.0f);
    if (lid == 0) {
        float before = 0.0f;
        if (tile == 0) {
            publish(status, INCLUSIVE, total);
        } else {
            publish(status + tile, AGGREGATE, total);
            for (uint j = tile - 1;; --j) {
                ulong word;
                do {
                    word = atom_add(status + j, 0UL);     // an atomic read
                } while ((word >> 32) == 0);
                before += as_float((uint)word);
                if ((word >> 32) == INCLUSIVE)
                    break;
            }
            publish(status + tile, INCLUSIVE, before + total);
        }
        prefix = before;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const float add = prefix;
    for (uint k = lid; k < TILE; k += WG)
        buf[SKEW(k)] += add;
    barrier(CLK_LOCAL_MEM_FENCE);
    store_tile(y, n, base, buf);
}
