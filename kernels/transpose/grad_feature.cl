// Step 4a: gradient and update, one work-item per feature:
//   theta[k] -= rate * sum_j XT[k, j] * o[j].
// Each work-item walks its own row of XT, four examples per load.
// Only KP work-items exist: most of the device has nothing to do.
__kernel void grad_feature(__global const float4 *restrict xt,
                           __global const float4 *restrict o,
                           __global float *restrict theta,
                           const int n4, const int stride4, const float rate)
{
    const int k = get_global_id(0);
    if (k >= KP) return;
    __global const float4 *row = xt + (size_t)k * stride4;
    float4 acc = (float4)(0.0f);
    for (int j = 0; j < n4; ++j)
        acc += row[j] * o[j];
    theta[k] -= rate * (acc.x + acc.y + acc.z + acc.w);
}
