"""Chapter 7's input checks and work-group choice: labels and scores refused with
what was expected, counts and device buffers checked against n, and the largest
work-group that the device and the built kernels run."""
import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ... import launch
from ...inputs import bare_buffer_items


def check_labels(labels, name="labels"):
    """Refuse labels other than 0 and 1, showing the first few found."""
    labels = np.asarray(labels)
    wrong = (labels != 0) & (labels != 1)
    bad = np.unique(labels[wrong])
    if bad.size:
        shown = ", ".join(str(v) for v in bad[:5].tolist()) + (", ..." if bad.size > 5 else "")
        raise ValueError(f"{name} must be 0 (negative) or 1 (positive); found {shown} "
                         f"({np.count_nonzero(wrong):,} of {labels.size:,} labels)")


def check_inputs(scores, labels):
    """Refuse what has no fitness: labels other than 0 and 1, NaN scores, or a
    single class (n = 1 included), where one of the rates divides by zero."""
    scores, labels = np.asarray(scores), np.asarray(labels)
    if labels.ndim != 1 or scores.ndim not in (1, 2):
        raise ValueError(f"expected scores of one model (1-D) or one per row (2-D) and one "
                         f"label per example (1-D); got scores {scores.shape}, labels {labels.shape}")
    if scores.shape[-1] != labels.shape[-1]:
        raise ValueError(f"{scores.shape[-1]} scores per model but {labels.shape[-1]} labels")
    check_labels(labels)
    if np.isnan(scores).any():
        raise ValueError("NaN scores have no place in the order: the fitness is undefined")
    positives = int(np.count_nonzero(labels))
    if positives in (0, labels.size):
        kind = "positive" if positives else "negative"
        raise ValueError(f"all {labels.size} examples are {kind}: the "
                         f"{'false' if positives else 'true'}-positive rate is 0/0, so the fitness is undefined")
    return positives


def _check_wg(device, wg, local_bytes, kern=None):
    """A clear error (launch.LaunchError) for a work-group this device or kernel cannot run."""
    if isinstance(wg, bool) or not isinstance(wg, (int, np.integer)):
        raise TypeError(f"wg: expected an integer work-group size, got {type(wg).__name__}")
    if wg < 1 or wg & (wg - 1):
        raise ValueError(f"wg: work-group size {wg} is not a power of two")
    launch.check(device, wg, local_bytes, kern)


def work_group(device, wg, want, local_bytes, build):
    """(wg, build(wg)), the kernels built for work-groups of wg. wg None: the largest
    power of two up to `want` that the device runs with local_bytes(wg) of local
    memory, halved until every built kernel runs it too (a kernel's own limit, its
    registers included, is known only once it is built). A given wg is checked."""
    if wg is not None:
        _check_wg(device, wg, local_bytes(wg))
        kernels = build(wg)
        for k in kernels:
            _check_wg(device, wg, 0, k)
        return wg, kernels
    wg = launch.largest(device, want, local_bytes)
    while True:
        kernels = build(wg)
        fits = min(launch.largest(device, wg, local_bytes, kern=k) for k in kernels)
        if fits == wg:
            return wg, kernels
        wg = fits


def count(n, name="n", most=2**31 - 1):
    """n as an int, 0 to `most`; TypeError or ValueError naming `name` otherwise."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{name}: expected an integer count, got {type(n).__name__}")
    if not 0 <= n <= most:
        raise ValueError(f"{name}: expected 0 to {most:,}, got {n:,}")
    return int(n)


def device_buffer(arg, name, n, dtype, said=None):
    """The cl.Buffer of `arg`, a contiguous pyopencl array of `dtype` from its buffer's
    start, or a bare cl.Buffer whose dtype the caller says (`said`: a buffer carries
    none, and one of another type would be read as `dtype` without a word), after
    checking that it holds at least n items."""
    dtype = np.dtype(dtype)
    if isinstance(arg, cla.Array):
        if arg.dtype != dtype:
            raise TypeError(f"{name}: expected {dtype} items, got a pyopencl array of {arg.dtype}")
        if not arg.flags.c_contiguous or arg.offset:
            raise ValueError(f"{name}: expected a contiguous pyopencl array that starts at the "
                             "start of its buffer; pass a copy")
        have, buf = arg.size, arg.data
    elif isinstance(arg, cl.Buffer):
        have, buf = bare_buffer_items(arg, name, dtype, said), arg
    else:
        raise TypeError(f"{name}: expected a cl.Buffer or a pyopencl array of {dtype}, "
                        f"got {type(arg).__name__}")
    if n > have:
        raise ValueError(f"n = {n:,} is more than {name} holds ({have:,} {dtype} items)")
    return buf
