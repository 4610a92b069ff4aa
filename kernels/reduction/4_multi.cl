// Step 4: many elements per work-item.
// The host launches a fixed grid (a few work-groups per compute unit) instead
// of one work-item per element or two. Each work-item walks the array with a
// stride of the whole grid, adding into a private register, so consecutive
// work-items still read consecutive addresses (coalesced), the loads of one
// work-item are independent of each other and can be in flight together, and
// the tree in local memory runs once per work-group instead of once per
// 2*WG elements.
// Output: one partial sum per work-group. WG (a power of two) is a build option.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void reduce(__global const float *in, __global float *partial, const uint n)
{
    __local float sums[WG];
    const uint lid = get_local_id(0);
    const uint stride = get_global_size(0);

    float x = 0.0f;
    for (uint i = get_global_id(0); i < n; i += stride)
        x += in[i];
    sums[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);

    for (uint s = WG / 2; s > 0; s /= 2) {
        if (lid < s)
            sums[lid] += sums[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial[get_group_id(0)] = sums[0];
}
