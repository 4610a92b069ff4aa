// Second pass of the gradient: one work-group per feature adds that
// feature's `parts` partial sums (stored contiguously) and updates theta.
__kernel __attribute__((reqd_work_group_size(LOCAL, 1, 1)))
void reduce_update(__global const float *restrict partial,
                   __global float *restrict theta,
                   const int parts, const float rate)
{
    __local float part[LOCAL];
    const int k = get_group_id(0), lid = get_local_id(0);
    float s = 0.0f;
    for (int i = lid; i < parts; i += LOCAL)
        s += partial[(size_t)k * parts + i];
    part[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = LOCAL / 2; h > 0; h >>= 1) {
        if (lid < h) part[lid] += part[lid + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) theta[k] -= rate * part[0];
}
