// Step 2: sequential addressing.
// Same work as step 1, but at stride s the first s work-items add the value
// s places to their right. The active work-items are contiguous, so whole
// warps either work or skip the round together (no divergence
// until fewer than one warp is active), and consecutive work-items touch
// consecutive local-memory words (no bank conflicts).
// Output: one partial sum per work-group. WG (a power of two) is a build option.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void reduce(__global const float *in, __global float *partial, const uint n
#ifdef TRACE
            , __global int *trace   // gpubook.trace: who reads which word
#endif
            )
{
#ifdef TRACE
    TRACE_START;
#endif
    __local float sums[WG];
    const uint lid = get_local_id(0);
    const uint i = get_global_id(0);

    sums[lid] = i < n ? in[i] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);

    for (uint s = WG / 2; s > 0; s /= 2) {
        if (lid < s) {
#ifdef TRACE
            TRACE_AT(s, lid);       // round of stride s: the two words it adds
            TRACE_AT(s, lid + s);
#endif
            sums[lid] += sums[lid + s];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial[get_group_id(0)] = sums[0];
}
