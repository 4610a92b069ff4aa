// Step 4d: scores and gradient in one pass, so that XT is read once per
// iteration. A work-group copies a tile of TJ examples x KP features into
// local memory (float4 loads of adjacent examples from each row of XT:
// coalesced), computes the TJ scores from the tile, then adds the tile's
// share of the gradient, each work-item owning features lid, lid + LOCAL, ...
// The groups stride over all tiles and write one partial gradient each;
// reduce_update.cl adds them and updates theta.
// Rows of the tile are TJ + 4 floats long: 16-byte aligned for float4
// access, and offset by four banks from one row to the next.
float sigmoid(float z) { return 1.0f / (1.0f + exp(-z)); }

#define P (LOCAL / TJ)                        // work-items per example for the scores
#define NACC ((KP + LOCAL - 1) / LOCAL)       // features owned by one work-item
#define PITCH4 (TJ / 4 + 1)                   // tile row length in float4s

__kernel __attribute__((reqd_work_group_size(LOCAL, 1, 1)))
void fused(__global const float4 *restrict xt,
           __global const float *restrict y,
           __global const float *restrict theta,
           __global float *restrict partial,
           const int n, const int stride4, const int tiles)
{
    __local float4 tile4[KP * PITCH4];
    __local float th[KP];
    __local float sp[P][TJ];
    __local float4 ov4[TJ / 4];
    __local float *tile = (__local float *)tile4;
    __local float *ov = (__local float *)ov4;
    const int lid = get_local_id(0);
    const int g = get_group_id(0), groups = get_num_groups(0);
    for (int k = lid; k < KP; k += LOCAL) th[k] = theta[k];
    float acc[NACC];
    for (int a = 0; a < NACC; ++a) acc[a] = 0.0f;

    for (int t = g; t < tiles; t += groups) {
        // 1. the tile: KP rows of TJ / 4 float4s
        for (int i = lid; i < KP * (TJ / 4); i += LOCAL) {
            const int k = i / (TJ / 4), b4 = i % (TJ / 4);
            tile4[k * PITCH4 + b4] = xt[(size_t)k * stride4 + t * (TJ / 4) + b4];
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        // 2. scores: P work-items per example, each summing every P-th feature
        const int b = lid % TJ, p = lid / TJ;
        float s = 0.0f;
        for (int k = p; k < KP; k += P) s += tile[k * 4 * PITCH4 + b] * th[k];
        sp[p][b] = s;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < TJ) {
            float z = 0.0f;
            for (int q = 0; q < P; ++q) z += sp[q][lid];
            const int j = t * TJ + lid;
            ov[lid] = j < n ? sigmoid(z) - y[j] : 0.0f;  // examples past n add nothing
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        // 3. gradient: feature k adds x[k, j] * o[j] over the tile's examples
        for (int a = 0; a < NACC; ++a) {
            const int k = lid + a * LOCAL;
            if (k < KP) {
                float4 s4 = (float4)(0.0f);
                for (int c = 0; c < TJ / 4; ++c) s4 += tile4[k * PITCH4 + c] * ov4[c];
                acc[a] += s4.x + s4.y + s4.z + s4.w;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);         // the next tile overwrites this one
    }
    for (int a = 0; a < NACC; ++a) {
        const int k = lid + a * LOCAL;
        if (k < KP) partial[(size_t)k * groups + g] = acc[a];
    }
}
