// The SM clock under load, read from inside an OpenCL kernel.
// Every work-item runs ITERS steps of eight independent FMA chains (as
// device/fma.cl does), so every SM is busy. The first work-item of each
// work-group reads the SM's cycle counter (%clock64) and the GPU's nanosecond
// timer (%globaltimer) before and after its loop, and the SM it ran on
// (%smid): cycles over nanoseconds is the clock its SM ran at under load.
// Only NVIDIA's OpenCL reads them (build with -DNV_PTX=1); elsewhere the stamps
// are zeros and the host says the clock is not read.
#ifndef ITERS
#define ITERS 4096
#endif
// cycles(), nanoseconds() and sm_id() come from device/nv_clock.cl, joined before.

// out: one float per work-item (the chains' sum, so no step is dead code).
// stamps: per work-group, cycles, nanoseconds, SM and start time.
__kernel void sm_clock(__global float *out, __global ulong *stamps,
                       const float a, const float b)
{
    const size_t gid = get_global_id(0);
    const int first = get_local_id(0) == 0;
    float x0 = (gid & 1023) * 1e-3f, x1 = x0 + 0.125f, x2 = x0 + 0.25f;
    float x3 = x0 + 0.375f, x4 = x0 + 0.5f, x5 = x0 + 0.625f;
    float x6 = x0 + 0.75f, x7 = x0 + 0.875f;
    ulong c0 = 0, t0 = 0;
    if (first) {
        c0 = cycles();
        t0 = nanoseconds();
    }
    for (int i = 0; i < ITERS; i++) {
        x0 = fma(x0, a, b); x1 = fma(x1, a, b); x2 = fma(x2, a, b);
        x3 = fma(x3, a, b); x4 = fma(x4, a, b); x5 = fma(x5, a, b);
        x6 = fma(x6, a, b); x7 = fma(x7, a, b);
    }
    // The store comes first: the reads after it (with their "memory" clobber)
    // cannot move above it, and it needs every step of every chain.
    out[gid] = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
    if (first) {
        const ulong c1 = cycles(), t1 = nanoseconds();
        const size_t g = 4 * get_group_id(0);
        stamps[g] = c1 - c0;
        stamps[g + 1] = t1 - t0;
        stamps[g + 2] = sm_id();
        stamps[g + 3] = t0;
    }
}
