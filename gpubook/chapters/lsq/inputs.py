"""What chapter 8's entry points accept, checked before anything is launched:
real numbers (converted to float64, C order), the shapes each one expects,
finite values, and device buffers large enough for the rows they are told of.
A bad input gets a ValueError or TypeError naming the argument and what was
expected, never a raw OpenCL error or a number."""
import numpy as np
import pyopencl as cl

from ...inputs import real_array as array  # noqa: F401 - this chapter's name for it


def matrix(name, a, cols=None, min_rows=0, min_cols=1):
    """A float64 matrix of at least `min_rows` rows and exactly `cols` columns
    (at least `min_cols` where cols is None)."""
    a = array(name, a, 2)
    if cols is not None and a.shape[1] != cols:
        raise ValueError(f"{name} must have {cols} columns, got shape {a.shape}")
    if a.shape[1] < min_cols:
        raise ValueError(f"{name} must have at least {min_cols} column(s), got shape {a.shape}")
    if a.shape[0] < min_rows:
        raise ValueError(f"{name} must have at least {min_rows} row(s), got shape {a.shape}")
    return a


def vector(name, v, length):
    """A float64 vector of `length` values."""
    v = array(name, v, 1)
    if len(v) != length:
        raise ValueError(f"{name} must hold {length} values, got {len(v)}")
    return v


def scalar(name, v):
    """A finite real number as a float."""
    return float(array(name, v, 0))


def count(name, n, least):
    """An integer of at least `least` (a Python or NumPy integer, not a float)."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {n!r}")
    if n < least:
        raise ValueError(f"{name} must be at least {least}, got {n}")
    return int(n)


def rows(x, y, w, n):
    """Rows of n values (x), their responses (y) and non-negative weights (w,
    ones where None), all float64."""
    x = matrix("x", x, cols=n)
    y = vector("y", y, len(x))
    w = np.ones(len(x)) if w is None else vector("w", w, len(x))
    if np.any(w < 0):
        raise ValueError("w (the weights) must not be negative")
    return x, y, w


def buffer(name, buf, nbytes):
    """A device buffer that holds at least `nbytes`."""
    if not isinstance(buf, cl.Buffer):
        raise TypeError(f"{name} must be a pyopencl Buffer, got {type(buf).__name__}")
    if buf.size < nbytes:
        raise ValueError(f"{name} holds {buf.size:,} bytes; {nbytes:,} are needed for the rows asked for")
    return buf
