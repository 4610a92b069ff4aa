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


def bare_buffer_items(buf, name, dtype, said):
    """How many `dtype` items a bare cl.Buffer holds, where its caller says (`said`)
    what it holds: a buffer carries no dtype, and one of another type would be read
    as `dtype` without a word, so none said, or another, is a TypeError."""
    dtype = np.dtype(dtype)
    if said is None:
        raise TypeError(f"{name} is a bare cl.Buffer, which carries no dtype (one of another "
                        f"type would be read as {dtype} values): pass the pyopencl array it "
                        f"belongs to, or dtype=np.{dtype} to say that it holds {dtype}")
    if np.dtype(said) != dtype:
        raise TypeError(f"{name}: expected {dtype} items, got a buffer of {np.dtype(said)}, "
                        "by dtype")
    return buf.size // dtype.itemsize
