// Step 3: scores from the transposed XT (KP rows of `stride` examples).
// One work-item per four adjacent examples (float4): for each feature k,
// adjacent work-items read adjacent 16-byte words of row k, so a warp
// reads one contiguous block of memory per load.
float4 sigmoid4(float4 z) { return 1.0f / (1.0f + exp(-z)); }

__kernel void scores_cols(
        __global const float4 *restrict xt, __global const float4 *restrict y,
        __global const float *restrict theta, __global float4 *restrict o,
        const int n4, const int stride4
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
    if (j >= n4) return;
    float4 s = (float4)(0.0f);
    for (int k = 0; k < KP; ++k) {
#ifdef TRACE
        TRACE_AT(k, k * stride4 + j);     // float4 index of xt read at step k
#endif
        s += xt[(size_t)k * stride4 + j] * theta[k];
    }
    o[j] = sigmoid4(s) - y[j];
}
