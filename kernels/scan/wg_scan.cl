// Shared by the scan kernels (joined in front of them by the host, since
// OpenCL C has no modules): an inclusive scan of one value per work-item
// across a work-group of WG. In round r every work-item adds the value 2^r
// places to its left, so after log2(WG) rounds each holds the sum of
// everything up to itself (Hillis-Steele). The rounds alternate between two
// halves of `tmp`, reading one and writing the other, so that a round's
// writes cannot overwrite what another work-item has yet to read: one barrier
// a round instead of the seed's two. `tmp` holds 2*WG + 1 values of type T;
// afterwards tmp[WG_TOTAL] is the work-group's total.
#define WG_TOTAL (2 * WG)

T wg_scan_inclusive(T x, __local T *tmp)
{
    const int lid = get_local_id(0);
    int side = 0;
    tmp[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int offset = 1; offset < WG; offset <<= 1) {
        if (lid >= offset)
            x += tmp[side * WG + lid - offset];
        side ^= 1;
        tmp[side * WG + lid] = x;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == WG - 1)
        tmp[WG_TOTAL] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    return x;
}
