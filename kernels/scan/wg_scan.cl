// Shared by the scan kernels (joined in front of them by the host, since
// OpenCL C has no modules): an inclusive scan of one value per work-item
// across a work-group of WG. In round r every work-item adds the value 2^r
// places to its left, so after log2(WG) rounds each holds the sum of
// everything up to itself (Hillis-Steele). The rounds alternate between two
// halves of `tmp`, reading one and writing the other, so that a round's
// writes cannot overwrite what another work-item has yet to read: one barrier
// a round instead of the seed's two. `tmp` holds 2*WG + 1 values of type T;
// afterwards tmp[WG_TOTAL] is the work-group's total. wg_scan also gives the
// exclusive sum: the inclusive sum of the work-item to the left, read, not
// computed as the inclusive sum minus x, so that a NaN, an Inf or a value
// large enough to round the others away reaches only the sums that include it.
//
// WARP_SHUFFLE=1 (NVIDIA only: inline PTX, as chapter 4's fast.cl): each warp
// of 32 work-items scans its values in registers with five shfl.sync.up steps
// and no barrier; only the warp totals go through local memory, scanned by
// the first warp the same way. Three barriers instead of log2(WG) + 2. WG
// must be a multiple of 32, at most 1024.
#define WG_TOTAL (2 * WG)
#ifndef WARP_SHUFFLE
#define WARP_SHUFFLE 0
#endif

#if WARP_SHUFFLE
#define AS_T(v) AS_EXPANDED(T, v)
#define AS_EXPANDED(t, v) AS_PASTED(t, v)
#define AS_PASTED(t, v) as_##t(v)
#define WARPS (WG / 32)
// The value of the lane `delta` below this one (this lane's own below delta).
T shfl_up(T v, int delta)
{
    uint r;
    asm volatile("shfl.sync.up.b32 %0, %1, %2, 0x0, 0xffffffff;"
                 : "=r"(r) : "r"(as_uint(v)), "r"(delta));
    return AS_T(r);
}

T warp_scan(T x, const int lane)
{
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const T y = shfl_up(x, d);
        if (lane >= d)
            x += y;
    }
    return x;
}

T wg_scan(T x, __local T *tmp, T *before)
{
    const int lid = get_local_id(0), lane = lid & 31, warp = lid >> 5;
    x = warp_scan(x, lane);
    const T left = shfl_up(x, 1);  // the sum of the lane to the left
    if (lane == 31)
        tmp[warp] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (warp == 0) {
        T t = lane < WARPS ? tmp[lane] : (T)0;
#pragma unroll
        for (int d = 1; d < WARPS; d <<= 1) {
            const T y = shfl_up(t, d);
            if (lane >= d)
                t += y;
        }
        if (lane < WARPS)
            tmp[WG + lane] = t;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const T warps_before = warp > 0 ? tmp[WG + warp - 1] : (T)0;
    *before = (lane > 0 ? left : (T)0) + warps_before;
    x += warps_before;
    if (lid == WG - 1)
        tmp[WG_TOTAL] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    return x;
}
#else
T wg_scan(T x, __local T *tmp, T *before)
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
    *before = lid > 0 ? tmp[side * WG + lid - 1] : (T)0;  // the last round's sums
    if (lid == WG - 1)
        tmp[WG_TOTAL] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    return x;
}
#endif

T wg_scan_inclusive(T x, __local T *tmp)
{
    T before;
    return wg_scan(x, tmp, &before);
}

// The sum of the values of the work-items to the left (0 for the first).
T wg_scan_exclusive(T x, __local T *tmp)
{
    T before;
    wg_scan(x, tmp, &before);
    return before;
}
