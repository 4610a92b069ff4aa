// Step 1b: centring, with the padding the tiled kernels need.
// Xc[i][j] = X[i][j] - scale * shift[j] for i < m, j < n (shift: the column
// sums with scale 1/m, or a shift near the mean with scale 1), and 0 in the padding up
// to mp x np (multiples of the largest tile). Zero rows add nothing to XcᵀXc and zero
// columns only add entries that are never read back, so the covariance kernels need no
// bounds checks. One work-item per element of Xc; reads and writes are coalesced along
// a row.
__kernel void centre(__global const float *restrict x,
                     __global const float *restrict shift, __global float *restrict xc,
                     const float scale, const int m, const int n, const int np)
{
    const int j = get_global_id(0);
    const int i = get_global_id(1);
    if (j >= np)
        return;
    xc[(size_t)i * np + j] =
            (i < m && j < n) ? x[(size_t)i * n + j] - scale * shift[j] : 0.0f;
}
