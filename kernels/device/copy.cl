// Copy one array to another: each work-item moves one element.
// TYPE comes in as a build option (float or float4), so the same source
// measures scalar and 16-byte vector loads.
__kernel void copy(__global const TYPE *restrict src,
                   __global TYPE *restrict dst)
{
    const size_t i = get_global_id(0);
    dst[i] = src[i];
}
