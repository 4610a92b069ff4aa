// Step 1a: scores o[j] = sigmoid(X[j,:] . theta) - y[j] with X row-major.
// One work-item per example walks its own row of KP floats, so in one load
// instruction adjacent work-items touch addresses KP floats apart.
float sigmoid(float z) { return 1.0f / (1.0f + exp(-z)); }

__kernel void scores_rows(
        __global const float *restrict x, __global const float *restrict y,
        __global const float *restrict theta, __global float *restrict o, const int n
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
    if (j >= n) return;                       // the last work-group may run past n
    __global const float *row = x + (size_t)j * KP;
    float s = 0.0f;
    for (int k = 0; k < KP; ++k) {
#ifdef TRACE
        TRACE_AT(k, j * KP + k);          // float index of x read at step k
#endif
        s += row[k] * theta[k];
    }
    o[j] = sigmoid(s) - y[j];
}
