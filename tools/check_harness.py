"""The harness of the GPU host's checks (tools/check_tensor.py, tools/check_qr.py):
items caught one by one, a time budget, CuPy's CUDA-event timing, and one summary
line per item (PASS, FAIL, INFO or SKIP, with the reason)."""
import os
import sys
import time
import traceback
from pathlib import Path

import numpy as np


BUDGET_S = int(os.environ.get("CHECK_TENSOR_BUDGET_S", "170"))  # items starting later are skipped


START = time.perf_counter()


RESULTS = []


def say(line):
    print(line, flush=True)


def result(item, status, detail):
    RESULTS.append((item, status, detail))
    say(f"  -> {status} {item}: {detail}")


def elapsed():
    return time.perf_counter() - START


ONLY = next((a.split("=", 1)[1].split(",") for a in sys.argv[1:] if a.startswith("--only=")), None)


def item(name, fn, *args):
    if ONLY is not None and name not in ONLY and name != "gate":
        return True
    say(f"\n== {name} (at {elapsed():.0f} s)")
    if elapsed() > BUDGET_S:
        result(name, "SKIP", f"the script's {BUDGET_S} s budget is spent")
        return
    try:
        return fn(*args)
    except Exception as err:  # noqa: BLE001 - report and go on
        tb = traceback.extract_tb(err.__traceback__)[-1]
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        result(name, "FAIL", f"{type(err).__name__}: {first} ({Path(tb.filename).name}:{tb.lineno})")
        say(traceback.format_exc())
    finally:
        free_cupy()


def cupy_module():
    try:
        import cupy
        return cupy
    except Exception:  # noqa: BLE001 - not installed, or no CUDA
        return None


def free_cupy():
    cp = cupy_module()
    if cp is not None:
        try:
            cp.get_default_memory_pool().free_all_blocks()
        except Exception:  # noqa: BLE001
            pass


def cuda_seconds(cp, fn, repeats=5):
    """Median seconds per call of fn, by CUDA events (after one warm-up call)."""
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(repeats):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) * 1e-3)
    return float(np.median(times))


def summary():
    say(f"\n== summary ({elapsed():.0f} s)")
    for name, status, detail in RESULTS:
        say(f"{status:4s} {name}: {detail}")
    return 1 if any(s == "FAIL" for _, s, _ in RESULTS) else 0
