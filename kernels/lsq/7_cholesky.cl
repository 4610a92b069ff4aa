// Step 6: a blocked Cholesky factorisation G = L L' on the device, for
// CholeskyQR2 (gpubook.chapters.cholqr). G is k x k, row-major with stride
// ld, and only its lower triangle is read. The host walks the diagonal
// blocks of CB columns; for block j0 (w columns):
//   chol_diag   one work-group factors the w x w diagonal block in local
//               memory: L11 goes to G's lower triangle, L11' (= R's block)
//               to its upper, the pivots to diag, and flag[0] = 1 where a
//               pivot is not positive and finite (G is not numerically
//               positive definite: the host falls back)
//   chol_rows   each work-item takes one row i below the block: it solves
//               x L11' = G[i, j0..j0+w) by forward substitution and writes
//               x to row i (L21) and to column i of the block's rows (R12)
//   (the host)  the trailing lower triangle -= L21 L21', a register-tiled
//               product that reads R12, whose rows are contiguous
//   chol_cols   for R^-1 when asked: E starts as the identity, and the same
//               elimination applied to it leaves L^-1 in E. Each work-item
//               takes one column of E's block rows and solves L11 x = b;
//               the host then subtracts L21 x from the rows below (another
//               register-tiled product).
// No work-group waits for another: each launch finishes before the next.
// Build options: CB, the block's columns; WG, chol_diag's work-items.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define LDL (CB + 1)                 // local rows padded by one: column walks change bank

// L11 (w x w, lower) from G's lower triangle into local memory, zeros elsewhere.
static void load_l11(__global const double *g, const int ld, const int j0, const int w,
                     __local double *l)
{
    for (int e = get_local_id(0); e < CB * CB; e += get_local_size(0)) {
        const int i = e / CB, j = e % CB;
        l[i * LDL + j] = (i < w && j <= i) ? g[(size_t)(j0 + i) * ld + j0 + j] : 0.0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

// One barrier per column: at step c every work-item reads the pivot and
// column c as the previous step left them, writes L's column c (scaled)
// straight to global memory, and updates its own entries of the trailing
// triangle (element e = i * CB + j for e = lid, lid + WG, ...), which
// column c is not part of: nothing it reads changes during the step.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void chol_diag(__global double *restrict g, const int ld, const int j0, const int w,
               __global double *restrict diag, __global int *restrict flag)
{
    __local double a[CB * LDL];
    const int lid = get_local_id(0);
    load_l11(g, ld, j0, w, a);
    for (int c = 0; c < w; ++c) {
        const double d = a[c * LDL + c], l = sqrt(d), rl = 1.0 / l;
        if (lid == 0) {
            diag[j0 + c] = l;
            if (!(d > 0.0) || isinf(d))
                flag[0] = 1;
        }
        for (int r = c + lid; r < w; r += WG) {      // L[r][c], into both triangles
            const double v = r == c ? l : a[r * LDL + c] * rl;
            g[(size_t)(j0 + r) * ld + j0 + c] = v;
            g[(size_t)(j0 + c) * ld + j0 + r] = v;
        }
        for (int e = lid; e < w * CB; e += WG) {
            const int i = e / CB, j = e % CB;
            if (j > c && j <= i)
                a[i * LDL + j] = fma(-(a[i * LDL + c] * rl), a[j * LDL + c] * rl, a[i * LDL + j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

// Rows j0 + CB .. k - 1 (the block is full: rows below exist only then).
__kernel void chol_rows(__global double *restrict g, const int ld, const int j0, const int k)
{
    __local double l[CB * LDL];
    __local double inv[CB];
    load_l11(g, ld, j0, CB, l);
    for (int c = get_local_id(0); c < CB; c += get_local_size(0))
        inv[c] = 1.0 / l[c * LDL + c];
    barrier(CLK_LOCAL_MEM_FENCE);
    const int i = j0 + CB + get_global_id(0);
    if (i >= k)
        return;
    __global double *row = g + (size_t)i * ld + j0;
    double x[CB];
#pragma unroll
    for (int c = 0; c < CB; ++c) {
        double s = row[c], s2 = 0.0;                 // two chains: half the latency
#pragma unroll
        for (int t = 0; t + 1 < c; t += 2) {
            s = fma(-x[t], l[c * LDL + t], s);
            s2 = fma(-x[t + 1], l[c * LDL + t + 1], s2);
        }
        if (c % 2)
            s = fma(-x[c - 1], l[c * LDL + c - 1], s);
        x[c] = (s + s2) * inv[c];
    }
#pragma unroll
    for (int c = 0; c < CB; ++c) {
        row[c] = x[c];
        g[(size_t)(j0 + c) * ld + i] = x[c];
    }
}

// E's rows j0 .. j0 + w - 1, columns 0 .. j0 + w - 1: x = L11^-1 b per column.
__kernel void chol_cols(__global const double *restrict g, __global double *restrict e, const int ld,
                        const int j0, const int w)
{
    __local double l[CB * LDL];
    __local double inv[CB];
    load_l11(g, ld, j0, w, l);
    for (int c = get_local_id(0); c < w; c += get_local_size(0))
        inv[c] = 1.0 / l[c * LDL + c];
    barrier(CLK_LOCAL_MEM_FENCE);
    const int j = get_global_id(0);
    if (j >= j0 + w)
        return;
    double x[CB];
#pragma unroll
    for (int c = 0; c < CB; ++c) {
        double s = c < w ? e[(size_t)(j0 + c) * ld + j] : 0.0, s2 = 0.0;
#pragma unroll
        for (int t = 0; t + 1 < c; t += 2) {
            s = fma(-l[c * LDL + t], x[t], s);
            s2 = fma(-l[c * LDL + t + 1], x[t + 1], s2);
        }
        if (c % 2)
            s = fma(-l[c * LDL + c - 1], x[c - 1], s);
        x[c] = (s + s2) * (c < w ? inv[c] : 0.0);
    }
#pragma unroll
    for (int c = 0; c < CB; ++c)
        if (c < w)
            e[(size_t)(j0 + c) * ld + j] = x[c];
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
