"""Chapter 7: prefix sums for an ROC fitness."""
from .steps import (LIST_STEPS, DEVICE_STEPS, WG_SCAN, TILE_IO, check_inputs, order, fitness_reference, roc,
                    auc, fitness_from_sum, make_population, ShuffleUnavailable, shuffle_unavailable, build,
                    list_local_bytes, ListFitness, list_sizes, scan_local_bytes, scan_shapes, tile_shapes, DeviceScan,
                    check_labels, single_pass_unavailable, work_group, count, device_buffer,
                    Population, check_prefix)  # noqa: F401
from . import figures, phases, runs, steps  # noqa: F401
