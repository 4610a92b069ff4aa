// A kernel that does (almost) nothing: its time is the cost of a launch.
__kernel void touch(__global float *out)
{
    if (get_global_id(0) == 0)
        out[0] = 1.0f;
}
