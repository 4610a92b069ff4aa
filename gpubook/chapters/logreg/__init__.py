"""Chapters 1-4: logistic regression in one work-group."""
from ...logistic import two_classes, sigmoid, train, log_likelihood, log_likelihood_terms  # noqa: F401
from .training import (SEED_DEVICE, SEED_FIGURES, TOLERANCE, SIZES, learning_rate, Problem, problem,
                       check_shape, fits, rate_literal, TrainKernel, build, has_warp_shuffle, fast_defines,
                       Trainer, iterations_per_launch)  # noqa: F401
from .measure import (benchmark, check, numpy_timing, sweep_work_items, work_item_counts, best,
                      reference_sweeps, device_label, reduction_only_timing, one_change_steps, time_steps,
                      step_rows, as_record, seed_lines, likelihood_curve, sweep_examples, rates_at)  # noqa: F401
from .figures import plot_data, plot_bars  # noqa: F401
from . import figures, measure, phases, training  # noqa: F401
