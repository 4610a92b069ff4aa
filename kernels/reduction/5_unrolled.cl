// Step 5: unrolled.
// Step 4's grid-stride loop, with three changes that cut instructions per
// byte: loads of float4 (16 bytes per work-item per load), the loop body
// unrolled UNROLL times so each work-item has UNROLL independent loads in
// flight, and the tree in local memory unrolled completely (WG is known at
// compile time, so every round's bound is a constant and the loop counter
// disappears). The barriers stay: OpenCL promises nothing about work-items
// of one warp running in lockstep, so the tail is not left unsynchronised.
// The buffer must be 16-byte aligned (OpenCL buffers are); the last n % 4
// floats are added as scalars.
// Output: one partial sum per work-group. WG (a power of two) and UNROLL are
// build options.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void reduce(__global const float *in, __global float *partial, const uint n)
{
    __local float sums[WG];
    const uint lid = get_local_id(0);
    const uint gid = get_global_id(0);
    const uint stride = get_global_size(0);
    __global const float4 *in4 = (__global const float4 *)in;
    const uint n4 = n / 4;

    float4 acc = (float4)(0.0f);
    uint i = gid;
    for (; i + (UNROLL - 1) * stride < n4; i += UNROLL * stride) {
#pragma unroll
        for (uint u = 0; u < UNROLL; u++)
            acc += in4[i + u * stride];
    }
    for (; i < n4; i += stride)
        acc += in4[i];
    float x = (acc.x + acc.y) + (acc.z + acc.w);
    for (uint j = 4 * n4 + gid; j < n; j += stride)
        x += in[j];
    sums[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);

#pragma unroll
    for (uint s = WG / 2; s > 0; s /= 2) {
        if (lid < s)
            sums[lid] += sums[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial[get_group_id(0)] = sums[0];
}
