// Step 1b: the same walk along a row, four features per load (float4).
// Fewer, wider loads; adjacent work-items are still KP floats apart.
float sigmoid(float z) { return 1.0f / (1.0f + exp(-z)); }

__kernel void scores_rows4(
        __global const float4 *restrict x, __global const float *restrict y,
        __global const float4 *restrict theta, __global float *restrict o, const int n
#ifdef TRACE
        ,
        __global int *trace  // gpubook.trace: the address each work-item reads
#endif
)
{
#ifdef TRACE
    TRACE_START;
#endif
    const int j = get_global_id(0);
    if (j >= n) return;
    __global const float4 *row = x + (size_t)j * (KP / 4);
    float4 s = (float4)(0.0f);
    for (int k = 0; k < KP / 4; ++k) {
#ifdef TRACE
        TRACE_AT(k, j * (KP / 4) + k);    // float4 index of x read at step k
#endif
        s += row[k] * theta[k];
    }
    o[j] = sigmoid(s.x + s.y + s.z + s.w) - y[j];
}
