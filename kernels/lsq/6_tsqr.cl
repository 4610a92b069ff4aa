// Chapter 8's communication-avoiding panel: TSQR (Demmel, Grigori, Hoemmen
// and Langou), plus the two small helpers of CholeskyQR2.
//
// tsqr_leaf: work-group g factors rows g*BR .. g*BR+BR-1 of a tall matrix of
// C columns (the response as its last column) by Householder reflections
// and writes its C x C triangle R_g. tsqr_tree: work-group g stacks R_2g on
// R_2g+1 (they lie one after the other: a 2C x C matrix), factors the stack
// and writes one triangle; the host launches it until one R is left, one
// work-group per pair, and copies a last triangle without a partner itself.
// No work-group ever waits for another: each level is one launch.
//
// No work-group returns early: every work-item runs to the end. With a return
// before the barriers (the unpaired triangle's copy was one), PoCL 3.0's default
// work-group method (loopvec, LLVM 14) ran the body of write_r's loop
// `for (e = lid; e < C * C; e += WG)` for every work-item, e up to WG - 1: each
// pair wrote WG - C * C values past its triangle, over the next one's first rows
// when that group ran first (a wrong R), or past the buffer's end.
//
// One Householder step per column j, two barriers each. Work-item (tx, ty)
// owns columns j + tx, j + tx + TX, ... and the active rows t = ty, ty + TY,
// ... (t = 0 is the pivot row):
//   1. part[ty][k] = sum over its rows t >= 1 of x_t * a_tk for k >= j
//      (k = j gives the squared norm below the pivot), piv[k] = a_0k
//   2. every work-item forms the same reflection from part and piv:
//      beta = -sign(alpha) |x|, tau = (beta - alpha) / beta, v = (1, x / (alpha -
//      beta))
//   3. a_k -= tau v (v'a_k) for its columns k > j and its rows
//   4. the pivot becomes beta; column j is not read again.
// A column with nothing below its pivot (tau = 0, as where a column repeats
// an earlier one) is left as it is: R's diagonal is then ~0, never NaN.
//
// Build options: PART 1 (the leaves), 2 (the tree) or 3 (CholeskyQR2's
// helpers), one build each, so that each decides on local memory alone;
// C columns; WG = TX * TY work-items; BR rows per leaf; IN_LOCAL 1 to copy
// the work-group's block into local memory (where it fits), 0 to work on it
// in place in global memory; TT the transpose's tile side.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#if PART < 3
#define TY (WG / TX)
#if IN_LOCAL
#define SPACE __local
#else
#define SPACE __global
#endif

// Row of the block that holds active row t of column j. A leaf: rows j..;
// a stack of two triangles: the top's row j, then the bottom's rows 0..j
// (all other rows are zero in columns >= j).
inline int active_row(const int j, const int t, const int stacked)
{
    return stacked ? (t == 0 ? j : C + t - 1) : j + t;
}

static void householder(SPACE double *p, const int nrows, const int stacked,
                        __local double *part, __local double *piv)
{
    const int lid = get_local_id(0), tx = lid % TX, ty = lid / TX;
    const int jend = stacked ? C : min(C, nrows);
    for (int j = 0; j < jend; ++j) {
        const int count = stacked ? j + 2 : nrows - j;
        const int pivot = active_row(j, 0, stacked);
        for (int k = j + tx; k < C; k += TX) {                      // 1.
            double s = 0.0;
            for (int t = 1 + ty; t < count; t += TY) {
                const int r = active_row(j, t, stacked);
                s = fma(p[r * C + j], p[r * C + k], s);
            }
            part[ty * C + k] = s;
            if (ty == 0)
                piv[k] = p[pivot * C + k];
        }
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        double xn2 = 0.0;                                           // 2.
        for (int y = 0; y < TY; ++y)
            xn2 += part[y * C + j];
        const double alpha = piv[j];
        double beta = alpha, tau = 0.0, scale = 0.0;
        if (xn2 > 0.0) {
            beta = -copysign(sqrt(fma(alpha, alpha, xn2)), alpha);
            tau = (beta - alpha) / beta;
            scale = 1.0 / (alpha - beta);
        }
        for (int k = j + 1 + tx; k < C; k += TX) {                  // 3.
            double s = 0.0;
            for (int y = 0; y < TY; ++y)
                s += part[y * C + k];
            const double w = tau * fma(scale, s, piv[k]);           // tau * v'a_k
            if (ty == 0)
                p[pivot * C + k] = piv[k] - w;
            const double ws = w * scale;
            for (int t = 1 + ty; t < count; t += TY) {
                const int r = active_row(j, t, stacked);
                p[r * C + k] = fma(-ws, p[r * C + j], p[r * C + k]);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        if (lid == 0)                                               // 4.
            p[pivot * C + j] = beta;
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
}

// The upper triangle of the block's first C rows (its first nrows) into r.
static void write_r(SPACE const double *p, const int nrows, __global double *r)
{
    for (int e = get_local_id(0); e < C * C; e += WG) {
        const int i = e / C, k = e % C;
        r[e] = (k >= i && i < nrows) ? p[e] : 0.0;
    }
}

#if PART == 1
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void tsqr_leaf(__global double *restrict a, const int m, __global double *restrict r)
{
    __local double part[TY * C], piv[C];
    const int g = get_group_id(0);
    const int nrows = min(BR, m - g * BR);
    __global double *block = a + (size_t)g * BR * C;
#if IN_LOCAL
    __local double p[BR * C];
    for (int e = get_local_id(0); e < nrows * C; e += WG)
        p[e] = block[e];
    barrier(CLK_LOCAL_MEM_FENCE);
#else
    __global double *p = block;                 // in place: a is overwritten
#endif
    householder(p, nrows, 0, part, piv);
    write_r(p, nrows, r + (size_t)g * C * C);
}

#else
// Triangles 2g and 2g+1 of rin into triangle g of rout, one work-group per
// pair (a last triangle without a partner is the host's to copy). rin is
// overwritten.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void tsqr_tree(
        __global double *restrict rin, __global double *restrict rout)
{
    __local double part[TY * C], piv[C];
    const int g = get_group_id(0);
    __global double *stack = rin + (size_t)2 * g * C * C;
#if IN_LOCAL
    __local double p[2 * C * C];
    for (int e = get_local_id(0); e < 2 * C * C; e += WG)
        p[e] = stack[e];
    barrier(CLK_LOCAL_MEM_FENCE);
#else
    __global double *p = stack;
#endif
    householder(p, 2 * C, 1, part, piv);
    write_r(p, C, rout + (size_t)g * C * C);
}
#endif
#else

// CholeskyQR2's helpers. The sum of `chunks` partial C x C Gram matrices,
// `stride` apart (the register-tile product writes one per row chunk).
__kernel void sum_chunks(__global const double *restrict part, const int chunks,
                         const int stride, const int n2, __global double *restrict out)
{
    const int e = get_global_id(0);
    if (e >= n2)
        return;
    double s = 0.0;
    for (int h = 0; h < chunks; ++h)
        s += part[(size_t)h * stride + e];
    out[e] = s;
}

// at = a' for a of m rows and C columns, through a TT x TT tile in local
// memory (both reads and writes along rows).
__kernel void transpose_rows(__global const double *restrict a, const int m,
                             __global double *restrict at)
{
    __local double tile[TT][TT + 1];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int c0 = get_group_id(0) * TT, r0 = get_group_id(1) * TT;
    if (r0 + ty < m && c0 + tx < C)
        tile[ty][tx] = a[(size_t)(r0 + ty) * C + c0 + tx];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (c0 + ty < C && r0 + tx < m)
        at[(size_t)(c0 + ty) * m + r0 + tx] = tile[tx][ty];
}
#endif
