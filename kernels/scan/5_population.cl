// Step 4: the fitness of a whole population in one launch, one work-group
// per model. The work-group sorts its model's n scores in local memory with a
// bitonic sort over NP (a power of two >= n) 64-bit keys: the high word orders
// scores from high to low, the low word is the example's index, so ties go to
// the lower index and padding (all ones) sorts last. Then, in sorted order:
//   SHORTCUT = 0: scan the labels (blocks of WG with a carry) for TP_k and add
//                 them up;
//   SHORTCUT = 1: sum_k TP_k = sum over positives of (n - position), one
//                 reduction, no scan.
// Both sums are exact integers; fitness = (S / P - (n(n+1)/2 - S) / N) / n.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void population(
        __global const float *restrict scores, __global const uchar *restrict labels,
        const int n, const int npos, __global float *restrict fitness)
{
    __local ulong keys[NP];
    __local T tmp[2 * WG + 1];
    const int lid = get_local_id(0);
    const size_t row = (size_t)get_group_id(0) * n;
    for (int i = lid; i < NP; i += WG) {
        if (i < n) {
            // -0 becomes +0, in integers (Mesa's llvmpipe folds x + 0.0f to x)
            uint u = as_uint(scores[row + i]);
            u = (u << 1) ? u : 0u;
            u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);  // ascending as an integer
            keys[i] = ((ulong)(~u) << 32) | (uint)i;           // high scores first
        } else {
            keys[i] = ~0UL;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int size = 2; size <= NP; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            for (int t = lid; t < NP / 2; t += WG) {
                const int i = 2 * t - (t & (stride - 1)), j = i + stride;
                const ulong a = keys[i], b = keys[j];
                if ((a > b) == ((i & size) == 0)) {
                    keys[i] = b;
                    keys[j] = a;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
    T acc = 0;
#if SHORTCUT
    for (int i = lid; i < n; i += WG)
        if (labels[(uint)keys[i]])
            acc += n - i;
#else
    T carry = 0;
    for (int base = 0; base < n; base += WG) {
        const int i = base + lid;
        const T tp =
                carry + wg_scan_inclusive(i < n ? (T)labels[(uint)keys[i]] : 0, tmp);
        if (i < n)
            acc += tp;
        carry += tmp[WG_TOTAL];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#endif
    wg_scan_inclusive(acc, tmp);  // its last value is the total
    const T sum = tmp[WG_TOTAL];
    if (lid == 0) {
        const float nn = (float)n, p = (float)npos;
        const float all = 0.5f * nn * (nn + 1.0f);
        fitness[get_group_id(0)] =
                ((float)sum / p - (all - (float)sum) / (nn - p)) / nn;
    }
}
