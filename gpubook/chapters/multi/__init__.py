"""Chapter 10: every device of a host, then a Dask cluster."""
from .lanes import (devices, specs, describe, Lane, Work, in_threads, check_rows, THREADS, add_sums, combine,
                    Group)  # noqa: F401
from .covariance import (stream_blocks, tapered, Covariance, h2d_together, fill_repeated, best_tile, resource_rows,
                         recorded_scaling)  # noqa: F401
from .subsets import subset_problem, Subsets  # noqa: F401
from . import cluster, covariance, figures, lanes, pages, store, subsets, sums  # noqa: F401
