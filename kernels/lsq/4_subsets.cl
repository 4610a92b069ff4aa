// Step 4: every subset of K of the P candidate regressors (the intercept always
// in), one subset per work-item, from the small cross-product X'X = R'DR and
// X'y that the factorisation gives. Work-item g finds its subset by unranking
// g in the combinatorial number system (rank = sum over i of C(c_i, i) for
// c_1 < ... < c_K), copies the (K+1) x (K+1) block of X'X and the K+1 values of
// X'y into private memory, factors the block by Cholesky and writes the
// residual sum of squares y'y - z'z, with L z = (X'y)_S. A block that is not
// positive definite (exactly collinear columns) gets +infinity.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define S (K + 1)

// (No `restrict` here: the kernels' arguments carry it. On an inlined helper, clang
// adds llvm.experimental.noalias.scope.decl, which Oclgrind 21.10 cannot run.)
static double rss_of(ulong g, __global const double *a, __global const double *b,
                     const double yty, __global const ulong *binom)
{
    int cols[S];
    cols[0] = 0;                                   // the intercept, column 0 of X'X
    ulong r = g;
    int c = P;
    for (int i = K; i >= 1; --i) {                 // binom[c * (K + 1) + i] = C(c, i)
        c -= 1;
        while (binom[c * (K + 1) + i] > r)
            --c;
        r -= binom[c * (K + 1) + i];
        cols[i] = c + 1;                           // candidate c is column c + 1
    }
    double l[S][S], z[S];
    for (int i = 0; i < S; ++i) {
        for (int j = 0; j <= i; ++j)
            l[i][j] = a[cols[i] * (P + 1) + cols[j]];
        z[i] = b[cols[i]];
    }
    for (int j = 0; j < S; ++j) {                  // Cholesky, column by column
        double diag = l[j][j];
        for (int k = 0; k < j; ++k)
            diag -= l[j][k] * l[j][k];
        if (!(diag > 1e-12 * a[cols[j] * (P + 1) + cols[j]]))
            return INFINITY;
        diag = sqrt(diag);
        l[j][j] = diag;
        for (int i = j + 1; i < S; ++i) {
            double v = l[i][j];
            for (int k = 0; k < j; ++k)
                v -= l[i][k] * l[j][k];
            l[i][j] = v / diag;
        }
    }
    double fit = 0.0;
    for (int i = 0; i < S; ++i) {                  // forward substitution, L z = X'y
        double v = z[i];
        for (int k = 0; k < i; ++k)
            v -= l[i][k] * z[k];
        z[i] = v / l[i][i];
        fit += z[i] * z[i];
    }
    return yty - fit;
}

// The subsets of ranks first, first + 1, ..., first + count - 1.
__kernel void subset_rss(__global const double *restrict a,
                         __global const double *restrict b, const double yty,
                         const ulong first, const ulong count,
                         __global const ulong *restrict binom,
                         __global double *restrict rss)
{
    const ulong i = get_global_id(0);
    if (i < count)
        rss[i] = rss_of(first + i, a, b, yty, binom);
}

#ifdef WG
// Chapter 10: the same subsets, but each work-group of WG work-items keeps only
// its smallest RSS and that subset's rank (the smaller rank on a tie), so that a
// device returns 1/WG of the values and the search needs no array of every RSS.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void subset_best(
        __global const double *restrict a, __global const double *restrict b,
        const double yty, const ulong first, const ulong count,
        __global const ulong *restrict binom, __global double *restrict best_rss,
        __global ulong *restrict best_rank)
{
    __local double lr[WG];
    __local ulong lg[WG];
    const ulong i = get_global_id(0);
    const int l = get_local_id(0);
    lr[l] = i < count ? rss_of(first + i, a, b, yty, binom) : INFINITY;
    lg[l] = first + i;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = WG / 2; step > 0; step >>= 1) {
        if (l < step && (lr[l + step] < lr[l] ||
                         (lr[l + step] == lr[l] && lg[l + step] < lg[l]))) {
            lr[l] = lr[l + step];
            lg[l] = lg[l + step];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) {
        best_rss[get_group_id(0)] = lr[0];
        best_rank[get_group_id(0)] = lg[0];
    }
}
#endif
