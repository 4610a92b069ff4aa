// Chapter 10: the devices' partial sums added on one device in double precision.
// add_partial: acc[i] = part[i] (first = 1) or acc[i] + part[i], part in float,
// acc in double; one work-item per entry of the n x n matrix (count = n * n).
// finish: C = acc / m - d dᵀ in place, work-item (j, i) for row i, column j.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

__kernel void add_partial(__global double *restrict acc, __global const float *restrict part,
                          const int first, const int count)
{
    const int i = get_global_id(0);
    if (i >= count)
        return;
    const double v = (double)part[i];
    acc[i] = first ? v : acc[i] + v;
}

__kernel void finish(__global double *restrict acc, __global const double *restrict d,
                     const double inv_m, const int n)
{
    const int j = get_global_id(0);
    const int i = get_global_id(1);
    if (i >= n || j >= n)
        return;
    const size_t at = (size_t)i * n + j;
    acc[at] = acc[at] * inv_m - d[i] * d[j];
}
