// Step 4b: one work-group of LOCAL work-items per feature. The work-items
// split the example loop (adjacent work-items on adjacent examples, so the
// reads of row k are coalesced), then add their LOCAL partial sums in local
// memory by halving, and the first work-item updates theta[k].
__kernel __attribute__((reqd_work_group_size(LOCAL, 1, 1)))
void grad_groups(__global const float4 *restrict xt,
                 __global const float4 *restrict o,
                 __global float *restrict theta,
                 const int n4, const int stride4, const float rate)
{
    __local float part[LOCAL];
    const int k = get_group_id(0), lid = get_local_id(0);
    __global const float4 *row = xt + (size_t)k * stride4;
    float4 acc = (float4)(0.0f);
    for (int j = lid; j < n4; j += LOCAL)
        acc += row[j] * o[j];
    part[lid] = acc.x + acc.y + acc.z + acc.w;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = LOCAL / 2; s > 0; s >>= 1) {
        if (lid < s) part[lid] += part[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) theta[k] -= rate * part[0];
}
