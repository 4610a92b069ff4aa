// Step 2: one work-group per row, the seed's design. The row sits in local
// memory; for each column i every work-item forms the same rotation (cbar,
// sbar, the new weight) from d[i] and the row's current xi, then the work-items
// share the updates of the rest of the row and of row i of R: work-item t
// takes the columns k with k - i - 1 = t (mod WG). A barrier ends each column,
// since the next column's xi was just updated by some work-item. Each element
// of rbar is always updated by the same work-item, so only d and thetab (one
// value per column, written by work-item 0) cross between work-items: their
// new values are written one column late, after every work-item has read the
// old ones (the column's barrier fences global memory too: a barrier with only
// the local fence would not order those reads before that write). Where xi = 0 every
// work-item skips the update alike; the barrier stays outside that branch, so every
// work-item meets every barrier.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void includ_row_group(
        __global const double *restrict x, __global const double *restrict y,
        __global const double *restrict wt, const int row0, const int rows,
        const int n, __global double *restrict d, __global double *restrict rbar,
        __global double *restrict thetab, __global double *restrict sserr)
{
    __local double xr[NMAX];
    const int lid = get_local_id(0);
    double sse = sserr[0];
    int late = -1;  // column whose d and thetab work-item 0 still owes
    double late_d = 0.0, late_t = 0.0;
    for (int row = row0; row < row0 + rows; ++row) {
        for (int k = lid; k < n; k += WG)
            xr[k] = x[(size_t)row * n + k];
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        double w = wt[row], yelem = y[row];
        size_t nextr = 0;
        for (int i = 0; i < n && w != 0.0; ++i) {
            const double xi = xr[i];
            if (xi != 0.0) {                 // the same for every work-item
                const double di = d[i], dpi = di + w * xi * xi;
                const double cbar = di / dpi, sbar = w * xi / dpi;
                const double ti = thetab[i];
                w *= cbar;
                if (lid == 0) {
                    if (late >= 0) {
                        d[late] = late_d;
                        thetab[late] = late_t;
                    }
                    late = i;
                    late_d = dpi;
                    late_t = cbar * ti + sbar * yelem;
                }
                for (int k = i + 1 + lid; k < n; k += WG) {
                    const size_t at = nextr + (k - i - 1);
                    const double xk = xr[k];
                    xr[k] = xk - xi * rbar[at];
                    rbar[at] = cbar * rbar[at] + sbar * xk;
                }
                yelem -= xi * ti;
            }
            nextr += n - i - 1;
            barrier(CLK_LOCAL_MEM_FENCE |
                    CLK_GLOBAL_MEM_FENCE);  // every work-item meets every barrier
        }
        if (lid == 0 && late >= 0) {
            d[late] = late_d;
            thetab[late] = late_t;
            late = -1;
        }
        sse += w * yelem * yelem;
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    }
    if (lid == 0)
        sserr[0] = sse;
}
