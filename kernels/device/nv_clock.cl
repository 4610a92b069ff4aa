// NVIDIA's clocks, read from OpenCL C through inline PTX: the SM's cycle counter
// (%clock64), the GPU's nanosecond timer (%globaltimer) and the SM a work-item runs
// on (%smid). Joined before a kernel that reads them (gpubook.kernels.kernel with a
// tuple of files). Only NVIDIA's OpenCL compiles the PTX (build with -DNV_PTX=1);
// elsewhere each reads 0 and the host says why nothing was measured. The "memory"
// clobber keeps the compiler from moving loads and stores across a read.
#ifndef NV_PTX
#define NV_PTX 0
#endif

static ulong cycles(void)
{
    ulong c = 0;
#if NV_PTX
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c) : : "memory");
#endif
    return c;
}

static ulong nanoseconds(void)
{
    ulong t = 0;
#if NV_PTX
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) : : "memory");
#endif
    return t;
}

static uint sm_id(void)
{
    uint s = 0;
#if NV_PTX
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
#endif
    return s;
}
