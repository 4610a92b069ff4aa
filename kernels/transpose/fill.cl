// Synthetic data for the timing runs: X row-major (rows x KP) filled on the
// device from a hash of (example, feature), so that no host has to generate
// and ship gigabytes. Features k >= K and examples j >= n are zero (padding).
// Two classes: the first half of the examples is shifted one way, the second
// half the other way, along a fixed pattern of features.
uint mix(uint h)
{
    h ^= h >> 16; h *= 0x7feb352dU;
    h ^= h >> 15; h *= 0x846ca68bU;
    h ^= h >> 16;
    return h;
}

float value(uint j, uint k, uint n, uint seed)
{
    const uint h = mix(j * 0x9e3779b1U ^ mix(k + seed));
    const float noise = (float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
    const float shift = 0.01f * (float)((int)((k * 37U) % 11U) - 5);
    return noise + (j < n / 2 ? -shift : shift);
}

__kernel void fill_rows(__global float4 *x, const int rows, const int n,
                        const int k_real, const uint seed)
{
    const size_t i = get_global_id(0);
    if (i >= (size_t)rows * (KP / 4)) return;
    const uint j = (uint)(i / (KP / 4));
    const uint k = (uint)(i % (KP / 4)) * 4;
    float4 v = (float4)(0.0f);
    if (j < (uint)n) {
        v.x = k + 0 < (uint)k_real ? value(j, k + 0, n, seed) : 0.0f;
        v.y = k + 1 < (uint)k_real ? value(j, k + 1, n, seed) : 0.0f;
        v.z = k + 2 < (uint)k_real ? value(j, k + 2, n, seed) : 0.0f;
        v.w = k + 3 < (uint)k_real ? value(j, k + 3, n, seed) : 0.0f;
    }
    x[i] = v;
}

__kernel void fill_labels(__global float *y, const int rows, const int n)
{
    const int j = get_global_id(0);
    if (j < rows) y[j] = (j < n && j >= n / 2) ? 1.0f : 0.0f;
}
