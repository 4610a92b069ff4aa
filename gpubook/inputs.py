"""Real-number arrays as the book's entry points take them, checked before any
launch: a ValueError or TypeError naming the argument and what was expected,
never a raw OpenCL error or a number computed from something else."""
import numpy as np

REAL_KINDS = "biuf"  # bool, signed and unsigned integers, floats


def real_array(name, a, ndim):
    """`a` as a C-contiguous float64 array of `ndim` dimensions with finite values."""
    try:
        arr = np.asarray(a)
    except ValueError as err:  # ragged nested lists
        raise ValueError(f"{name} must be a {ndim}-dimensional array of real numbers ({err})") from None
    if arr.dtype.kind not in REAL_KINDS:
        raise TypeError(f"{name} must hold real numbers (converted to float64), got dtype {arr.dtype}")
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    arr = np.asarray(arr, np.float64, order="C")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr
