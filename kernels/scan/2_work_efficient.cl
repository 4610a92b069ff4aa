// Step 2: work-efficient. Each work-item takes ITEMS consecutive labels and
// scans them in registers (ITEMS - 1 additions), the work-group scans only the
// WG work-item totals (log2(WG) rounds), and each work-item adds the total of
// the work-items before it to its own running counts. Per block of ITEMS*WG
// labels that is about 2*ITEMS*WG + WG*log2(WG) additions and log2(WG) + 4
// barriers (one after the loads, wg_scan's log2(WG) + 2, one at the end),
// instead of ITEMS*WG*log2(WG) additions and ITEMS*(2*log2(WG) + 2) barriers
// for step 1. The loads go through local memory so that they stay
// coalesced. Same output as step 1.
// Built with TRACE (gpubook.trace, for the chapter's figure), each work-item
// of the first block records the labels it loads (step 0) and the labels it
// then scans in its registers (step 1), as positions in the list.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void fitness_we(
        __global const int *restrict labels, const int n, __global ulong *restrict out
#ifdef TRACE
        ,
        __global int *trace
#endif
)
{
#ifdef TRACE
    TRACE_START;
#endif
    __local T tmp[2 * WG + 1];
    __local int stage[ITEMS * WG];
    __local ulong red[WG];
    const int lid = get_local_id(0);
    T carry = 0;
    ulong acc = 0;
    for (int base = 0; base < n; base += ITEMS * WG) {
        for (int k = 0; k < ITEMS; ++k) {  // coalesced: neighbours read neighbours
            const int i = base + k * WG + lid;
            stage[k * WG + lid] = i < n ? labels[i] : 0;
#ifdef TRACE
            if (base == 0)
                TRACE_AT(0, i);
#endif
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        T run[ITEMS];
        T total = 0;
        for (int k = 0; k < ITEMS; ++k) {  // this work-item's ITEMS consecutive labels
            total += stage[lid * ITEMS + k];
#ifdef TRACE
            if (base == 0)
                TRACE_AT(1, lid * ITEMS + k);
#endif
            run[k] = total;
        }
        const T before = carry + wg_scan_exclusive(total, tmp);
        const int first = base + lid * ITEMS;
        for (int k = 0; k < ITEMS; ++k)
            if (first + k < n)
                acc += before + run[k];
        carry += tmp[WG_TOTAL];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    red[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (lid < s)
            red[lid] += red[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        out[0] = red[0];
        out[1] = carry;
    }
}
