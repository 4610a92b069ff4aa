// Step 3, tree reduction: the N partial gradients are added in log2(N)
// rounds. In each round the lower half of the still-active work-items adds
// the part held by a partner `offset` places up, so the active half shrinks
// until work-item 0 holds the total. One barrier closes each round.
// Build options: J examples, K features, N work-items (a power of two
// dividing J); ITERS iterations, RATE step size.
// PER_ITEM (default J / N) examples per work-item: PER_ITEM=0 leaves only
// the reduction, the barriers and the update (a measurement, not training).
#ifndef PER_ITEM
#define PER_ITEM (J / N)
#endif
__kernel __attribute__((reqd_work_group_size(N, 1, 1)))
void train(__global const float *X, __global const float *labels,
           __global float *w)
{
    __local float partial[N * K];
    const int id = get_local_id(0);
    const int first = id * (J / N);
    for (int it = 0; it < ITERS; ++it) {
        float gradient[K];
        for (int k = 0; k < K; ++k)
            gradient[k] = 0.0f;
        for (int j = first; j < first + PER_ITEM; ++j) {
            float z = 0.0f;
            for (int k = 0; k < K; ++k)
                z += X[j * K + k] * w[k];
            const float score = labels[j] - 1.0f / (1.0f + exp(-z));
            for (int k = 0; k < K; ++k)
                gradient[k] += X[j * K + k] * score;
        }
        for (int k = 0; k < K; ++k)
            partial[id * K + k] = gradient[k];
        // every work-item's reads of w are done before work-item 0 updates it
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        for (int offset = N / 2; offset > 0; offset >>= 1) {
            if (id < offset)
                for (int k = 0; k < K; ++k)
                    partial[id * K + k] += partial[(id + offset) * K + k];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (id == 0)
            for (int k = 0; k < K; ++k)
                w[k] += RATE * partial[k];
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    }
}
