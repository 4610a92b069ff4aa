// Step 1: a tree in local memory with interleaved addressing.
// Every work-item loads one element (zero past the end of the array), then
// the work-group halves the number of partial sums per round: at stride s,
// each work-item whose index is a multiple of 2s adds the value s places to
// its right. Work-items next to each other take different branches, so every
// warp stays busy while most of its work-items idle (divergence).
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

    for (uint s = 1; s < WG; s *= 2) {
        if (lid % (2 * s) == 0) {
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
