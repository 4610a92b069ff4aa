"""Replay captured launches through OpenCL and through the CUDA driver (GPU hosts).

    python3 -m gpubook.replay time FOLDER      # both ways: times, outputs, replay.ptx
    python3 -m gpubook.replay profile FOLDER   # the CUDA replays once each (under ncu)

FOLDER holds what `gpubook.capture` kept, one launch per sub-folder. `time`
builds each launch's source with its options through NVIDIA's OpenCL, runs it on
the captured inputs, reads every buffer back, then runs the same PTX (made
loadable by `counters.loadable_ptx`) through CuPy on the same inputs and compares
the bytes; both are then timed (median of REPEATS launches, events on each side).
It writes replay.json and replay.ptx beside each launch.json. `profile` launches
each replay that loaded, in folder order, and writes profiled.json: the labels
in that order, which is the order of the rows of ncu's report.
"""
import json
import pathlib
import sys

import numpy as np

from . import counters

REPEATS = 10
# Each side runs about TIME_BUDGET_S of timed launches per kernel (at least
# MIN_REPEATS timings): a chapter's long kernels (0.1-1 s) would otherwise take
# minutes each to replay.
TIME_BUDGET_S = 0.2
MIN_REPEATS = 3
# Launches timed together: one launch between two CUDA events also times the gap
# before it (a few us), which an OpenCL event's start and end do not; on an H200
# (2026-11-27) that made 10-50 us kernels of chapter 5 replay at 1.1-2.4x their
# OpenCL time. Timed the same way on both sides, the gaps are shared alike.
BATCH = 20
BATCH_UNDER_S = 2e-3    # only launches shorter than this are batched


def plan(seconds):
    """(launches timed together, timings) for a kernel whose one launch took `seconds`:
    short kernels BATCH at a time, long ones one at a time, about TIME_BUDGET_S in all."""
    batch = BATCH if seconds < BATCH_UNDER_S else 1
    repeats = int(TIME_BUDGET_S / max(seconds * batch, 1e-9))
    return batch, max(MIN_REPEATS, min(REPEATS, repeats))


def _slots(folder):
    return sorted(p.parent for p in pathlib.Path(folder).glob("*/launch.json"))


def _inputs(slot, spec):
    return [np.load(slot / a["file"]) if a["kind"] == "buffer" else None for a in spec["args"]]


def _opencl(slot, spec, ctx, queue):
    import pyopencl as cl

    prg = cl.Program(ctx, (slot / "source.cl").read_text()).build(options=spec["options"])
    kern = cl.Kernel(prg, spec["kernel"])
    bufs, args = {}, []
    mf = cl.mem_flags
    for i, (a, data) in enumerate(zip(spec["args"], _inputs(slot, spec))):
        if a["kind"] == "buffer":
            bufs[i] = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=data)
            args.append(bufs[i])
        elif a["kind"] == "local":
            args.append(cl.LocalMemory(a["nbytes"]))
        elif a["kind"] == "scalar":
            args.append(np.array(a["value"], dtype=a["dtype"])[()])
        else:
            raise counters.CountersError("it takes a vector or struct argument by value")
    kern.set_args(*args)

    def launch():
        return cl.enqueue_nd_range_kernel(queue, kern, spec["global"], spec["local"])

    first = launch()
    first.wait()
    once = (first.profile.end - first.profile.start) * 1e-9
    if once > counters.PROFILE_MAX_S:      # ncu would run it once per pass: not replayed
        raise counters.CountersError(f"not replayed: one launch takes {once:.2f} s, over "
                                     f"{counters.PROFILE_MAX_S} s")
    batch, repeats = plan(once)
    outputs = {}
    for i, b in bufs.items():
        outputs[i] = np.empty(b.size, np.uint8)
        cl.enqueue_copy(queue, outputs[i], b)
    seconds = []
    for _ in range(repeats):      # `batch` launches back to back, as on the CUDA side
        events = [launch() for _ in range(batch)]
        events[-1].wait()
        seconds.append((events[-1].profile.end - events[0].profile.start) * 1e-9 / batch)
    return prg.binaries[0], outputs, float(np.median(seconds)), (batch, repeats)


def _cuda_function(ptx, name, shared):
    import cupy

    module = cupy.cuda.function.Module()
    module.load(ptx.encode() + b"\0")
    fn = module.get_function(name)
    if shared > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = shared
    return module, fn


def _cuda_args(slot, spec):
    import cupy

    args = {}
    for i, (a, data) in enumerate(zip(spec["args"], _inputs(slot, spec))):
        if a["kind"] == "buffer":
            args[i] = cupy.asarray(data)
        elif a["kind"] == "scalar":
            args[i] = np.array(a["value"], dtype=a["dtype"])[()]
    return args


def _grid(spec):
    if any(g % s for g, s in zip(spec["global"], spec["local"])):
        raise counters.CountersError("its global size is not a multiple of its local size")
    groups = [g // s for g, s in zip(spec["global"], spec["local"])]
    pad = [1] * (3 - len(groups))
    return tuple(groups + pad), tuple(list(spec["local"]) + pad), groups


def _cuda(slot, spec, ptx_text, shared, batch=BATCH, repeats=REPEATS):
    import cupy

    grid, block, _ = _grid(spec)
    _, fn = _cuda_function(ptx_text, spec["kernel"], shared)
    args = _cuda_args(slot, spec)
    ordered = [args[i] for i in sorted(args)]
    fn(grid, block, ordered, shared_mem=shared)
    cupy.cuda.Device().synchronize()
    outputs = {i: cupy.asnumpy(v) for i, v in args.items() if isinstance(v, cupy.ndarray)}
    start, end, seconds = cupy.cuda.Event(), cupy.cuda.Event(), []
    for _ in range(repeats):
        start.record()
        for _ in range(batch):
            fn(grid, block, ordered, shared_mem=shared)
        end.record()
        end.synchronize()
        seconds.append(cupy.cuda.get_elapsed_time(start, end) * 1e-3 / batch)
    return outputs, float(np.median(seconds))


def time_all(folder):
    import pyopencl as cl

    from .device import choose_device

    device = choose_device()
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    for slot in _slots(folder):
        spec = json.loads((slot / "launch.json").read_text())
        entry = {"label": spec["label"], "notebook": spec.get("notebook", "")}
        try:
            _, _, groups = _grid(spec)
            ptx, cl_out, entry["opencl_s"], timed = _opencl(slot, spec, ctx, queue)
            entry["batch"], entry["repeats"] = timed
            local = [a["nbytes"] for a in spec["args"] if a["kind"] == "local"]
            text, shared = counters.loadable_ptx(ptx, spec["kernel"], groups,
                                                 len(spec["global"]), local)
            (slot / "replay.ptx").write_text(text)
            entry["shared_bytes"] = shared
            cu_out, entry["cuda_s"] = _cuda(slot, spec, text, shared, *timed)
            entry["same_output"] = all(np.array_equal(cl_out[i], cu_out[i]) for i in cl_out)
        except Exception as err:  # noqa: BLE001 - every failure is listed with its reason
            entry["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
        entry["why_not"] = counters.trusted(entry)
        (slot / "replay.json").write_text(json.dumps(entry, indent=1) + "\n")
        print(f"{entry['label'][:70]:70s} "
              + (entry["why_not"] or f"{entry['cuda_s'] / entry['opencl_s']:.3f}x"), flush=True)


def profile_all(folder):
    import cupy

    order = []
    for slot in _slots(folder):
        spec = json.loads((slot / "launch.json").read_text())
        replay = slot / "replay.json"
        done = json.loads(replay.read_text()) if replay.exists() else {}
        if done.get("why_not") is not None or "cuda_s" not in done \
                or done["cuda_s"] > counters.PROFILE_MAX_S:
            continue
        shared = done["shared_bytes"]
        grid, block, _ = _grid(spec)
        _, fn = _cuda_function((slot / "replay.ptx").read_text(), spec["kernel"], shared)
        args = _cuda_args(slot, spec)
        fn(grid, block, [args[i] for i in sorted(args)], shared_mem=shared)
        cupy.cuda.Device().synchronize()
        order.append(slot.name)
        del args
    (pathlib.Path(folder) / "profiled.json").write_text(json.dumps(order) + "\n")


if __name__ == "__main__":
    {"time": time_all, "profile": profile_all}[sys.argv[1]](sys.argv[2])
