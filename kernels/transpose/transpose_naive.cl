// Step 2a: transpose X (rows x KP, row-major) into XT (KP x stride).
// Element i of X (row j = i / KP, feature k = i % KP) goes to XT[k, j].
// Adjacent work-items read adjacent features of one row (coalesced) but
// write to KP rows of XT that lie `stride` floats apart (scattered).
// The grid may be smaller than X: each work-item then strides over it.
__kernel void transpose_naive(__global const float *restrict x,
                              __global float *restrict xt,
                              const int rows, const int stride)
{
    const size_t total = (size_t)rows * KP;
    for (size_t i = get_global_id(0); i < total; i += get_global_size(0)) {
        const size_t j = i / KP, k = i % KP;
        xt[k * stride + j] = x[i];
    }
}
