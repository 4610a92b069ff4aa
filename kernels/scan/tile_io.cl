// Shared by the device-wide scans: moving a tile of TILE = ITEMS * WG floats
// between global memory and local memory. Global accesses are coalesced
// float4s (scalar ones at a ragged end of the array); in local memory every
// 32nd float is followed by a spare word, so that a work-item reading its
// ITEMS consecutive floats does not hit the same bank as its neighbours.
#define TILE (ITEMS * WG)
#define SKEW(j) ((j) + ((j) >> 5))

void load_tile(__global const float *x, const uint n, const uint base, __local float *buf)
{
    const uint lid = get_local_id(0);
    for (uint k = 0; k < TILE / 4; k += WG) {
        const uint j = 4 * (k + lid), i = base + j;
        float4 v;
        if (i + 3 < n)
            v = vload4(0, x + i);
        else
            v = (float4)(i < n ? x[i] : 0.0f, i + 1 < n ? x[i + 1] : 0.0f,
                         i + 2 < n ? x[i + 2] : 0.0f, 0.0f);
        buf[SKEW(j)] = v.s0;
        buf[SKEW(j + 1)] = v.s1;
        buf[SKEW(j + 2)] = v.s2;
        buf[SKEW(j + 3)] = v.s3;
    }
}

void store_tile(__global float *y, const uint n, const uint base, __local const float *buf)
{
    const uint lid = get_local_id(0);
    for (uint k = 0; k < TILE / 4; k += WG) {
        const uint j = 4 * (k + lid), i = base + j;
        const float4 v = (float4)(buf[SKEW(j)], buf[SKEW(j + 1)], buf[SKEW(j + 2)], buf[SKEW(j + 3)]);
        if (i + 3 < n) {
            vstore4(v, 0, y + i);
        } else {
            if (i < n) y[i] = v.s0;
            if (i + 1 < n) y[i + 1] = v.s1;
            if (i + 2 < n) y[i + 2] = v.s2;
        }
    }
}

// Scan the tile in local memory in place: each work-item its ITEMS
// consecutive floats, then the work-group the work-items' totals. Adds
// `offset` to every element; returns the tile's total (all work-items).
float scan_tile(__local float *buf, __local float *tmp, const float offset)
{
    const uint lid = get_local_id(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    float run[ITEMS];
    float total = 0.0f;
    for (int k = 0; k < ITEMS; ++k) {
        total += buf[SKEW(lid * ITEMS + k)];
        run[k] = total;
    }
    const float before = offset + wg_scan_inclusive(total, tmp) - total;
    const float tile_total = tmp[WG - 1];
    for (int k = 0; k < ITEMS; ++k)
        buf[SKEW(lid * ITEMS + k)] = before + run[k];
    barrier(CLK_LOCAL_MEM_FENCE);
    return tile_total;
}
