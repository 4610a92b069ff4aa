// Step 3a: reduce, then scan, over the whole device (three launches).
// tile_sums: work-group g adds up tile g (TILE = ITEMS * WG floats).
// scan_sums: one work-group turns the tile sums into exclusive prefixes, in
//            blocks of WG with a carry (the seed's loop, over tiles).
// scan_tiles: work-group g scans tile g again, starting from its prefix.
// The data are read twice and written once: 12 bytes per element against
// the 8 that a scan cannot avoid.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void tile_sums(
        __global const float *restrict x, const uint n, __global float *restrict sums)
{
    __local float tmp[2 * WG + 1];
    const uint lid = get_local_id(0), base = get_group_id(0) * TILE;
    float acc = 0.0f;
    for (uint k = 0; k < TILE / 4; k += WG) {
        const uint i = base + 4 * (k + lid);
        if (i + 3 < n) {
            const float4 v = ((__global const float4 *)x)[i / 4];
            acc += (v.s0 + v.s1) + (v.s2 + v.s3);
        } else {
            for (uint e = i; e < min(i + 4, n); ++e)
                acc += x[e];
        }
    }
    tmp[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (lid < s)
            tmp[lid] += tmp[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        sums[get_group_id(0)] = tmp[0];
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void scan_sums(__global float *restrict sums, const uint tiles)
{
    __local float tmp[2 * WG + 1];
    const uint lid = get_local_id(0);
    float carry = 0.0f;
    for (uint base = 0; base < tiles; base += WG) {
        const uint i = base + lid;
        const float v = i < tiles ? sums[i] : 0.0f;
        const float before = wg_scan_exclusive(v, tmp);
        if (i < tiles)
            sums[i] = carry + before;         // exclusive
        carry += tmp[WG_TOTAL];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void scan_tiles(
        __global const float *restrict x, __global float *restrict y, const uint n,
        __global const float *restrict prefix)
{
    __local float tmp[2 * WG + 1];
    __local float4 stage[STAGE_SIZE];
    const uint base = get_group_id(0) * TILE;
    float4 v[Q];
    float before;
    load_items(x, n, base, v, stage);
    scan_items(v, tmp, &before);
    const float add = prefix[get_group_id(0)] + before;
    add_items(v, add);
    store_items(y, n, base, v, stage);
}
