// Bandwidth against working-set size: every work-item reads `reads` float4
// elements of a buffer of n (a power of two) elements, wrapped by the mask
// n - 1. On a GPU (BLOCKED=0) work-item gid reads i = gid + k * G (G: the global
// size), so neighbouring work-items read neighbouring elements at each k. On a
// CPU (BLOCKED=1), where one core runs a work-group's work-items one after
// another, each work-item reads its own contiguous block, i = gid * reads + k.
// Either way the launch reads every element G * reads / n times, so a buffer
// that fits a cache is served by that cache.
// With the wrap, work-item gid meets the same few elements (gid + k * G) & mask
// at every pass, so each compute unit re-reads only its own 1/CUs of the set,
// which may sit in its own L1. ROTATE=1 (GPU order only) hands each pass's
// indices to the work-items one work-group further on: every pass still reads
// the same elements, but no work-item and no compute unit keeps its own part.
#ifndef ROTATE
#define ROTATE 0
#endif
__kernel void read(__global const float4 *restrict src,
                   __global float *restrict partial,
                   const uint mask,
                   const uint reads)
{
    const uint gid = get_global_id(0);
    const uint G = get_global_size(0);
    float4 acc = (float4)(0.0f);
    for (uint k = 0; k < reads; ++k) {
        const uint who = ROTATE ? (gid + k * (uint)get_local_size(0)) & (G - 1) : gid;
        acc += src[(BLOCKED ? gid * reads + k : who + k * G) & mask];
    }
    partial[gid] = acc.x + acc.y + acc.z + acc.w;
}
