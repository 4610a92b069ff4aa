// Step 1c, loops merged: loops 1 and 2 visit the same row of X, so they
// become one loop. Each row is read once per iteration, while it is still in
// registers, and the array of J scores disappears: each score is used as
// soon as it is computed.
// Build options: J examples, K features, ITERS iterations, RATE step size.
__kernel void train(__global const float *X, __global const float *labels,
                    __global float *w)
{
    float gradient[K];
    for (int it = 0; it < ITERS; ++it) {
        for (int k = 0; k < K; ++k)
            gradient[k] = 0.0f;
        for (int j = 0; j < J; ++j) {
            float z = 0.0f;
            for (int k = 0; k < K; ++k)
                z += X[j * K + k] * w[k];
            const float score = labels[j] - 1.0f / (1.0f + exp(-z));
            for (int k = 0; k < K; ++k)
                gradient[k] += X[j * K + k] * score;
        }
        for (int k = 0; k < K; ++k)
            w[k] += RATE * gradient[k];
    }
}
