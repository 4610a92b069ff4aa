// Step 1a, naive: the three lines of the algorithm become three loops, run by
// a single work-item. Loop 2 (the gradient) walks down the columns of the
// row-major X: consecutive reads are K floats apart.
// Build options: J examples, K features, ITERS iterations, RATE step size.
__kernel void train(__global const float *X, __global const float *labels,
                    __global float *w)
{
    float scores[J];
    float gradient[K];
    for (int it = 0; it < ITERS; ++it) {
        // loop 1: scores = labels - sigmoid(X w)
        for (int j = 0; j < J; ++j) {
            float z = 0.0f;
            for (int k = 0; k < K; ++k)
                z += X[j * K + k] * w[k];
            scores[j] = labels[j] - 1.0f / (1.0f + exp(-z));
        }
        // loop 2: gradient = X^T scores, one column of X at a time
        for (int k = 0; k < K; ++k) {
            float g = 0.0f;
            for (int j = 0; j < J; ++j)
                g += X[j * K + k] * scores[j];
            gradient[k] = g;
        }
        // loop 3: w += RATE * gradient
        for (int k = 0; k < K; ++k)
            w[k] += RATE * gradient[k];
    }
}
