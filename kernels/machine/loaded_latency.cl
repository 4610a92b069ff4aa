// Latency under load: machine/read.cl's loads (the GPU order), with the first
// warp of every work-group timing TIMED of its own loads from inside, with
// NVIDIA's SM cycle counter (%clock64, inline PTX: build with -DNV_PTX=1).
// After each timed load its first work-item stores the value to local memory, and
// only then reads the counter again: the store cannot issue before the load's
// data has come back, so the difference is the load's latency plus a few cycles
// of adds and the store. The first SKIP loads are not timed, so that every
// work-group has started; the timed ones come early, while every other warp
// streams as the read kernel does. Launched over the whole device the loads
// wait in full queues; launched as one work-group, alone.
// Elsewhere (NV_PTX=0) the stamps are zeros and the host says why.
#ifndef TIMED
#define TIMED 16
#endif
#ifndef SKIP
#define SKIP 8
#endif

// cycles() comes from device/nv_clock.cl, joined before.

// src is not restrict: the counter reads claim all memory, so no load moves
// across them. stamps: per work-group, the cycles of its TIMED loads together.
// The first warp (32 work-items on NVIDIA) takes its first SKIP + TIMED loads in
// a loop of their own, timed in its first work-item; then every work-item reads
// on in the read kernel's plain loop, which the compiler unrolls as it does there.
__kernel void loaded_latency(__global const float4 *src,
                             __global float *restrict partial,
                             __global ulong *restrict stamps,
                             __local float *sink,
                             const uint mask,
                             const uint reads)
{
    const uint gid = get_global_id(0);
    const uint G = get_global_size(0);
    float4 acc = (float4)(0.0f);
    ulong spent = 0;
    uint k = 0;
    if (get_local_id(0) < 32) {
        for (; k < SKIP + TIMED && k < reads; ++k) {
            const ulong c0 = cycles();
            const float4 v = src[(gid + k * G) & mask];
            if (get_local_id(0) == 0)
                sink[0] = (v.x + v.y) + (v.z + v.w);   // waits for the load's data
            if (k >= SKIP)
                spent += cycles() - c0;
            acc += v;
        }
    }
    for (; k < reads; ++k)
        acc += src[(gid + k * G) & mask];
    partial[gid] = acc.x + acc.y + acc.z + acc.w;
    if (get_local_id(0) == 0)
        stamps[get_group_id(0)] = spent;
}
