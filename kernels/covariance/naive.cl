// Step 2a: the seed's triple loop, one work-item per element of S = XcᵀXc.
// Work-item (j2, j1) walks all m rows of the centred, padded data. In a warp
// j2 varies: x[i][j2] is one coalesced load per row, x[i][j1] the same float
// for every work-item (a broadcast). Two loads per multiply-add: the kernel
// can only go as fast as the caches deliver.
__kernel void naive(__global const float *restrict xc, __global float *restrict s,
                    const int m, const int np)
{
    const int j2 = get_global_id(0);
    const int j1 = get_global_id(1);
    float acc = 0.0f;
    for (int i = 0; i < m; ++i)
        acc += xc[(size_t)i * np + j1] * xc[(size_t)i * np + j2];
    s[(size_t)j1 * np + j2] = acc;
}
