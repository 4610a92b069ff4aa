"""Chapter 4: where an iteration of the fastest kernel spends its cycles, read from
inside with the SM's cycle counter (fast.cl built with PHASES=1, NVIDIA only).

Lane 0 of every warp reads %clock64 at the start of each iteration, after its
examples (dot products, sigmoid, gradient) and after the sum over the work-group
and the update; the kernel writes each warp's two totals. A warp's examples phase
is its own examples, as fast as the compute unit runs it beside the other warps;
its sum phase holds the shuffles, the local-memory rounds and the wait at the
barrier for the slowest warp. The counter reads order the code around them, so the
timed build's iteration is compared with the untimed one's.
"""
import numpy as np
import pyopencl as cl

from ... import clock
from ...kernels import KernelBuildError, kernel
from .training import rate_literal

WARP = 32


def measure(trainer, device, work_items, defines, iterations, ghz):
    """Cycles per iteration of the fast kernel's two phases, the median over warps
    (with the smallest and largest warp's), the timed build's whole iteration in
    cycles from its event at `ghz`, and the weights it trained; or {"why_not": ...}
    where the device has no counter OpenCL C reads or the shape is not in warps."""
    why = clock.why_not(device)
    if why or not ghz:
        return {"why_not": why or "no SM clock was measured to turn cycles into time"}
    if work_items % WARP:
        return {"why_not": f"{work_items} work-items are not whole warps of {WARP}"}
    try:
        return _timed(trainer, work_items, defines, iterations, ghz)
    except (cl.Error, KernelBuildError) as err:   # the driver refused it: say so
        return {"why_not": f"the timed build did not build or run here: "
                           f"{str(err).splitlines()[0][:160]}"}


def _timed(trainer, work_items, defines, iterations, ghz):
    prob, queue = trainer.prob, trainer.queue
    knl = kernel(queue.context, ("device/nv_clock.cl", "logreg/fast.cl"), "train",
                 {"J": prob.J, "K": prob.K, "N": work_items, **dict(defines),
                  "ITERS": int(iterations), "RATE": rate_literal(prob.rate), "PHASES": 1,
                  "NV_PTX": 1})
    warps = work_items // WARP
    out = cl.Buffer(queue.context, cl.mem_flags.WRITE_ONLY, 16 * warps)
    cl.enqueue_copy(queue, trainer.w, trainer.zeros)
    event = knl(queue, (work_items,), (work_items,), trainer.X, trainer.labels,
                trainer.w, out)
    event.wait()
    got = np.empty(2 * warps, np.uint64)
    cl.enqueue_copy(queue, got, out)
    per = got.reshape(warps, 2).astype(float) / iterations
    ex, total = per[:, 0], per.sum(axis=1)
    return {"examples": float(np.median(ex)), "examples_min": float(ex.min()),
            "examples_max": float(ex.max()), "sum": float(np.median(per[:, 1])),
            "warps": warps, "iterations": int(iterations),
            "iteration": float(np.median(total)),
            "timed_iteration": (event.profile.end - event.profile.start) * ghz
            / iterations, "weights": trainer.weights()}
