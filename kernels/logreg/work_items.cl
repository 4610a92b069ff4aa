// Step 2, work-items: one work-group of N work-items. Work-item i takes the
// i-th slice of J/N consecutive examples, adds up its part of the gradient
// and leaves it in local memory; after a barrier, work-item 0 adds the N
// parts one after another and updates w in global memory; a second barrier
// makes the new w visible to every work-item before the next iteration.
// Build options: J examples, K features, N work-items (N divides J),
// ITERS iterations, RATE step size.
// reqd_work_group_size tells the compiler the group size, so it can plan the
// registers of N work-items. The serial sum is unrolled 16 times, not fully:
// fully unrolled, NVIDIA's compiler fills up to 255 registers per work-item
// with it and spills them to memory, differently for every N.
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
        if (id == 0) {
            // the serial sum: N * K additions, one work-item, the others wait
            for (int k = 0; k < K; ++k) {
                float sum = partial[k];
#pragma unroll 16
                for (int i = 1; i < N; ++i)
                    sum += partial[i * K + k];
                w[k] += RATE * sum;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    }
}
