"""Devices that stop a kernel's loops early, without an error.

Mesa's llvmpipe (behind rusticl) gives each work-item a budget of 65,535 loop
iterations per launch, counted over all its loops, nested ones included, and
leaves every loop once the budget is spent: the kernel finishes, with a wrong
answer. A probe of one work-item counting up PROBE_ITERATIONS times finds such a
cap when a queue is made on the device (device.make_queue), once per device. Where
there is one, the first cell of a chapter says so in one line, and a check that
fails in a notebook names it as a possible cause (whether the failed kernel looped
that long is the reader's to see: chapter 7's population sort fails there with
loops well under the cap, for another reason).
"""
import numpy as np
import pyopencl as cl

PROBE_ITERATIONS = 100_000   # above llvmpipe's 65,535; one work-item, about a millisecond on a GPU
PROBE_SOURCE = """
__kernel void loop_probe(__global const int *step, __global int *out, int n) {
    int count = 0;
    for (int i = 0; i < n; ++i)   /* n and the steps come at run time: no compiler folds it */
        count += step[i & 1];
    out[0] = count;
}
"""

# What a notebook's failed check raises: its asserts, and the RuntimeError of a helper
# that found a kernel's values wrong (chapter 0's pointer chase, for one)
CHECK_ERRORS = (AssertionError, RuntimeError)

_caps = {}           # device.int_ptr -> the cap, or None
_opened = [None]     # the cap of the device a queue was made on last (a notebook's device)


def probe(ctx, device, iterations=PROBE_ITERATIONS):
    """The number of iterations a loop of `iterations` ran on `device`: None when it
    ran them all (or the probe could not run), else the count where the device stopped."""
    try:
        queue = cl.CommandQueue(ctx, device)
        kern = cl.Kernel(cl.Program(ctx, PROBE_SOURCE).build(devices=[device]), "loop_probe")
        mf = cl.mem_flags
        step = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.ones(2, np.int32))
        out = cl.Buffer(ctx, mf.WRITE_ONLY, 4)
        kern(queue, (1,), (1,), step, out, np.int32(iterations))
        got = np.zeros(1, np.int32)
        cl.enqueue_copy(queue, got, out)
    except cl.Error:    # a device that cannot build or run the probe says so elsewhere
        return None
    count = int(got[0])
    return count if 0 <= count < iterations else None


def loop_cap(device, ctx=None):
    """The number of loop iterations after which `device` stops a kernel's loops,
    or None where it runs them all (probed once per device)."""
    key = device.int_ptr
    if key not in _caps:
        _caps[key] = probe(ctx if ctx is not None else cl.Context([device]), device)
    return _caps[key]


class LoopCapError(ValueError):
    """A shape that cannot run under this device's loop cap even split over launches:
    the message names the cap. A page catches it to say so in one line."""


def launches(device, count, per_item, fixed=0, step=1, what="a launch", unit="items"):
    """[(first, how many)] of the launches that cover `count` items (rows, iterations) on
    `device`: [(0, count)], one launch, where it runs loops to the end; where it has a loop
    cap, launches of a multiple of `step` items (the last may have fewer) in which no
    work-item loops more than fixed + per_item x items times. A ValueError naming the cap
    where not even `step` items fit (`what` says whose loops, `unit` what the items are)."""
    cap = loop_cap(device)
    if cap is None:
        return [(0, count)]
    most = int((cap - fixed) // per_item) // step * step
    if most < step:
        raise LoopCapError(f"{what}: a launch of {step:,} {unit}, the fewest it takes, loops about "
                         f"{fixed + per_item * step:,.0f} times per work-item, over this device's cap of "
                         f"{cap:,} iterations per work-item and launch (gpubook.loopcap)")
    return [(first, min(most, count - first)) for first in range(0, count, most)] or [(0, count)]


def one_or_all(events):
    """The event of one launch, or the list of them where a loop cap split the work."""
    return events[0] if len(events) == 1 else events


def flat(*results):
    """The events of launches as one list, where some came as lists (one_or_all)."""
    return [e for r in results for e in (r if isinstance(r, (list, tuple)) else [r])]


def _cap(device):
    return _opened[0] if device is None else loop_cap(device)


def note(device=None):
    """One line for a chapter's first cell where the device stops loops early, else ""
    (device None: the device a queue was made on last)."""
    cap = _cap(device)
    if cap is None:
        return ""
    return (f"This device stops kernel loops after {cap:,} iterations (per work-item, all its loops "
            "together; Mesa's llvmpipe does): checks of kernels that loop longer will fail, and say so.")


def failure_note(device=None):
    """What a failed check adds on a device that stops loops early, else ""."""
    cap = _cap(device)
    if cap is None:
        return ""
    return (f"This device stops kernel loops after {cap:,} iterations without an error: if the "
            "kernels checked here loop longer, they stopped early and that is why this check failed; "
            "if not, the cause is elsewhere.")


def with_note(message, device=None):
    """`message`, followed by failure_note's sentence where there is one."""
    extra = failure_note(device)
    return f"{message}. {extra}" if extra else message


def announce(device):
    """Probe `device` (once), remember its cap as the current device's, and where it
    has one print note's line and have IPython add failure_note to failed checks."""
    # The probe runs in a context of its own, not the chapter's: run in the chapter's
    # context under Oclgrind, it was followed by false reports of uninitialised values
    # in a later kernel of the same process (check_kernels' covariance-symmetric case).
    cap = loop_cap(device)
    _opened[0] = cap
    if cap is None:
        return None
    print(note(device))
    _name_the_cause_in_ipython()
    return cap


def _assertion_handler(shell, etype, value, tb, tb_offset=None):
    """IPython's handler for a failed check in a cell (CHECK_ERRORS): the usual
    traceback, its message followed by failure_note's sentence."""
    extra = failure_note()
    if extra and extra not in str(value):
        value.args = (f"{value}. {extra}" if str(value) else extra,)
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)


def _name_the_cause_in_ipython():
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None and hasattr(shell, "set_custom_exc"):
        shell.set_custom_exc(CHECK_ERRORS, _assertion_handler)
