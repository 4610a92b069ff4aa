// Local memory and its banks: each work-group copies N floats (N a power of
// two, a build option) into local memory, then every work-item reads
// local[(lid * stride + k) % N] for k = 0 .. reads-1. Work-items of one warp
// read addresses `stride` floats apart: with stride 1 they fall in different
// banks; with stride 32 on a device of 32 four-byte banks, all in the same one.
__kernel void local_stride(__global const float *restrict src,
                           __global float *restrict out,
                           const uint stride,
                           const uint reads)
{
    __local float tile[N];
    const uint lid = get_local_id(0);
    for (uint j = lid; j < N; j += get_local_size(0))
        tile[j] = src[j];
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint base = lid * stride;
    float acc = 0.0f;
    for (uint k = 0; k < reads; ++k)
        acc += tile[(base + k) & (N - 1)];
    out[get_global_id(0)] = acc;
}
