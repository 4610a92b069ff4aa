// Step 5: what the outer panel needs around its three register-tiled
// products (kernels/tiles/register_tiles.cl, built in double). The outer panel
// holds columns K0..K0+pw of [R; B]; its reflections are e_j on top and u_j
// (B's column j) below, their scalars tau_j from step 3's house_step.
//
//   1. Zp[chunk] = U' [B's columns K0..]           product, split over row chunks
//   2. z_sum:      Z = sum of the chunks, + R's panel rows past the panel
//   3. build_t:    T from tau and G = U'U (Z's first pw columns)
//   4. W = T' Z past the panel                      product
//   5. r_update:   R's panel rows -= W
//   6. transpose:  Ut = U', so that U is read along rows
//   7. B past the panel -= U W = Ut' W               product
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

// Z[i, c] for i < pw and K0 <= c < ld: the chunks' sums, plus R[K0 + i, c]
// for the columns past the panel (the e_j parts of the reflections).
__kernel void z_sum(__global const double *restrict Zp, const int chunks,
                    const int stride, __global const double *restrict R,
                    __global double *restrict Z, const int ld, const int K0,
                    const int pw)
{
    const int c = K0 + get_global_id(0), i = get_global_id(1);
    if (c >= ld || i >= pw)
        return;
    double s = c >= K0 + pw ? R[(size_t)(K0 + i) * ld + c] : 0.0;
    for (int h = 0; h < chunks; ++h)
        s += Zp[(size_t)h * stride + (size_t)i * ld + c];
    Z[(size_t)i * ld + c] = s;
}

// The compact form Q = I - V T V' of the panel's pw reflections: T is upper
// triangular with T[i][i] = tau_i and, column by column,
// T[0:j, j] = -tau_j T[0:j, 0:j] G[0:j, j], where G[l][j] = u_l' u_j (the e
// parts of two reflections never overlap). Row i of T needs only its own
// earlier entries: each work-item builds its rows, and the work-group shares one
// column of G at a time through local memory. One work-group, ideally of pw.
__kernel void build_t(__global const double *restrict Z, const int ld, const int K0,
                      const int pw, __global const double *restrict tau,
                      __global double *restrict T, const int ldt, __local double *g)
{
    // Work-item `lid` takes rows lid, lid + L, ... (L work-items): one row each
    // wherever the work-group is as wide as the panel.
    const int lid = get_local_id(0), L = get_local_size(0);
    for (int i = lid; i < pw; i += L) {
        __global double *row = T + (size_t)i * ldt;
        for (int j = 0; j < i; ++j)
            row[j] = 0.0;
        row[i] = tau[K0 + i];
    }
    for (int j = 1; j < pw; ++j) {
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int i = lid; i < j; i += L)
            g[i] = Z[(size_t)i * ld + K0 + j];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int i = lid; i < j; i += L) {
            __global double *row = T + (size_t)i * ldt;
            double s[4] = {0.0, 0.0, 0.0,
                           0.0};  // four chains: the adds need not wait on each other
            int l = i;
            for (; l + 3 < j; l += 4)
                for (int h = 0; h < 4; ++h)
                    s[h] += row[l + h] * g[l + h];
            for (; l < j; ++l)
                s[0] += row[l] * g[l];
            row[j] = -tau[K0 + j] * ((s[0] + s[1]) + (s[2] + s[3]));
        }
    }
}

// R[K0 + i, c] -= W[i, c] for the columns past the panel.
__kernel void r_update(__global double *restrict R, __global const double *restrict W,
                       const int ld, const int K0, const int pw)
{
    const int c = K0 + pw + get_global_id(0), i = get_global_id(1);
    if (c < ld && i < pw)
        R[(size_t)(K0 + i) * ld + c] -= W[(size_t)i * ld + c];
}

// Ut[i, r] = B[r, K0 + i] for i < pw, r < b, through a TT x TT tile in local
// memory so that both the reads and the writes are along rows (TT: 16 where
// the device allows 256 work-items in a group).
__kernel __attribute__((reqd_work_group_size(TT, TT, 1))) void transpose(
        __global const double *restrict B, const int b, const int ld, const int K0,
        const int pw, __global double *restrict Ut, const int ldu)
{
    __local double tile[TT][TT + 1];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int i0 = get_group_id(0) * TT, r0 = get_group_id(1) * TT;
    if (r0 + ty < b && i0 + tx < pw)
        tile[ty][tx] = B[(size_t)(r0 + ty) * ld + K0 + i0 + tx];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i0 + ty < pw && r0 + tx < b)
        Ut[(size_t)(i0 + ty) * ldu + r0 + tx] = tile[tx][ty];
}
