"""Chapter 5: transposed memory access, the scores, the transpose and the gradient."""
from .steps import (FEATURE_MULTIPLE, EXAMPLE_MULTIPLE, SCORES, TRANSPOSES, GRADIENTS, ITERATIONS, padded,
                    pad, examples_that_fit, Buffers, Logreg, numpy_iteration, numpy_seconds, host_cpu_name,
                    mean_log_likelihood)  # noqa: F401
from . import figures, steps  # noqa: F401
