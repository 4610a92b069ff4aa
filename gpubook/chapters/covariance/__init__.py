"""Chapter 6: the covariance matrix, in core, streamed out of core, and on the tensor
cores."""
from ...xtx import (COL_PAD, ROW_PAD, SUM_ROWS, round_up, sizes, flops, Data, make_data, reference, error,
                    check, SWEEP, shape, DEFAULT_TILE, tile_shapes, runnable_tile, launch_col_sums,
                    launch_centre, launch_tiles, launch_finish)  # noqa: F401
from ...stream import mean_offsets, stream_bytes, plan_rows, blocks, Stream  # noqa: F401
from .incore import (STEPS, LOCAL_T, FIELDS, one_change_pairs, CHANGES, local_tiles_kernel,
                     local_bound_gflops, local_gbs, fmas_per_local_load, Covariance, diag_skip_share)  # noqa: F401
from .outofcore import (MIN_PAIR_ROWS, REPEAT, pair_bytes, plan_pairs, repeated, stream_budget,  # noqa: F401
                        TilePairs)
from . import figures, incore, outofcore, tensor_cores  # noqa: F401
