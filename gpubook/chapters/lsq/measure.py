"""Chapter 8's step 6 on the page: CholeskyQR2 (`cholqr` beside this module)
built with tiles that fit the device, timed, and checked against the data.

`portable` builds the register-tile (FMA) variant with the default shapes,
or with smaller tiles where the device allows fewer work-items per
work-group. `time_factor` and `time_tsqr` time the step and the candidate
that lost; `fit_check` checks R of [X y] against the data as step 5's
check does (`gram_error`: gpubook.orthogonality.gram_error, with A'A given
where known). `orthogonality` (||QᵀQ − I||_F, gpubook.orthogonality) is the
other check, the one a bad Q cannot pass: `cholqr2_orthogonality` reads
CholeskyQR2's Q1 from the device, `householder_r` gives step 5's R for
`orthogonality_from_r`.
`phases` groups a trace's launches into the algorithm's stages; `figures`
draws them.
"""
import time

import numpy as np
import pyopencl as cl

from ... import tiles
from ...orthogonality import conditioned, gram_error, orthogonality, orthogonality_from_r  # noqa: F401 - one definition each
from ...show import markdown_table
from ...timing import event_seconds, seconds_by_kernel, stats, time_events
from . import cholqr, inputs, rows as lsq, tsqr

# Smaller register tiles, tried in order where the default shapes need more
# work-items per work-group than the device allows (square: the Gram products
# and the Cholesky's trailing update; any: Q1 and R2 R1).
# 64, 64, 32 and 16 work-items per work-group: a device that simulates few
# work-items (PoCL's POCL_MAX_WORK_GROUP_SIZE=32 or 16) still runs the step.
SQUARE_FALLBACKS = [{"TM": 32, "TN": 32, "WM": 4, "WN": 4, "K": 8, "STAGES": 2},
                    {"TM": 16, "TN": 16, "WM": 2, "WN": 2, "K": 4, "STAGES": 2},
                    {"TM": 32, "TN": 32, "WM": 8, "WN": 4, "K": 8, "STAGES": 2},
                    {"TM": 16, "TN": 16, "WM": 4, "WN": 4, "K": 4, "STAGES": 2}]
PRODUCT_FALLBACKS = [{"TM": 64, "TN": 32, "WM": 8, "WN": 4, "K": 8, "STAGES": 2}] + SQUARE_FALLBACKS


def _fits(device, shape):
    return tiles.unfit(device, shape, np.float64) is None


def portable_shapes(device):
    """The register-tile shapes for this device: {} (cholqr's defaults) where
    they fit, else the first smaller ones that do, as CholeskyQR2's keywords."""
    chosen = {}
    for key, default, fallbacks in (("gram_shape", cholqr.GRAM_SHAPE, SQUARE_FALLBACKS),
                                    ("update_shape", cholqr.UPDATE_SHAPE, SQUARE_FALLBACKS),
                                    ("product_shape", cholqr.PRODUCT_SHAPE, PRODUCT_FALLBACKS),
                                    ("inverse_shape", cholqr.PRODUCT_SHAPE, PRODUCT_FALLBACKS)):
        if _fits(device, default):
            continue
        shape = next((s for s in fallbacks if _fits(device, s)), None)
        if shape is None:
            raise tiles.TileError(f"no register tile of {key} fits this device: "
                                  f"{tiles.unfit(device, fallbacks[-1], np.float64)}")
        chosen[key] = dict(shape)
    return chosen


def portable(ctx, queue, cols, **options):
    """(CholeskyQR2 on the register tiles for `cols` columns, a line saying
    which tiles). Options go to CholeskyQR2 and win over the chosen shapes."""
    shapes = portable_shapes(queue.device)
    cq = cholqr.CholeskyQR2(ctx, queue, cols, **{**shapes, **options})
    if shapes:
        note = ("smaller register tiles (the device allows " f"{queue.device.max_work_group_size} work-items per "
                "work-group): " + "; ".join(f"{k.split('_')[0]} {tiles.label(s)}" for k, s in shapes.items()))
    else:
        note = "the default register tiles"
    return cq, note


def time_factor(cq, a, repeats=3, warmup=1):
    """Time CholeskyQR2 on the rows of a, two ways per run. By the device's
    clock, from the first launch's start to the last one's end: how steps 3-5
    and TSQR are timed here, and how CUDA events time cuSOLVER's call. By the
    wall clock: everything enqueued, the pivots read back, the queue finished,
    so the host's enqueueing of every launch counts too. Returns
    ({"median_s", "q20_s", "q80_s"} of the device's clock, {"wall_s",
    "wall_q20_s", "wall_q80_s"} of the wall's, the medians of the host's time
    in `enqueue` ("enqueue_s") and of the device's idle time between the first
    launch's start and the last one's end, when no launch of either queue ran ("idle_s"), "by_kernel", "launches",
    "method", "cond_estimate", "reason", and per stage of `phases` its launches
    and device seconds: "stage_launches", "stage_s"), and R of the last run."""
    repeats, warmup = inputs.count("repeats", repeats, 1), inputs.count("warmup", warmup, 0)
    a = tsqr.checked(a, cq.C)
    m = len(a)
    work = cq.upload(a)
    walls, spans, host, idle, trace = [], [], [], [], []
    for rep in range(warmup + repeats):
        if cq.method == "TSQR":                  # the fallback overwrote the copy: start from the data again
            cl.enqueue_copy(cq.queue, work, a)
        cq.queue.finish()
        trace = []
        t0 = time.perf_counter()
        cq.enqueue(work, m, trace)
        t1 = time.perf_counter()
        cq.settle(work, m, trace)
        cq.queue.finish()
        if rep >= warmup:
            walls.append(time.perf_counter() - t0)
            spans.append((trace[-1][1].profile.end - trace[0][1].profile.start) * 1e-9)
            host.append(t1 - t0)
            idle.append(spans[-1] - busy_seconds([ev for _, ev in trace]))
    t, wall = stats(spans), stats(walls)
    r = cq.r()
    work.release()
    # one whole CholeskyQR2 in the trace: not where it fell back, nor where a TF32 first
    # pass was replaced by a float64 one (gpubook.chapters.lsq.mixed's first_reason)
    whole = cq.method == "CholeskyQR2" and not getattr(cq, "first_reason", "")
    stages = phases([name for name, _ in trace]) if whole else []
    # the passes over the matrix, where the factorisation counts them (CholeskyQR2's own)
    passes = cq.passes() if cq.method == "CholeskyQR2" and hasattr(cq, "passes") else (None, None)
    return {"median_s": t.median, "q20_s": t.q20, "q80_s": t.q80,
            "wall_s": wall.median, "wall_q20_s": wall.q20, "wall_q80_s": wall.q80,
            "enqueue_s": float(np.median(host)), "idle_s": float(np.median(idle)),
            "by_kernel": seconds_by_kernel(trace),
            "launches": len(trace), "stage_launches": {label: len(idx) for label, idx in stages},
            "passes": passes[0], "passes_text": passes[1],
            "stage_s": {label: sum(event_seconds(trace[i][1]) for i in idx) for label, idx in stages},
            "method": cq.method, "cond_estimate": cq.cond_estimate, "reason": cq.reason}, r


def busy_seconds(events):
    """Seconds in which at least one of the events' launches ran: the union of their
    [start, end] intervals (launches on two queues may overlap, and their sum would
    count the overlap twice)."""
    spans = sorted((ev.profile.start, ev.profile.end) for ev in events)
    busy, end = 0, None
    for s, e in spans:
        if end is None or s > end:
            busy, end = busy + (e - s), e
        elif e > end:
            busy, end = busy + (e - end), e
    return busy * 1e-9


def enqueue_seconds(cq, a, repeats=3):
    """The host's side of CholeskyQR2 (`time_factor`'s runs): (median host seconds
    that `enqueue` takes to enqueue the launches, median seconds that the device
    idles between the first launch's start and the last one's end, launches)."""
    found, _ = time_factor(cq, a, repeats)
    return found["enqueue_s"], found["idle_s"], found["launches"]


def time_tsqr(ctx, queue, a, repeats=3):
    """TSQR on a fresh copy of a before every run (it overwrites its input):
    {"median_s", "q20_s", "q80_s", "by_kernel", "launches"} by its events
    (first launch's start to last's end), and R."""
    a = tsqr.checked(a)
    qr = tsqr.TSQR(ctx, queue, a.shape[1])
    mf = cl.mem_flags
    pristine = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
    work = cl.Buffer(ctx, mf.READ_WRITE, a.nbytes)
    trace = []

    def run():
        cl.enqueue_copy(queue, work, pristine)
        trace.clear()
        return qr.enqueue(work, len(a), trace)
    t = time_events(run, repeats=repeats, warmup=1)
    r = qr.r()
    pristine.release()
    work.release()
    return {"median_s": t.median, "q20_s": t.q20, "q80_s": t.q80, "by_kernel": seconds_by_kernel(trace),
            "launches": len(trace)}, r


def fit_check(r, x, y, gram=None, ks=(1, 6, 40)):
    """(Gram error of R against [X y], the fit in Miller's form, the largest
    gap of the nested residual sums of the first k columns to lstsq's,
    relative to the total sum of squares). gram: [X y]'[X y] where known."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    error = gram_error(r, np.column_stack([x, y]) if gram is None else None, gram)
    factor = lsq.Factor.from_triangular(*tsqr.fit_from_r(r))
    rss = factor.rss_nested()
    gap = max(abs(rss[k] - lsq.rss_lstsq(x[:, :k], y)) / rss[0] for k in ks if k <= x.shape[1])
    return error, factor, float(gap)


def cholqr2_orthogonality(cq, a):
    """After `cq` factored the m rows of a and settled (`r_factor`, `time_factor`):
    {"q1": ||Q1ᵀQ1 − I||_F of the first pass's Q1 = A R1^-1 as the device formed
    it, "q": ||QᵀQ − I||_F of CholeskyQR2's Q = Q1 R2^-1, "how": how Q was formed}.
    The step forms R only: Q comes from the device's Q1 and R2, on the host in
    float64. Where the step fell back to TSQR, Q = A R^-1 on the host from its
    R (orthogonality_from_r) and "q1" is None."""
    a = tsqr.checked(a, cq.C)
    m = len(a)
    if cq.method is None:
        raise RuntimeError("nothing settled yet: factor a first (r_factor, or enqueue and settle)")
    if cq.method == "TSQR":
        return {"q1": None, "q": orthogonality_from_r(a, cq.r()),
                "how": "A R⁻¹ on the host from TSQR's R, float64 (the step fell back)"}
    if cq._m != m:
        raise ValueError(f"the last factorisation had {cq._m} rows, a has {m}")
    q1, g2 = np.empty((m, cq.C)), np.empty((cq.C, cq.C))
    cl.enqueue_copy(cq.queue, q1, cq.Q)
    cl.enqueue_copy(cq.queue, g2, cq.G2)                         # R2 in its upper triangle
    out = {"q1": orthogonality(q1), "how": "Q₁ from the device, Q = Q₁ R₂⁻¹ on the host, float64"}
    out["q"] = orthogonality_from_r(q1, g2)
    return out


CHECKS_HEADER = ["method", "matrix", "R'R against A'A (Gram error)", "‖Q₁ᵀQ₁ − I‖_F, first pass",
                 "‖QᵀQ − I‖_F", "how Q was formed"]


def checks_table(rows):
    """The page's table of both checks, one row per method and matrix: rows of
    {"method", "matrix", "gram", "q1" (CholeskyQR2's first pass only), "q", "how"};
    a check that did not run shows a dash."""
    def number(v):
        return "—" if v is None else f"{v:.1e}"
    return markdown_table([CHECKS_HEADER] + [[r["method"], r["matrix"], number(r.get("gram")), number(r.get("q1")),
                                              number(r.get("q")), r["how"]] for r in rows])


def householder_r(qr):
    """R of [X y] from step 3's or step 5's factor: X's triangle, z = Q'y beside
    it, and the residual's square root in the corner (signs as they come)."""
    rt, z = qr.triangular()
    w = len(z)
    r = np.zeros((w + 1, w + 1))
    r[:w, :w], r[:w, w], r[w, w] = rt, z, np.sqrt(max(qr.sserr, 0.0))
    return r


def ill_conditioned(m, n, top=1e9, seed=5):
    """An m x n matrix whose columns are scaled from 1 to `top`: its condition
    number is about `top`, beyond what CholeskyQR2 takes."""
    if m < n or n < 2:
        raise ValueError("expected m >= n >= 2")
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, n)) * np.logspace(0, np.log10(top), n)


def product_flops(m, cols):
    """The useful flops of CholeskyQR2's four products on an m x cols matrix:
    m C (C + 1) for each Gram matrix's triangle, m C (C + 1) for Q1 = A R1^-1
    (R1^-1 upper triangular), C (C + 1) (C + 2) / 3 for R2 R1 (two triangles)."""
    c = int(cols)
    return 3 * m * c * (c + 1) + c * (c + 1) * (c + 2) / 3


# The stages of CholeskyQR2 in the order enqueue runs them: a stage is a run of
# consecutive launches whose kernels belong to the same kind.
KIND = {"tiles: Gram": "gram", "sum_chunks": "gram", "chol_diag": "cholesky", "chol_rows": "cholesky",
        "chol_cols": "cholesky", "tiles: trailing -= L21 L21'": "cholesky", "tiles: inverse -= L21 X": "cholesky",
        "transpose_rows": "transpose", "tiles: Q1 = A R1^-1": "q1", "take_triangle": "triangles",
        "tiles: R = R2 R1": "r",
        # the TF32 first Gram matrix (gpubook.chapters.lsq.mixed)
        "narrow_rows": "gram", "clear the Gram matrix": "gram", "tf32_transpose": "gram", "wgmma_gram": "gram",
        "widen_lower": "gram", "add_to_diagonal": "r", "R = R1": "r"}


STAGE_LABELS = ["G1 = A'A", "G1 = R1'R1, R1^-1", "transposes", "Q1 = A R1^-1", "G2 = Q1'Q1", "G2 = R2'R2",
                "triangles", "R = R2 R1"]


def phases(names):
    """[(stage label, [launch indices])] of a CholeskyQR2 trace's kernel names:
    runs of consecutive launches of one kind, labelled in enqueue's order."""
    runs = []
    for i, name in enumerate(names):
        if name not in KIND:
            raise ValueError(f"{name!r} is not a launch of CholeskyQR2's enqueue")
        if runs and runs[-1][0] == KIND[name]:
            runs[-1][1].append(i)
        else:
            runs.append((KIND[name], [i]))
    if [k for k, _ in runs] != ["gram", "cholesky", "transpose", "q1", "gram", "cholesky", "triangles", "r"]:
        raise ValueError("the trace is not one whole CholeskyQR2 factorisation (did it fall back to TSQR?)")
    return [(label, idx) for label, (_, idx) in zip(STAGE_LABELS, runs)]
