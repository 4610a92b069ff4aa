// Step 1: the seed's design. One work-group walks the sorted class labels
// (1 = positive, 0 = negative) in blocks of WG, one label per work-item.
// The seed's Hillis-Steele loop scans a block in local memory: in round r each
// work-item adds the value 2^r places to its left; each round reads, waits at
// a barrier, writes and waits again. The scan plus the carry from the blocks
// before is TP_k, the positives among the first k examples; each work-item adds up its
// TP_k in a 64-bit integer, exactly. After the last block a tree reduction
// gives sum_k TP_k, from which the host forms the fitness:
//   F = (sum TP_k / P - sum FP_k / N) / n,  sum FP_k = n(n+1)/2 - sum TP_k.
// out[0] = sum_k TP_k, out[1] = the number of positives.
// Built with TRACE (gpubook.trace, for the chapter's figure), each work-item
// of the first block records every addition of the scan: step = the round's
// offset 2^r, index = the position whose value it adds to its own.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void fitness_hs(
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
    __local T tmp[WG];
    __local ulong red[WG];
    const int lid = get_local_id(0);
    T carry = 0;
    ulong acc = 0;
    for (int base = 0; base < n; base += WG) {
        const int i = base + lid;
        T x = i < n ? labels[i] : 0;
        tmp[lid] = x;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int offset = 1; offset < WG; offset <<= 1) {
            const T left = lid >= offset ? tmp[lid - offset] : 0;
#ifdef TRACE
            if (base == 0 && lid >= offset)
                TRACE_AT(offset, lid - offset);
#endif
            barrier(CLK_LOCAL_MEM_FENCE);
            x += left;
            tmp[lid] = x;
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        const T tp = carry + x;
        if (i < n)
            acc += tp;
        carry += tmp[WG - 1];        // the block's total, written in the last round
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
