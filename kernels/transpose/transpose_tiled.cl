// Step 2b: tiled transpose through local memory. A work-group of
// TILE x ROWS work-items copies a TILE x TILE block of X into local memory
// with adjacent work-items on adjacent features (coalesced reads), then
// writes it out to XT with adjacent work-items on adjacent examples
// (coalesced writes). Each work-item moves TILE / ROWS elements each way.
// The tile has one extra column: reading it by columns would otherwise
// send all work-items of a warp to the same local memory bank.
// Neighbouring work-groups take neighbouring blocks of examples, so the
// rows of XT are written in long runs.
__kernel __attribute__((reqd_work_group_size(TILE, ROWS, 1)))
void transpose_tiled(__global const float *restrict x,
                     __global float *restrict xt,
                     const int rows, const int stride)
{
    __local float tile[TILE][TILE + 1];
    const int blocks_j = rows / TILE;         // rows is a multiple of TILE (host pads)
    const int g = get_group_id(0);  // one index: huge grids stay in dimension 0
    const int j0 = (g % blocks_j) * TILE;
    const int k0 = (g / blocks_j) * TILE;
    const int tx = get_local_id(0), ty = get_local_id(1);

    for (int r = ty; r < TILE; r += ROWS)
        if (k0 + tx < KP)
            tile[r][tx] = x[(size_t)(j0 + r) * KP + k0 + tx];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int r = ty; r < TILE; r += ROWS)
        if (k0 + r < KP)
            xt[(size_t)(k0 + r) * stride + j0 + tx] = tile[tx][r];
}
