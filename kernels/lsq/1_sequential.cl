// Step 1: Miller's includ (AS 274) as written, in one work-item.
// Each row (x, y, weight w) enters the factorisation X'WX = R'DR, with R unit
// upper triangular and packed by rows in rbar, D in d, and the rotated
// response in thetab. Column by column, a square-root-free Givens rotation
// folds the row into row i of R: d[i] grows by w*xi^2, the rest of the row
// and of row i of R are updated, and w shrinks. Whatever is left of y adds
// w*y^2 to the residual sum of squares. Rows row0 .. row0+rows-1 are taken in
// order; `xrow` is scratch for one row.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

__kernel void includ_sequential(
        __global const double *restrict x, __global const double *restrict y,
        __global const double *restrict wt, const int row0, const int rows,
        const int n, __global double *restrict d, __global double *restrict rbar,
        __global double *restrict thetab, __global double *restrict sserr,
        __global double *restrict xrow)
{
    double sse = sserr[0];
    for (int row = row0; row < row0 + rows; ++row) {
        for (int k = 0; k < n; ++k)
            xrow[k] = x[(size_t)row * n + k];
        double w = wt[row], yelem = y[row];
        size_t nextr = 0;
        for (int i = 0; i < n && w != 0.0; ++i) {
            const double xi = xrow[i];
            if (xi == 0.0) {
                nextr += n - i - 1;
                continue;
            }
            const double di = d[i], dpi = di + w * xi * xi;
            const double cbar = di / dpi, sbar = w * xi / dpi;
            w *= cbar;
            d[i] = dpi;
            for (int k = i + 1; k < n; ++k, ++nextr) {
                const double xk = xrow[k];
                xrow[k] = xk - xi * rbar[nextr];
                rbar[nextr] = cbar * rbar[nextr] + sbar * xk;
            }
            const double yk = yelem;
            yelem = yk - xi * thetab[i];
            thetab[i] = cbar * thetab[i] + sbar * yk;
        }
        sse += w * yelem * yelem;
    }
    sserr[0] = sse;
}
