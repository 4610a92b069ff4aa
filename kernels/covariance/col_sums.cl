// Step 1a: column sums, the first half of the mean.
// X is m x n, row-major, any n. Work-item (j, r) adds column j of rows
// r, r + R, r + 2R, ... (R = the grid's second dimension), minus a shift s[j]
// (zeros for the plain mean; chapter 6's streaming uses the first observation),
// and writes its total to partial[r * n + j], or adds it there when
// `accumulate` is set (blocks of rows arriving one by one). Neighbouring
// work-items read neighbouring floats of a row, so every load of a warp is one
// coalesced transaction. A second launch with R = 1 over the R x n partial
// sums gives the n column sums.
__kernel void col_sums(__global const float *restrict x,
                       __global const float *restrict shift,
                       __global float *restrict partial, const int m, const int n,
                       const int accumulate)
{
    const int j = get_global_id(0);
    const int r = get_global_id(1);
    const int rows = get_global_size(1);
    if (j >= n)
        return;
    const float s = shift[j];
    float acc = 0.0f;
    for (int i = r; i < m; i += rows)
        acc += x[(size_t)i * n + j] - s;
    const size_t at = (size_t)r * n + j;
    partial[at] = accumulate ? partial[at] + acc : acc;
}
