// Step 2b: symmetry. S is symmetric, so only j2 <= j1 is computed (the lower
// triangle, diagonal included) and the finishing kernel mirrors it. Work-items
// above the diagonal return at once; warps that lie wholly above it cost
// almost nothing, so about half the work is gone.
__kernel void symmetric(__global const float *restrict xc, __global float *restrict s,
                        const int m, const int np)
{
    const int j2 = get_global_id(0);
    const int j1 = get_global_id(1);
    if (j2 > j1)
        return;
    float acc = 0.0f;
    for (int i = 0; i < m; ++i)
        acc += xc[(size_t)i * np + j1] * xc[(size_t)i * np + j2];
    s[(size_t)j1 * np + j2] = acc;
}
