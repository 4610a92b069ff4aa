// Latency: one work-item follows a chain of indices, next[i], through memory.
// Each load's address is the value of the previous load, so the loads cannot
// overlap: the time per step is the latency of one load. The chain goes on
// where the previous launch stopped (pos[0]), so repeated launches keep
// visiting new addresses of a large buffer.
__kernel void chase(__global const uint *restrict next,
                    __global uint *restrict pos,
                    const uint steps)
{
    uint i = pos[0];
    for (uint s = 0; s < steps; ++s)
        i = next[i];
    pos[0] = i;
}
