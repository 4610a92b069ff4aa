// Step 4, vector types: the same kernel as step 3, but a row of X, the
// weights and the partial gradients are handled as float4 vectors, four
// features at a time: one 16-byte load instead of four 4-byte loads, dot()
// for the score, and a float4 multiply-add for the gradient. The two float4
// of weights are copied to registers at the start of each iteration.
// Build options: J examples, K features (a multiple of 4), N work-items (a
// power of two dividing J); ITERS iterations, RATE step size.
#define K4 (K / 4)
__kernel __attribute__((reqd_work_group_size(N, 1, 1)))
void train(__global const float4 *X, __global const float *labels,
           __global float4 *w)
{
    __local float4 partial[N * K4];
    const int id = get_local_id(0);
    const int first = id * (J / N);
    for (int it = 0; it < ITERS; ++it) {
        float4 gradient[K4], wv[K4];
        for (int k = 0; k < K4; ++k) {
            gradient[k] = (float4)(0.0f);
            wv[k] = w[k];
        }
        for (int j = first; j < first + J / N; ++j) {
            float z = 0.0f;
            for (int k = 0; k < K4; ++k)
                z += dot(X[j * K4 + k], wv[k]);
            const float score = labels[j] - 1.0f / (1.0f + exp(-z));
            for (int k = 0; k < K4; ++k)
                gradient[k] += X[j * K4 + k] * score;
        }
        for (int k = 0; k < K4; ++k)
            partial[id * K4 + k] = gradient[k];
        // every work-item's reads of w are done before work-item 0 updates it
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        for (int offset = N / 2; offset > 0; offset >>= 1) {
            if (id < offset)
                for (int k = 0; k < K4; ++k)
                    partial[id * K4 + k] += partial[(id + offset) * K4 + k];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (id == 0)
            for (int k = 0; k < K4; ++k)
                w[k] += RATE * partial[k];
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    }
}
