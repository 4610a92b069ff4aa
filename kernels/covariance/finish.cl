// Finishing: C = S / m - d dᵀ, mirrored and without the padding.
// S holds sums of products of shifted data in its lower triangle (row >= col);
// d = mean - shift (zeros when the data were centred on their mean). Work-item
// (j2, j1) writes C[j1][j2] of the rows x cols output from S[max][min].
// MIRROR = 0 takes S as it is (a rectangular tile of C, no triangle).
__kernel void finish(__global const float *restrict s, const int lds,
                     __global float *restrict c, const int rows, const int cols,
                     __global const float *restrict d1,
                     __global const float *restrict d2, const float inv_m)
{
    const int j2 = get_global_id(0);
    const int j1 = get_global_id(1);
    if (j2 >= cols || j1 >= rows)
        return;
#if MIRROR
    const float sum = j2 <= j1 ? s[(size_t)j1 * lds + j2] : s[(size_t)j2 * lds + j1];
#else
    const float sum = s[(size_t)j1 * lds + j2];
#endif
    c[(size_t)j1 * cols + j2] = sum * inv_m - d1[j1] * d2[j2];
}
