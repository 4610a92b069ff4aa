// Step 1b, loops reordered: loop 2 now runs over the examples outside and
// the features inside, so it reads X in the order it is stored (one row of
// K consecutive floats after another), like loop 1 does.
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
        // loop 2: gradient = X^T scores, one row of X at a time
        for (int k = 0; k < K; ++k)
            gradient[k] = 0.0f;
        for (int j = 0; j < J; ++j)
            for (int k = 0; k < K; ++k)
                gradient[k] += X[j * K + k] * scores[j];
        // loop 3: w += RATE * gradient
        for (int k = 0; k < K; ++k)
            w[k] += RATE * gradient[k];
    }
}
