"""The machine page and chapter 0: the microbenchmarks of the memory hierarchy."""
from ...localmem import MACHINE, recorded_gbs, pow2_floor, LocalStride, bank_ways, local_stride_curve  # noqa: F401
from ...curves import human_bytes, edge  # noqa: F401
from .probes import (LINE, CHAPTER, largest_working_set, working_sets, Chain, make_chain, cycle_length,
                     ChainWalker, chase_ns, latency_curve, read_shape, Reader, bandwidth_curve,
                     bytes_in_flight, hierarchy_levels, warp, facts, recorded, latency_ns, read_rate)  # noqa: F401
from . import copies, figures, loaded, probes  # noqa: F401
from .copies import copy_kernels, largest_copy, little  # noqa: F401
