// Beyond the seed: one work-group, but each work-item keeps its examples
// (rows of X and their labels) and the weights in registers for the whole
// training loop, so X is read from global memory once, not once per
// iteration. Work-item i owns examples i, i + N, i + 2N, ... (neighbouring
// work-items read neighbouring rows: coalesced). The K partial gradients are
// summed with a single barrier per iteration when the device lets work-items
// of one warp exchange registers (SHUFFLE=1, NVIDIA's shfl through inline
// PTX); otherwise (SHUFFLE=0, any OpenCL device) with a few rounds in local
// memory, each adding RADIX values at once. Every work-item then applies the
// same update to its own copy of w: no work-item has to publish w, no
// further barrier.
// Build options: J examples, K features (a multiple of 4), N work-items (a
// power of two dividing J; a multiple of 32 when SHUFFLE=1), IN_REGS
// examples per work-item kept in registers (the rest, when J/N is larger,
// are read from global memory every iteration), SHUFFLE 0 or 1, RADIX,
// ITERS iterations, RATE step size.
#define K4 (K / 4)
#define E (J / N)
#ifndef IN_REGS
#define IN_REGS E
#endif
// The arrays of held examples get at least one slot: OpenCL C has no
// zero-length arrays. With IN_REGS=0 that slot is never touched (every loop
// over it stops at IN_REGS), so the compiler drops it.
#define HELD (IN_REGS > 0 ? IN_REGS : 1)
#ifndef SHUFFLE
#define SHUFFLE 0
#endif
#ifndef RADIX
#define RADIX 16
#endif
// SLICES=1 (an ablation, not the default): work-item i owns the contiguous
// slice of examples i*E ... i*E + E-1, as in steps 2-4, instead of i, i+N, ...
#if defined(SLICES) && SLICES
#define ROW(e) (id * E + (e))
#else
#define ROW(e) (id + (e) * N)
#endif

// PHASES=1 (NVIDIA only, built after device/nv_clock.cl with NV_PTX=1) times
// each iteration in two phases, the examples and then the sum and update: lane 0
// of every warp reads the SM's cycle counter (cycles()) at three points and writes
// its two totals to phases[2 * warp] and phases[2 * warp + 1], a fourth argument.
#if defined(PHASES) && PHASES
#define PHASE_ARG , __global ulong *phases
#define PHASE_VARS ulong c0 = 0, c1 = 0, in_examples = 0, in_sum = 0
#define PHASE_START c0 = cycles()
#define PHASE_MARK c1 = cycles(); in_examples += c1 - c0
#define PHASE_END in_sum += cycles() - c1
#define PHASE_STORE if ((id & 31) == 0) { phases[2 * (id >> 5)] = in_examples; \
                                          phases[2 * (id >> 5) + 1] = in_sum; }
#else
#define PHASE_ARG
#define PHASE_VARS
#define PHASE_START
#define PHASE_MARK
#define PHASE_END
#define PHASE_STORE
#endif

#if SHUFFLE
#define WARPS (N / 32)
inline float shfl_xor(float v, int mask)
{
    float r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;"
                 : "=f"(r) : "f"(v), "r"(mask));
    return r;
}
inline float shfl_idx(float v, int lane)
{
    float r;
    asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, 0xffffffff;"
                 : "=f"(r) : "f"(v), "r"(lane));
    return r;
}
// Sum 8 values over the 32 lanes of a warp with 9 shuffles: at each of the
// first three steps a lane keeps half of its values and trades the other
// half with its partner, so afterwards the 4 lanes of group lane/4 hold the
// warp's total of component lane/4.
inline float warp_transpose_sum8(float v[8], int lane)
{
    const bool b4 = lane & 16, b3 = lane & 8, b2 = lane & 4;
    float u[4], t[2];
    for (int i = 0; i < 4; ++i)
        u[i] = (b4 ? v[i + 4] : v[i]) + shfl_xor(b4 ? v[i] : v[i + 4], 16);
    for (int i = 0; i < 2; ++i)
        t[i] = (b3 ? u[i + 2] : u[i]) + shfl_xor(b3 ? u[i] : u[i + 2], 8);
    float s = (b2 ? t[1] : t[0]) + shfl_xor(b2 ? t[0] : t[1], 4);
    s += shfl_xor(s, 2);
    s += shfl_xor(s, 1);
    return s;
}
#define LOCAL_FLOATS (2 * K * WARPS)
#else
// local-memory rounds: N values per component -> N/RADIX -> ... -> <= RADIX
#define LOCAL_FLOATS (2 * (K * N + K * N / RADIX))
#endif

__kernel __attribute__((reqd_work_group_size(N, 1, 1)))
void train(__global const float4 *X, __global const float *labels,
           __global float4 *w PHASE_ARG)
{
    __local float scratch[LOCAL_FLOATS];
    const int id = get_local_id(0);

    // this work-item's examples, held in registers for the whole run
    float4 x[HELD][K4];
    float y[HELD];
#pragma unroll
    for (int e = 0; e < IN_REGS; ++e) {
#pragma unroll
        for (int k = 0; k < K4; ++k)
            x[e][k] = X[ROW(e) * K4 + k];
        y[e] = labels[ROW(e)];
    }
    float4 wv[K4];
#pragma unroll
    for (int k = 0; k < K4; ++k)
        wv[k] = w[k];
#if SHUFFLE
    const int lane = id & 31, warp = id >> 5, mine = lane >> 2;
    float my_w = ((__global const float *)w)[mine];
#endif

    PHASE_VARS;
    for (int it = 0; it < ITERS; ++it) {
        PHASE_START;
        float4 g[K4];
#pragma unroll
        for (int k = 0; k < K4; ++k)
            g[k] = (float4)(0.0f);
#pragma unroll
        for (int e = 0; e < IN_REGS; ++e) {
            float z = 0.0f;
#pragma unroll
            for (int k = 0; k < K4; ++k)
                z += dot(x[e][k], wv[k]);
            const float score = y[e] - 1.0f / (1.0f + exp(-z));
#pragma unroll
            for (int k = 0; k < K4; ++k)
                g[k] += x[e][k] * score;
        }
        for (int e = IN_REGS; e < E; ++e) {
            const int j = ROW(e);
            float4 xe[K4];
            float z = 0.0f;
#pragma unroll
            for (int k = 0; k < K4; ++k) {
                xe[k] = X[j * K4 + k];
                z += dot(xe[k], wv[k]);
            }
            const float score = labels[j] - 1.0f / (1.0f + exp(-z));
#pragma unroll
            for (int k = 0; k < K4; ++k)
                g[k] += xe[k] * score;
        }
        PHASE_MARK;
        // two copies of the scratch space, used on alternate iterations, so
        // that writing this iteration's sums cannot overwrite values another
        // work-item is still reading from the previous one
        __local float *part = scratch + (it & 1) * (LOCAL_FLOATS / 2);
        float gs[K];
#pragma unroll
        for (int k = 0; k < K4; ++k)
            vstore4(g[k], k, gs);
#if SHUFFLE
#if K != 8
#error "SHUFFLE=1 needs K == 8"
#endif
        const float warp_sum = warp_transpose_sum8(gs, lane);
        if ((lane & 3) == 0)
            part[mine * WARPS + warp] = warp_sum;
        barrier(CLK_LOCAL_MEM_FENCE);
        float t = 0.0f;
        for (int i = lane & 3; i < WARPS; i += 4)
            t += part[mine * WARPS + i];
        t += shfl_xor(t, 1);
        t += shfl_xor(t, 2);
        my_w += RATE * t;
        float wn[K];
#pragma unroll
        for (int k = 0; k < K; ++k)
            wn[k] = shfl_idx(my_w, 4 * k);
#pragma unroll
        for (int k = 0; k < K4; ++k)
            wv[k] = vload4(k, wn);
#else
        // round 0: every work-item writes its K sums, component-major
#pragma unroll
        for (int k = 0; k < K; ++k)
            part[k * N + id] = gs[k];
        barrier(CLK_LOCAL_MEM_FENCE);
        // each round adds RADIX neighbours: len values per component -> len / RADIX
        __local float *src = part, *dst = part + K * N;
        int len = N;
        while (len > RADIX) {
            const int out = len / RADIX;
            for (int t = id; t < K * out; t += N) {
                const int k = t / out, i = t - k * out;
                float s = 0.0f;
                for (int r = 0; r < RADIX; ++r)
                    s += src[k * len + r * out + i];
                dst[k * out + i] = s;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            __local float *tmp = src; src = dst; dst = tmp;
            len = out;
        }
        // every work-item adds the last len values of each component itself
        float total[K];
#pragma unroll
        for (int k = 0; k < K; ++k) {
            float s = 0.0f;
            for (int i = 0; i < len; ++i)
                s += src[k * len + i];
            total[k] = s;
        }
#pragma unroll
        for (int k = 0; k < K4; ++k)
            wv[k] += RATE * vload4(k, total);
#endif
        PHASE_END;
    }
    PHASE_STORE;
    // every work-item read w before the loop: order those reads before the write
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (id == 0) {
#pragma unroll
        for (int k = 0; k < K4; ++k)
            w[k] = wv[k];
    }
}
