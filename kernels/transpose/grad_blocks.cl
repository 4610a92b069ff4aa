// Step 4c: a 2-D decomposition of the gradient. Work-group (b, c) takes a
// block of KB features and a chunk of LOCAL * M float4s of examples; each
// work-item keeps KB running sums, reusing every o value it loads for KB
// rows of XT. The group adds its sums in local memory and writes one
// partial sum per feature; reduce_update.cl adds the chunks.
// Groups with the same chunk are launched next to each other (b is
// dimension 0), so they find the chunk of o in the cache.
__kernel __attribute__((reqd_work_group_size(LOCAL, 1, 1)))
void grad_blocks(__global const float4 *restrict xt,
                 __global const float4 *restrict o,
                 __global float *restrict partial,
                 const int n4, const int stride4, const int chunks)
{
    __local float red[KB][LOCAL];
    const int lid = get_local_id(0);
    const int k0 = get_group_id(0) * KB;
    const int c = get_group_id(1);
    float acc[KB];
    for (int b = 0; b < KB; ++b) acc[b] = 0.0f;

    for (int m = 0; m < M; ++m) {
        const int j = (c * M + m) * LOCAL + lid;
        if (j < n4) {
            const float4 ov = o[j];
            for (int b = 0; b < KB; ++b)
                acc[b] += dot(xt[(size_t)(k0 + b) * stride4 + j], ov);
        }
    }
    for (int b = 0; b < KB; ++b) red[b][lid] = acc[b];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = LOCAL / 2; s > 0; s >>= 1) {
        if (lid < s)
            for (int b = 0; b < KB; ++b) red[b][lid] += red[b][lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid < KB) partial[(size_t)(k0 + lid) * chunks + c] = red[lid][0];
}
