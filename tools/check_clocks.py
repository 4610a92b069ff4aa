"""GPU host: the two measurements read with %clock64 beside the SM clock, at full
scale, each checked against NumPy: the machine page's latency under load and
chapter 4's phases of an iteration. Prints what each gave; exits 1 where one fails.

    PYOPENCL_CTX=0 python tools/check_clocks.py
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gpubook as gb  # noqa: E402
from gpubook import clock  # noqa: E402
from gpubook.chapters import logreg as lr, machine  # noqa: E402
from gpubook.logistic import train  # noqa: E402


def main():
    device, ctx, queue, scale, name = gb.open_device()
    t = time.time()
    ghz = clock.measure(ctx, queue, device).ghz
    print(f"{name}: SM clock under load {ghz:.4f} GHz")
    got = machine.loaded.measure(ctx, queue, device, scale, ghz)
    print("latency under load:", {k: v for k, v in got.items() if k != "points"})
    for p in got.get("points", []):
        print("   ", {k: round(v, 1) for k, v in p.items()})
    prob = lr.problem(scale)
    trainer = lr.Trainer(ctx, queue, prob)
    n = 128
    defines = lr.fast_defines(device, prob.J, n)
    iters = 2000
    w_ref = train(prob.X, prob.labels, prob.rate, iters)
    phases = lr.phases.measure(trainer, device, n, defines, iters, ghz)
    if "weights" in phases:
        lr.check(phases.pop("weights"), w_ref)
    untimed = lr.build(ctx, device, "fast", prob.J, prob.K, n, **defines)
    tm, w = trainer.time(untimed, n, repeats=3, iterations=iters)
    lr.check(w, w_ref)
    print("phases:", {k: round(v, 1) if isinstance(v, float) else v for k, v in phases.items()},
          f"untimed build: {tm.median * 1e9 / iters * ghz:.0f} cycles an iteration")
    print(f"done in {time.time() - t:.1f} s")
    return 0 if "why_not" not in got and "why_not" not in phases else 1


if __name__ == "__main__":
    sys.exit(main())
