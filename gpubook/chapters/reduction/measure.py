"""Chapter 3's sweep of the device-wide sum over array lengths: one function that
the main line and its Going-further page both call, so that each page measures
the same way."""
import time

import pyopencl as cl
import pyopencl.array as cla

from ...timing import stats as _stats, sweep as _sweep, time_events as _time_events

LIB = "pyopencl.array.sum"


def full_length(scale):
    """The array the page sums: 2**28 floats (1 GiB) at the full scale, 2**22 else."""
    return 2**28 if scale == "full" else 2**22


def lengths(n, scale):
    """The lengths of the sweep: from 2**16 (2**12 at small scale) to n, by fours."""
    return [2**k for k in range(16 if scale == "full" else 12, n.bit_length(), 2)]


def library_sum(queue, arr):
    """pyopencl.array.sum timed from a marker to its last kernel's event, behind one
    untimed call that keeps the device busy while the host enqueues the timed one."""
    cla.sum(arr, queue=queue)
    start = cl.enqueue_marker(queue)
    return [start, cla.sum(arr, queue=queue).events[-1]]


def sweep(queue, steps, dev, host, sizes, repeats):
    """Every step of `steps` ({name: DeviceSum}) and pyopencl.array.sum over `sizes`
    floats of the device array `dev` (records of GB/s read, counting 4n bytes), and
    np.sum of the host array `host` timed five times with a wall clock (stats)."""
    def one(variant, m):
        if variant == LIB:
            view = dev[:m]
            return _time_events(lambda: library_sum(queue, view), repeats=repeats)
        return _time_events(lambda: steps[variant].enqueue(dev, m),
                            repeats=repeats)

    records = _sweep("floats", sizes, list(steps) + [LIB], one,
                     amount=lambda variant, m: 4 * m / 1e9)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        host.sum()
        times.append(time.perf_counter() - t0)
    return records, _stats(times)


def unroll_times(ctx, queue, dev, n, repeats, unrolls=(1, 2, 4, 8)):
    """Step 5 built with each UNROLL of `unrolls`, summing n floats of `dev`:
    {unroll: Timing}. UNROLL=1 keeps the float4 loads and the unrolled tree but not
    the unrolled loop."""
    from .steps import DeviceSum

    times = {}
    for unroll in unrolls:
        kernel = DeviceSum(ctx, queue, "5_unrolled", unroll=unroll)
        times[unroll] = _time_events(lambda: kernel.enqueue(dev, n), repeats=repeats)
    return times


def unroll_rows(step4_s, times, gb_read, copy_gbs, fmt):
    """The table of step 4 against step 5 at each UNROLL: time, GB/s read and the
    share of the copy bandwidth (`gb_read` GB read by one sum)."""
    rows = [["kernel", "time (ms)", "GB/s read", "% of copy bandwidth"]]
    for name, t in [("4_multi (float)", step4_s)] + [
            (f"5_unrolled, UNROLL={u}", timing.median) for u, timing in times.items()]:
        rows.append([name, f"{t * 1e3:.3f}", fmt.format(gb_read / t),
                     f"{gb_read / t / copy_gbs:.0%}"])
    return rows


def page_sweep(queue, steps, dev, host, n, scale):
    """The pages' sweep up to n floats at `scale`: (lengths, repeats, records, np.sum's
    stats, the format of a rate: whole GB/s where the fastest reaches 100)."""
    repeats = 20 if scale == "full" else 5
    sizes = lengths(n, scale)
    records, numpy = sweep(queue, steps, dev, host, sizes, repeats)
    fmt = "{:,.0f}" if max(r["rate"] for r in records) >= 100 else "{:.2f}"
    return sizes, repeats, records, numpy, fmt
