// Step 6: a blocked Cholesky factorisation G = L L' on the device, for
// CholeskyQR2 (gpubook.chapters.cholqr). G is k x k, row-major with stride
// ld, and only its lower triangle is read. The host walks the diagonal
// blocks of CB columns; for block j0 (w columns):
//   chol_diag   one work-group factors the w x w diagonal block: L11 goes
//               to G's lower triangle, L11' (= R's block) to its upper, the
//               pivots to diag, M to linv (below), and flag[0] = 1 where a
//               pivot is not positive and finite (G is not numerically
//               positive definite: the host falls back); with reset, it
//               first sets flag[0] = 0 (the first block of a factorisation)
//   chol_rows   each work-item takes one row i below the block: it solves
//               x L11' = G[i, j0..j0+w) and writes x to
//               row i (L21) and to column i of the block's rows (R12)
//   (the host)  the trailing lower triangle -= L21 L21', a register-tiled
//               product that reads R12, whose rows are contiguous
//   chol_cols   for R^-1 when asked: E starts as the identity (`identity`), and the same
//               elimination applied to it leaves L^-1 in E. Each work-item
//               takes one column of E's block rows and solves L11 x = b;
//               the host then subtracts L21 x from the rows below (another
//               register-tiled product).
// No work-group waits for another: each launch finishes before the next.
// Build options: CB, the block's columns; WG, chol_diag's work-items;
// STAMPS=1 (NVIDIA, joined after device/nv_clock.cl): chol_diag takes one more
// argument and writes work-item 0's %clock64 there at each phase (start, block
// loaded, after each column c at 2 + c, L11 read back, end at CB + 3), so that
// a probe sees where its time goes (tools/probe_chol_diag.py).
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#ifndef STAMPS
#define STAMPS 0
#endif
#if STAMPS
#define STAMP_ARG , __global ulong *restrict stamps
#define STAMP(s) if (get_local_id(0) == 0) stamps[s] = cycles()
#else
#define STAMP_ARG
#define STAMP(s)
#endif
#define LDL (CB + 1)  // local rows padded by one: column walks change bank
#define SB (CB < 16 ? CB : 16)       // the solves' sub-blocks
// chol_diag with its block in registers (below) where a column has a work-item
// per row at least: NACT work-items, RS rows apart, NR rows each
#ifndef DIAG_REGS
#define DIAG_REGS (WG >= CB)
#endif
#define NACT (WG < CB * CB ? WG : CB * CB)
#define RS (NACT / CB)
#define NR (CB / RS)

// The block in local memory. At step c every work-item reads the pivot and
// column c as the previous step left them, writes L's column c (scaled)
// straight to global memory, and updates its own entries of the trailing
// triangle (element e = i * CB + j for e = lid, lid + WG, ... past row c),
// which column c is not part of: one barrier per column. The columns' steps
// take nine tenths of the time: on an H200 (2026-11-28, tools/probe_chol_diag.py,
// %clock64) a 64 x 64 block took 77 us at 256 work-items and 55 us at 512 or
// 1,024; loading every entry of a batch of 8 before storing any took 62 us at
// 256 and was slower at 512 (67 us) and 1,024 (99 us). Then M goes to
// linv: L11 with its SB x SB diagonal sub-blocks inverted, so that the two
// solves below wait on CB / SB sub-blocks instead of CB columns.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void chol_diag(
        __global double *restrict g, const int ld, const int j0, const int w,
        __global double *restrict diag, __global int *restrict flag,
        const int reset, __global double *restrict linv STAMP_ARG)
{
    __local double a[CB * LDL];
    const int lid = get_local_id(0);
    if (reset && lid == 0)    // the work-item that sets it on a bad pivot, so in order
        flag[0] = 0;
    STAMP(0);
#if DIAG_REGS
    // work-item lid holds column lid % CB of rows lid / CB, + RS, + 2 RS, ... in
    // registers; the owners of column c publish it in local memory, one buffer of
    // two, and everyone updates its own entries from there
    __local double col[2 * CB];
    const int jj = lid % CB, i0 = lid / CB;
    double v[NR];
#pragma unroll
    for (int k = 0; k < NR; ++k) {
        const int i = i0 + k * RS;
        v[k] = (lid < NACT && i < w && jj <= i) ? g[(size_t)(j0 + i) * ld + j0 + jj] : 0.0;
    }
    for (int e = lid; e < CB * CB; e += WG)
        a[(e / CB) * LDL + e % CB] = 0.0;
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    STAMP(1);
    for (int c = 0; c < w; ++c) {
        __local double *cc = col + (c & 1) * CB;
        if (lid < NACT && jj == c) {
#pragma unroll
            for (int k = 0; k < NR; ++k)
                cc[i0 + k * RS] = v[k];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        const double d = cc[c], rl = rsqrt(d), l = d * rl;
        if (lid == 0) {
            diag[j0 + c] = l;
            if (!(d > 0.0) || isinf(d))
                flag[0] = 1;
        }
        if (lid >= c && lid < w) {               // L[lid][c], into both triangles
            const double x = lid == c ? l : cc[lid] * rl;
            g[(size_t)(j0 + lid) * ld + j0 + c] = x;
            g[(size_t)(j0 + c) * ld + j0 + lid] = x;
            a[lid * LDL + c] = x;
        }
        if (lid < NACT && jj > c && jj < w) {   // every load, then the updates that count
            const double lj = cc[jj] * rl;
            double x[NR];
#pragma unroll
            for (int k = 0; k < NR; ++k)
                x[k] = cc[i0 + k * RS];
#pragma unroll
            for (int k = 0; k < NR; ++k) {
                const int i = i0 + k * RS;
                v[k] = (i >= jj && i < w) ? fma(-(x[k] * rl), lj, v[k]) : v[k];
            }
        }
        STAMP(2 + c);
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
#else
    for (int e = lid; e < CB * CB; e += WG) {
        const int i = e / CB, j = e % CB;
        a[i * LDL + j] = (i < w && j <= i) ? g[(size_t)(j0 + i) * ld + j0 + j] : 0.0;
    }
    // a global fence too: the loop below overwrites in g what other work-items read
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    STAMP(1);
    for (int c = 0; c < w; ++c) {
        // one reciprocal square root on the chain, not a square root and a division
        const double d = a[c * LDL + c], rl = rsqrt(d), l = d * rl;
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
        for (int e = (c + 1) * CB + lid; e < w * CB; e += WG) {
            const int i = e / CB, j = e % CB;
            if (j > c && j <= i)
                a[i * LDL + j] = fma(-(a[i * LDL + c] * rl), a[j * LDL + c] * rl,
                                     a[i * LDL + j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        STAMP(2 + c);
    }
    // L11 itself into local memory (the loop above left column c unscaled),
    // read back from what the work-group wrote to global memory
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    for (int e = lid; e < w * CB; e += WG) {
        const int i = e / CB, j = e % CB;
        if (j <= i)
            a[i * LDL + j] = g[(size_t)(j0 + i) * ld + j0 + j];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
    STAMP(CB + 2);
    // M: L11 with its SB x SB diagonal sub-blocks replaced by their inverses
    // (zeros above): work-item (b, j) inverts column j of sub-block b
    for (int e = lid; e < CB * CB; e += WG) {
        const int c = e / CB, t = e % CB;
        if (t < c / SB * SB)
            linv[e] = c < w ? a[c * LDL + t] : 0.0;
        else if (t >= (c / SB + 1) * SB || t > c)
            linv[e] = 0.0;
    }
    for (int q = lid; q < CB; q += WG) {
        const int b0 = q / SB * SB, j = q % SB;
        double y[SB];
#pragma unroll
        for (int c = 0; c < SB; ++c) {
            double v = c == j ? 1.0 : 0.0;
#pragma unroll
            for (int t = 0; t < c; ++t)
                if (t >= j)
                    v = fma(-a[(b0 + c) * LDL + b0 + t], y[t], v);
            y[c] = (c >= j && b0 + c < w) ? v / a[(b0 + c) * LDL + b0 + c] : 0.0;
            if (c >= j)
                linv[(b0 + c) * CB + b0 + j] = y[c];
        }
    }
#if STAMPS
    barrier(CLK_GLOBAL_MEM_FENCE);
    STAMP(CB + 3);
#endif
}

// M (CB x CB, from chol_diag) into local memory.
static void load_linv(__global const double *linv, __local double *l)
{
    for (int e = get_local_id(0); e < CB * CB; e += get_local_size(0))
        l[(e / CB) * LDL + e % CB] = linv[e];
    barrier(CLK_LOCAL_MEM_FENCE);
}

// Rows j0 + CB .. k - 1 (the block is full: rows below exist only then):
// x L11' = a, SB columns at a time: s = a - (the earlier x) L', a plain sum,
// then x = s Lbb^-T with the sub-block's inverse, another. The chain of
// dependent steps is CB / SB sub-blocks long instead of CB columns.
__kernel void chol_rows(__global double *restrict g, const int ld, const int j0,
                        const int k, __global const double *restrict linv)
{
    __local double l[CB * LDL];
    load_linv(linv, l);
    const int i = j0 + CB + get_global_id(0);
    if (i >= k)
        return;
    __global double *row = g + (size_t)i * ld + j0;
    double x[CB];
#pragma unroll
    for (int b0 = 0; b0 < CB; b0 += SB) {
        double s[SB];
#pragma unroll
        for (int c = 0; c < SB; ++c) {
            double v = row[b0 + c];
#pragma unroll
            for (int t = 0; t < b0; ++t)
                v = fma(-x[t], l[(b0 + c) * LDL + t], v);
            s[c] = v;
        }
#pragma unroll
        for (int c = 0; c < SB; ++c) {
            double v = 0.0;
#pragma unroll
            for (int t = 0; t <= c; ++t)
                v = fma(s[t], l[(b0 + c) * LDL + b0 + t], v);
            x[b0 + c] = v;
            row[b0 + c] = v;
            g[(size_t)(j0 + b0 + c) * ld + i] = v;
        }
    }
}

// E's rows j0 .. j0 + w - 1, columns 0 .. j0 + w - 1: L11 x = b per column,
// SB rows at a time as in chol_rows.
__kernel void chol_cols(__global double *restrict e, const int ld, const int j0,
                        const int w, __global const double *restrict linv)
{
    __local double l[CB * LDL];
    load_linv(linv, l);
    const int j = get_global_id(0);
    if (j >= j0 + w)
        return;
    double x[CB];
#pragma unroll
    for (int b0 = 0; b0 < CB; b0 += SB) {
        double s[SB];
#pragma unroll
        for (int c = 0; c < SB; ++c) {
            double v = b0 + c < w ? e[(size_t)(j0 + b0 + c) * ld + j] : 0.0;
#pragma unroll
            for (int t = 0; t < b0; ++t)
                v = fma(-l[(b0 + c) * LDL + t], x[t], v);
            s[c] = v;
        }
#pragma unroll
        for (int c = 0; c < SB; ++c) {
            double v = 0.0;
#pragma unroll
            for (int t = 0; t <= c; ++t)
                v = fma(l[(b0 + c) * LDL + b0 + t], s[t], v);
            x[b0 + c] = v;
            if (b0 + c < w)
                e[(size_t)(j0 + b0 + c) * ld + j] = v;
        }
    }
}

// dst = the upper (upper = 1) or lower triangle of src, zeros elsewhere (k x k, stride
// ld).
__kernel void take_triangle(__global const double *restrict src,
                            __global double *restrict dst, const int ld, const int k,
                            const int upper)
{
    const int j = get_global_id(0), i = get_global_id(1);
    if (i < k && j < k)
        dst[(size_t)i * ld + j] =
                (upper ? j >= i : j <= i) ? src[(size_t)i * ld + j] : 0.0;
}

// e = the k x k identity (where the inverse's elimination starts), one
// work-item per entry, neighbours along a row.
__kernel void identity(__global double *restrict e, const int ld, const int k)
{
    const int j = get_global_id(0), i = get_global_id(1);
    if (i < k && j < k)
        e[(size_t)i * ld + j] = i == j ? 1.0 : 0.0;
}

// Shifted CholeskyQR (gpubook.chapters.lsq.shifted): g's diagonal += coef *
// trace(g), the shift s = coef ||A||_F^2 for the Gram matrix g = A'A. One
// work-group of WG adds the trace up in a fixed order, then shifts.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void shift_diagonal(
        __global double *restrict g, const int ld, const int k, const double coef)
{
    __local double part[WG];
    const int lid = get_local_id(0);
    double t = 0.0;
    for (int i = lid; i < k; i += WG)
        t += g[(size_t)i * ld + i];
    part[lid] = t;
    barrier(CLK_LOCAL_MEM_FENCE);
    double trace = 0.0;
    for (int i = 0; i < WG; ++i)   // every work-item, the same sum in the same order
        trace += part[i];
    for (int i = lid; i < k; i += WG)
        g[(size_t)i * ld + i] += coef * trace;
}

// The condition estimate's two Frobenius norms: out[at + j] = the sum of
// squares of column j's entries in the upper (i <= j) or lower (i >= j)
// triangle of src, one work-item per column (neighbours read neighbours).
__kernel void column_squares(__global const double *restrict src, const int ld,
                             const int k, const int upper,
                             __global double *restrict out, const int at)
{
    const int j = get_global_id(0);
    if (j >= k)
        return;
    double s = 0.0;
    const int i0 = upper ? 0 : j, i1 = upper ? j + 1 : k;
    for (int i = i0; i < i1; ++i) {
        const double v = src[(size_t)i * ld + j];
        s += v * v;
    }
    out[at + j] = s;
}
