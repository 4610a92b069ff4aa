// Step 3: first add during load.
// In step 2, half of the work-items stop after loading their element: the
// first round of the tree already leaves them idle. Here each work-group
// covers 2*WG elements and every work-item adds two of them (WG apart, so
// both loads stay coalesced) before storing to local memory. Half as many
// work-groups, and the tree starts one round shorter per element loaded.
// Output: one partial sum per work-group. WG (a power of two) is a build option.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void reduce(__global const float *in, __global float *partial, const uint n)
{
    __local float sums[WG];
    const uint lid = get_local_id(0);
    const uint i = get_group_id(0) * (2 * WG) + lid;

    float x = i < n ? in[i] : 0.0f;
    if (i + WG < n)
        x += in[i + WG];
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
