// Step 3: local-memory tiles.
// A work-group of T x T work-items owns one T x T tile of S = XcᵀXc, and only
// tiles on or below the diagonal are launched: group g is tile (bi, bj) with
// bj <= bi, numbered row by row. The rows of Xc are taken T at a time: the
// work-group copies the two T x T panels it needs (columns bi*T.. and bj*T..
// of those rows) into local memory, waits at a barrier, and every work-item
// adds T products from local memory to its element. Each float fetched from
// global memory now serves T multiply-adds instead of one.
// Xc is mp x np with both multiples of T (the centring kernel pads). The
// tile's sums are written to S, or added to it when `accumulate` is set.
// Built with TRACE (gpubook.trace, for the chapter's figure), each work-item
// records its loads (step 2 * chunk for the first panel, 2 * chunk + 1 for the
// second, index into xc) and its element of S (step -1, index into s).
__kernel __attribute__((reqd_work_group_size(T, T, 1)))
void local_tiles(__global const float *restrict xc, __global float *restrict s,
                 const int m, const int np, const int accumulate
#ifdef TRACE
                 , __global int *trace
#endif
                 )
{
#ifdef TRACE
    TRACE_START;
#endif
    __local float a[T][T + 1];   // a[k][r]: row k of the chunk, column bi*T + r
    __local float b[T][T + 1];
    const int g = get_group_id(0);
    int bi = (int)((sqrt(8.0f * g + 1.0f) - 1.0f) * 0.5f);
    while (bi * (bi + 1) / 2 > g) --bi;              // float rounding, either way
    while ((bi + 1) * (bi + 2) / 2 <= g) ++bi;
    const int bj = g - bi * (bi + 1) / 2;
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int col1 = bi * T, col2 = bj * T;

    float acc = 0.0f;
    for (int i0 = 0; i0 < m; i0 += T) {
        a[ty][tx] = xc[(size_t)(i0 + ty) * np + col1 + tx];
        b[ty][tx] = xc[(size_t)(i0 + ty) * np + col2 + tx];
#ifdef TRACE
        TRACE_AT(2 * (i0 / T), (i0 + ty) * np + col1 + tx);
        TRACE_AT(2 * (i0 / T) + 1, (i0 + ty) * np + col2 + tx);
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < T; ++k)
            acc += a[k][ty] * b[k][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const size_t at = (size_t)(col1 + ty) * np + col2 + tx;
#ifdef TRACE
    TRACE_AT(-1, at);
#endif
    s[at] = accumulate ? s[at] + acc : acc;
}
