// Bandwidth against working-set size: every work-item reads `reads` float4
// elements of a buffer of n (a power of two) elements, wrapped by the mask
// n - 1. On a GPU (BLOCKED=0) work-item gid reads i = gid + k * G (G: the global
// size), so neighbouring work-items read neighbouring elements at each k. On a
// CPU (BLOCKED=1), where one core runs a work-group's work-items one after
// another, each work-item reads its own contiguous block, i = gid * reads + k.
// Either way the launch reads every element G * reads / n times, so a buffer
// that fits a cache is served by that cache.
__kernel void read(__global const float4 *restrict src,
                   __global float *restrict partial,
                   const uint mask,
                   const uint reads)
{
    const uint gid = get_global_id(0);
    const uint G = get_global_size(0);
    float4 acc = (float4)(0.0f);
    for (uint k = 0; k < reads; ++k)
        acc += src[(BLOCKED ? gid * reads + k : gid + k * G) & mask];
    partial[gid] = acc.x + acc.y + acc.z + acc.w;
}
