// Step 3: a block of rows B (b x ld, row-major, each row sqrt(w) * [x, y])
// enters the triangle R (n x ld, row-major, column n holds the rotated
// response) by blocked Householder reflections of the stacked matrix [R; B].
// The reflection for column j touches only row j of R and the b rows of B:
// its vector is e_j on top and u (b values, kept in B's column j) below.
// Columns go in panels of up to NB. Inside a panel, one launch of house_step
// per column; the trailing columns get the whole panel at once, as the compact
// form Q = I - V T V', in three launches (trail_w, trail_finish, trail_update).
//
// Many work-groups, and no work-group ever waits for another: every value one
// work-group reads that another one writes was written by an earlier launch,
// and launches on an in-order queue run one after the other. Inside a launch,
// each work-group owns its rows of B (house_step, trail_update) or its
// columns (trail_w), and the few values they all need (the reflection's
// scalars) each work-group recomputes from the same partial sums in the same
// order, so they agree to the last bit.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

// Sums of x[t * NB + l] over t < WGS for every l < NB, left in x[l].
static void reduce_rows(__local double *x)
{
    const int lid = get_local_id(0);
    for (int h = WGS / 2; h > 0; h /= 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < h)
            for (int l = 0; l < NB; ++l)
                x[lid * NB + l] += x[(lid + h) * NB + l];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

// Partial sums, over this work-group's rows, of B[r, col] * B[r, k0 + l] for
// the panel's columns l < pw: part[group * NB + l].
static void panel_dots(__global const double *B, const int b, const int ld,
                       const int k0, const int pw, const int col,
                       __global double *part, __local double *x)
{
    const int lid = get_local_id(0);
    double acc[NB];
    for (int l = 0; l < NB; ++l)
        acc[l] = 0.0;
    for (int r = get_group_id(0) * WGS * RPI + lid, t = 0; t < RPI && r < b;
         ++t, r += WGS) {
        __global const double *row = B + (size_t)r * ld;
        const double c = row[col];
#pragma unroll
        for (int l = 0; l < NB; ++l)
            if (l < pw)
                acc[l] += c * row[k0 + l];
    }
    for (int l = 0; l < NB; ++l)
        x[lid * NB + l] = acc[l];
    reduce_rows(x);
    if (lid < NB)
        part[get_group_id(0) * NB + lid] = x[lid];
}

__kernel __attribute__((reqd_work_group_size(WGS, 1, 1))) void house_dots(
        __global const double *restrict B, const int b, const int ld, const int k0,
        const int pw, __global double *restrict part)
{
    __local double x[WGS * NB];
    panel_dots(B, b, ld, k0, pw, k0, part, x);
}

// Column j = k0 + jj of the panel: sum the partial dots of B's column j with
// the panel's columns (made by the previous launch), form the reflection,
// apply it to this work-group's rows of the panel, and leave the partial dots
// of the next column for the next launch. Work-group 0 also writes tau[j],
// column jj of T, and row jj of the panel's new R block into rnew (R itself
// is only read here: every work-group reads R[j, .] in this launch).
// Everything on the way to the reflection is spread over the work-items:
// WGS / NB of them sum each column's partials, one per column forms w.
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1))) void house_step(
        __global double *restrict B, __global const double *restrict R, const int b,
        const int ld, const int k0, const int pw, const int jj, const int groups,
        __global const double *restrict part_in, __global double *restrict part_out,
        __global double *restrict tau, __global double *restrict T,
        __global double *restrict rnew)
{
    __local double x[WGS * NB];
    __local double g[NB], w[NB];
    const int lid = get_local_id(0), j = k0 + jj, lanes = WGS / NB;
    const int l0 = lid % NB, lane = lid / NB;
    double s = 0.0;
    if (l0 < pw)
        for (int q = lane; q < groups; q += lanes)
            s += part_in[q * NB + l0];
    x[lane * NB + l0] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < NB) {
        for (int p = 1; p < lanes; ++p)
            s += x[p * NB + lid];
        g[lid] = s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const double alpha = R[(size_t)j * ld + j], sigma = g[jj];
    double t = 0.0, scale = 0.0, beta = alpha;
    if (sigma > 0.0) {
        beta = -copysign(sqrt(alpha * alpha + sigma), alpha);
        t = (beta - alpha) / beta;
        scale = 1.0 / (alpha - beta);
    }
    // w[l] = v' (column l) = R[j, k0 + l] + u' B[:, k0 + l], for l > jj
    if (lid < NB)
        w[lid] = (lid > jj && lid < pw) ? R[(size_t)j * ld + k0 + lid] + scale * g[lid]
                                        : 0.0;
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int r = get_group_id(0) * WGS * RPI + lid, i = 0; i < RPI && r < b;
         ++i, r += WGS) {
        __global double *row = B + (size_t)r * ld + k0;
        const double u = scale * row[jj];
#pragma unroll
        for (int l = 0; l < NB; ++l)
            if (l > jj && l < pw)
                row[l] -= t * u * w[l];
        row[jj] = u;
    }
    if (get_group_id(0) == 0) {
        // T[:jj, jj] = -t T[:jj, :jj] (U[:, :jj]' u_jj), with U[:, l]' u_jj = scale *
        // g[l]: work-item i < jj takes row i of T
        if (lid < jj) {
            double v = 0.0;
            for (int l = lid; l < jj; ++l)
                v += T[lid * NB + l] * scale * g[l];
            T[lid * NB + jj] = -t * v;
        }
        if (lid == jj) {
            T[jj * NB + jj] = t;
            tau[j] = t;
            rnew[jj * NB + jj] = beta;
        }
        if (lid > jj && lid < pw)
            rnew[jj * NB + lid] = R[(size_t)j * ld + k0 + lid] - t * w[lid];
    }
    // the next column's partial dots (none after the panel's last column; the
    // barriers stay outside any branch, which some compilers need)
    barrier(CLK_GLOBAL_MEM_FENCE);
    panel_dots(B, jj + 1 < pw ? b : 0, ld, k0, pw, j + 1, part_out, x);
}

// Z = U' B for the trailing columns (from k0 + pw up to cend), split over the rows:
// work-group (tile, chunk) takes TN columns and the KC rows of its chunk and
// leaves its share in Zp[chunk]; trail_finish adds the shares. Work-item
// (cl, q) takes column cl and the rows r = q (mod QL) of the chunk.
__kernel __attribute__((reqd_work_group_size(TN * QL, 1, 1))) void trail_w(
        __global const double *restrict B, const int b, const int ld, const int k0,
        const int pw, __global double *restrict Zp, const int cend)
{
    __local double z[QL * NB * TN];
    const int lid = get_local_id(0), cl = lid % TN, q = lid / TN,
              chunk = get_group_id(1);
    const int c = k0 + pw + get_group_id(0) * TN + cl;
    const int r1 = min(b, (chunk + 1) * KC);
    double acc[NB];
    for (int i = 0; i < NB; ++i)
        acc[i] = 0.0;
    if (c < cend)
        for (int r = chunk * KC + q; r < r1; r += QL) {
            __global const double *row = B + (size_t)r * ld;
            const double bc = row[c];
#pragma unroll
            for (int i = 0; i < NB; ++i)
                if (i < pw)
                    acc[i] += row[k0 + i] * bc;
        }
    for (int i = 0; i < NB; ++i)
        z[(q * NB + i) * TN + cl] = acc[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (q == 0 && c < cend)
        for (int i = 0; i < pw; ++i) {
            double s = 0.0;
            for (int p = 0; p < QL; ++p)
                s += z[(p * NB + i) * TN + cl];
            Zp[((size_t)chunk * NB + i) * ld + c] = s;
        }
}

// Per trailing column c: Z = R[panel rows, c] + the chunks' shares of U' B,
// W = T' Z, R[panel rows, c] -= W, and W kept for trail_update. Work-item
// (lc, i) takes column c and row i of the panel: it adds up Z[i, c], the
// work-group shares Z through local memory, and it forms W[i, c]. Work-group
// 0 also copies the panel's new R block into R.
__kernel __attribute__((reqd_work_group_size(FC, NB, 1))) void trail_finish(
        __global double *restrict R, const int ld, const int k0, const int pw,
        const int chunks, __global const double *restrict Zp,
        __global const double *restrict T, __global const double *restrict rnew,
        __global double *restrict W, const int cend)
{
    __local double z[NB][FC];
    const int lc = get_local_id(0), i = get_local_id(1),
              c = k0 + pw + get_global_id(0);
    if (get_group_id(0) == 0)
        for (int e = i * FC + lc; e < pw * pw; e += FC * NB) {
            const int r = e / pw, l = e % pw;
            if (l >= r)
                R[(size_t)(k0 + r) * ld + k0 + l] = rnew[r * NB + l];
        }
    const int mine = c < cend && i < pw;
    double s = 0.0;
    if (mine) {
        s = R[(size_t)(k0 + i) * ld + c];
        for (int ch = 0; ch < chunks; ++ch)
            s += Zp[((size_t)ch * NB + i) * ld + c];
    }
    z[i][lc] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (mine) {                                  // W = T' Z, T upper triangular
        double w = 0.0;
        for (int l = 0; l <= i; ++l)
            w += T[l * NB + i] * z[l][lc];
        W[(size_t)i * ld + c] = w;
        R[(size_t)(k0 + i) * ld + c] -= w;
    }
}

// B[r, c] -= sum over i of U[r, i] W[i, c] for the trailing columns (up to cend):
// work-item (cl, rl) takes column c and rows rl, rl + RL, ... of its work-group's RT
// rows.
__kernel __attribute__((reqd_work_group_size(TN, RL, 1))) void trail_update(
        __global double *restrict B, const int b, const int ld, const int k0,
        const int pw, __global const double *restrict W, const int cend)
{
    const int c = k0 + pw + get_global_id(0);
    if (c >= cend)
        return;
    double wc[NB];
#pragma unroll
    for (int i = 0; i < NB; ++i)
        wc[i] = i < pw ? W[(size_t)i * ld + c] : 0.0;
    const int r0 = get_group_id(1) * RT + get_local_id(1);
    for (int r = r0; r < r0 + RT && r < b; r += RL) {
        __global double *row = B + (size_t)r * ld;
        double v = row[c];
#pragma unroll
        for (int i = 0; i < NB; ++i)
            if (i < pw)
                v -= row[k0 + i] * wc[i];
        row[c] = v;
    }
}

// Partial sums of B[r, col]^2 over each work-group's rows: what is left of
// the response after all reflections is the residual.
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1))) void column_ss(
        __global const double *restrict B, const int b, const int ld, const int col,
        __global double *restrict part)
{
    __local double x[WGS];
    const int lid = get_local_id(0);
    double s = 0.0;
    for (int r = get_group_id(0) * WGS * RPI + lid, t = 0; t < RPI && r < b;
         ++t, r += WGS)
        s += B[(size_t)r * ld + col] * B[(size_t)r * ld + col];
    x[lid] = s;
    for (int h = WGS / 2; h > 0; h /= 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < h)
            x[lid] += x[lid + h];
    }
    if (lid == 0)
        part[get_group_id(0)] = x[0];
}
