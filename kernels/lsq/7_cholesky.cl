// Step 6: a blocked Cholesky factorisation G = L L' on the device, for
// CholeskyQR2 (gpubook.chapters.cholqr). G is k x k, row-major with stride
// ld, and only its lower triangle is read. The host walks the diagonal
// blocks of CB columns; for block j0 (w columns):
//   chol_diag   one work-group factors the w x w diagonal block: L11 goes
//               to G's lower triangle, L11' (= R's block) to its upper, the
//               pivots to diag, L11^-1 to linv, and flag[0] = 1 where a
//               pivot is not positive and finite (G is not numerically
//               positive definite: the host falls back)
//   chol_rows   each work-item takes one row i below the block: it solves
//               x L11' = G[i, j0..j0+w) as x = a L11^-T and writes x to
//               row i (L21) and to column i of the block's rows (R12)
//   (the host)  the trailing lower triangle -= L21 L21', a register-tiled
//               product that reads R12, whose rows are contiguous
//   chol_cols   for R^-1 when asked: E starts as the identity, and the same
//               elimination applied to it leaves L^-1 in E. Each work-item
//               takes one column of E's block rows: x = L11^-1 b;
//               the host then subtracts L21 x from the rows below (another
//               register-tiled product).
// No work-group waits for another: each launch finishes before the next.
// Build option: CB, the block's columns (chol_diag's work-items).
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define LDL (CB + 1)                 // local rows padded by one: column walks change bank

// One work-item per row of the block, the block in local memory. At step
// c every work-item copies its a[i][c] into `col` (two arrays in turn: one
// barrier per column), reads the pivot and the column from there, scales
// its own a[i][c] and updates the rest of its own row. Then work-item j
// solves L11 x = e_j for column j of L11^-1, top down, keeping x in the
// unused upper triangle of its own row (x_c at a[j][c], c > j): that turns
// the two solves below into plain sums without a chain of dependent steps.
__kernel __attribute__((reqd_work_group_size(CB, 1, 1)))
void chol_diag(__global double *restrict g, const int ld, const int j0, const int w,
               __global double *restrict diag, __global int *restrict flag, __global double *restrict linv)
{
    __local double a[CB * LDL];
    __local double col[2][CB];
    __local double dinv[CB];
    const int i = get_local_id(0);
    for (int j = 0; j < CB; ++j)
        a[i * LDL + j] = (i < w && j <= i) ? g[(size_t)(j0 + i) * ld + j0 + j] : 0.0;
    __local double *row = a + i * LDL;
    for (int c = 0; c < w; ++c) {
        __local double *cc = col[c & 1];
        cc[i] = row[c];
        barrier(CLK_LOCAL_MEM_FENCE);
        const double d = cc[c], root = sqrt(d), rl = 1.0 / root;
        if (i == 0 && (!(d > 0.0) || isinf(d)))
            flag[0] = 1;
        if (i > c) {
            const double li = row[c] * rl;
            row[c] = li;
            for (int j = c + 1; j <= i; ++j)
                row[j] = fma(-li, cc[j] * rl, row[j]);
        } else if (i == c) {
            row[c] = root;
        }
    }
    if (i < w) {
        for (int j = 0; j <= i; ++j) {
            g[(size_t)(j0 + i) * ld + j0 + j] = row[j];
            g[(size_t)(j0 + j) * ld + j0 + i] = row[j];
        }
        diag[j0 + i] = row[i];
        dinv[i] = 1.0 / row[i];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    // column i of L11^-1: x_i = 1 / L[i][i], x_c = -(sum over i <= t < c of L[c][t] x_t) / L[c][c]
    for (int c = 0; c < CB; ++c) {
        double x = 0.0;
        if (c == i && c < w)
            x = dinv[i];
        else if (c > i && c < w) {
            double s = -a[c * LDL + i] * dinv[i];
            for (int t = i + 1; t < c; ++t)
                s = fma(-a[c * LDL + t], row[t], s);
            x = s * dinv[c];
            row[c] = x;
        }
        linv[c * CB + i] = x;
    }
}

// L11^-1 (CB x CB, from chol_diag) into local memory.
static void load_linv(__global const double *linv, __local double *l)
{
    for (int e = get_local_id(0); e < CB * CB; e += get_local_size(0))
        l[(e / CB) * LDL + e % CB] = linv[e];
    barrier(CLK_LOCAL_MEM_FENCE);
}

// Rows j0 + CB .. k - 1 (the block is full: rows below exist only then):
// x = a L11^-T, x[c] = sum over t <= c of a[t] L11^-1[c][t].
__kernel void chol_rows(__global double *restrict g, const int ld, const int j0, const int k,
                        __global const double *restrict linv)
{
    __local double l[CB * LDL];
    load_linv(linv, l);
    const int i = j0 + CB + get_global_id(0);
    if (i >= k)
        return;
    __global double *row = g + (size_t)i * ld + j0;
    double a[CB];
#pragma unroll
    for (int t = 0; t < CB; ++t)
        a[t] = row[t];
#pragma unroll
    for (int c = 0; c < CB; ++c) {
        double s = 0.0, s2 = 0.0;
#pragma unroll
        for (int t = 0; t + 1 <= c; t += 2) {
            s = fma(a[t], l[c * LDL + t], s);
            s2 = fma(a[t + 1], l[c * LDL + t + 1], s2);
        }
        if (c % 2 == 0)
            s = fma(a[c], l[c * LDL + c], s);
        row[c] = s + s2;
        g[(size_t)(j0 + c) * ld + i] = s + s2;
    }
}

// E's rows j0 .. j0 + w - 1, columns 0 .. j0 + w - 1: x = L11^-1 b per column.
__kernel void chol_cols(__global double *restrict e, const int ld, const int j0, const int w,
                        __global const double *restrict linv)
{
    __local double l[CB * LDL];
    load_linv(linv, l);
    const int j = get_global_id(0);
    if (j >= j0 + w)
        return;
    double b[CB];
#pragma unroll
    for (int t = 0; t < CB; ++t)
        b[t] = t < w ? e[(size_t)(j0 + t) * ld + j] : 0.0;
#pragma unroll
    for (int c = 0; c < CB; ++c) {
        double s = 0.0, s2 = 0.0;
#pragma unroll
        for (int t = 0; t + 1 <= c; t += 2) {
            s = fma(l[c * LDL + t], b[t], s);
            s2 = fma(l[c * LDL + t + 1], b[t + 1], s2);
        }
        if (c % 2 == 0)
            s = fma(l[c * LDL + c], b[c], s);
        if (c < w)
            e[(size_t)(j0 + c) * ld + j] = s + s2;
    }
}

// dst = the upper (upper = 1) or lower triangle of src, zeros elsewhere (k x k, stride ld).
__kernel void take_triangle(__global const double *restrict src, __global double *restrict dst,
                            const int ld, const int k, const int upper)
{
    const int j = get_global_id(0), i = get_global_id(1);
    if (i < k && j < k)
        dst[(size_t)i * ld + j] = (upper ? j >= i : j <= i) ? src[(size_t)i * ld + j] : 0.0;
}

// The identity's diagonal (the rest of e was zeroed by the host).
__kernel void unit_diagonal(__global double *restrict e, const int ld, const int k)
{
    const int i = get_global_id(0);
    if (i < k)
        e[(size_t)i * ld + i] = 1.0;
}
