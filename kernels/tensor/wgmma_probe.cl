// One Hopper warp-group MMA (wgmma.mma_async m64n8k8, TF32 in, FP32 out), for
// tools/probe_wgmma_product.py: whether an OpenCL program can reach wgmma at all.
// NVIDIA's OpenCL compiler targets sm_90 and refuses wgmma (an sm_90a instruction),
// so this source holds two markers, PTX comments that the compiler passes through
// with their operands' registers filled in; gpubook.wgmma.rewrite then replaces
// them by the real instructions, sets the PTX's target to sm_90a, and
// gpubook.ptx_probe.wgmma_product hands it to the driver as a program binary.
//   WG_FENCE_PROXY: after a work-item's stores to local memory, before the barrier
//                   (fence.proxy.async: wgmma reads local memory through the async proxy)
//   WG_MMA d0 d1 d2 d3 desc_a desc_b scale: D = A B' (+ D where scale is not 0), D's
//                   fragment in d0..d3
// The host lays A (64 x 8) and B (8 x 8, both K-major: rows of 8 terms) out in
// local memory's image (a_img, b_img, in 8-row x 16-byte core matrices) and gives
// the descriptors' byte offsets (lbo between core matrices along K, sbo along M or
// N); work-item t writes its 4 values at d[4 t .. 4 t + 3], and info[0] the local
// address that the descriptors encode.
// NV_PTX=0 (any device, the default): no markers; the work-item computes its four
// values of D from the same local memory, reading A and B through lbo and sbo as the
// descriptors would (entries past the arrays read as 0), so that a CPU checks the
// host's layout of the operands and of D.
#ifndef NV_PTX
#define NV_PTX 0
#endif

static float operand(__local const float *s, const int size, const int r, const int k, const uint lbo,
                     const uint sbo)
{
    const int at = (r % 8) * 4 + k % 4 + (k / 4) * (int)(lbo / 4) + (r / 8) * (int)(sbo / 4);
    return at < size ? s[at] : 0.0f;
}

__kernel __attribute__((reqd_work_group_size(128, 1, 1)))
void wgmma_probe(__global const float *restrict a_img, __global const float *restrict b_img,
                 __global float *restrict d, __global ulong *restrict info, const uint lbo,
                 const uint sbo, const uint zero)
{
    __local float sa[64 * 8] __attribute__((aligned(256)));
    __local float sb[8 * 8] __attribute__((aligned(256)));
    const int t = get_local_id(0);
    for (int e = t; e < 64 * 8; e += 128)
        sa[e] = a_img[e];
    if (t < 8 * 8)
        sb[t] = b_img[t];
#if NV_PTX
    asm volatile("// WG_FENCE_PROXY" ::: "memory");
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
    const ulong addr_a = (ulong)sa, addr_b = (ulong)sb;
    const ulong fields = ((ulong)((lbo >> 4) & 0x3FFF) << 16) | ((ulong)((sbo >> 4) & 0x3FFF) << 32);
    const ulong desc_a = ((addr_a & 0x3FFFF) >> 4) | fields;
    const ulong desc_b = ((addr_b & 0x3FFFF) >> 4) | fields;
    float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
#if NV_PTX
    asm volatile("// WG_MMA %0 %1 %2 %3 %4 %5 %6"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "l"(desc_a), "l"(desc_b), "r"(zero)
                 : "memory");
#else
    float v[4];
    for (int i = 0; i < 4; ++i) {
        const int row = t / 32 * 16 + t % 32 / 4 + 8 * (i / 2), col = 2 * (t % 4) + i % 2;
        v[i] = 0.0f;
        for (int k = 0; k < 8; ++k)
            v[i] = fma(operand(sa, 64 * 8, row, k, lbo, sbo), operand(sb, 8 * 8, col, k, lbo, sbo), v[i]);
    }
    d0 = v[0];
    d1 = v[1];
    d2 = v[2];
    d3 = v[3];
#endif
    d[4 * t] = d0;
    d[4 * t + 1] = d1;
    d[4 * t + 2] = d2;
    d[4 * t + 3] = d3;
    if (t == 0) {
        info[0] = addr_a;
        info[1] = addr_b;
    }
}
