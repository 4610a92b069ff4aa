// Chapter 8's CholeskyQR2 with its first Gram matrix on the TF32 tensor cores
// (gpubook.chapters.lsq.mixed): the float64 matrix goes to float32 for part
// 6.3's wgmma Gram product, and the float32 Gram matrix comes back as float64.
//
// narrow_rows: x (mp x np, float32, row-major) = a (m x c, float64, stride
// lda) rounded to float32, with zeros in the rows and columns past a's, so
// that the Gram product runs on sizes its tiles divide. One work-item per
// float of x, neighbours along a row.
//
// widen_lower: g[i][j] = cf[i][j] (float32, stride ldf) for j <= i < c, as
// float64 (stride c): the lower triangle, the part the Cholesky reads.
//
// add_to_diagonal: g[i][i] += v for i < c (stride c): R2 - I from R2, so that
// R = R1 + (R2 - I) R1 rounds as a product of a small matrix.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

__kernel void narrow_rows(__global const double *restrict a, const int m, const int c,
                          const int lda, __global float *restrict x, const int mp,
                          const int np)
{
    const int j = get_global_id(0), i = get_global_id(1);
    if (i >= mp || j >= np)
        return;
    const float v = (i < m && j < c) ? (float)a[(size_t)i * lda + j] : 0.0f;
    x[(size_t)i * np + j] = v;
}

__kernel void widen_lower(__global const float *restrict cf, const int ldf,
                          const int c, __global double *restrict g)
{
    const int j = get_global_id(0), i = get_global_id(1);
    if (i >= c || j > i)
        return;
    g[(size_t)i * c + j] = (double)cf[(size_t)i * ldf + j];
}

__kernel void add_to_diagonal(__global double *restrict g, const int c, const double v)
{
    const int i = get_global_id(0);
    if (i < c)
        g[(size_t)i * c + i] += v;
}
