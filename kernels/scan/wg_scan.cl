// Shared by the scan kernels (joined in front of them by the host, since
// OpenCL C has no modules): an inclusive scan of one value per work-item
// across a work-group of WG, the seed's Hillis-Steele loop. In round r every
// work-item adds the value 2^r places to its left, so after log2(WG) rounds
// each holds the sum of everything up to itself. Every round reads before
// anyone writes: two barriers a round. `tmp` holds WG values of type T.
T wg_scan_inclusive(T x, __local T *tmp)
{
    const int lid = get_local_id(0);
    tmp[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int offset = 1; offset < WG; offset <<= 1) {
        const T left = lid >= offset ? tmp[lid - offset] : (T)0;
        barrier(CLK_LOCAL_MEM_FENCE);
        x += left;
        tmp[lid] = x;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return x;
}
