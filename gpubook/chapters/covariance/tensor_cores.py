"""Chapter 6's last step, NVIDIA only: S = XcᵀXc on the TF32 tensor cores
(gpubook.tf32, kernels/tensor/xtx_tf32.cl), run on the chapter's own centred,
padded data and finished by its own kernel, so that C is checked and timed as
every other step is; and the figure of the 3xTF32 split.

On a device without tensor cores reachable from OpenCL, `mode_errors` runs the
same kernel with the warp's product emulated in local memory (at most
EMULATED_MAX of the data): that checks the kernel's arithmetic on any device,
never the tensor cores or their speed.
"""
import matplotlib.pyplot as plt
import numpy as np
import pyopencl as cl
from matplotlib.patches import Rectangle

from ... import clock, launch, ptx_probe, tensor, tf32, wgmma
from ...device import fp64_missing, has_fp64
from ...kernels import KernelBuildError
from ...launch import LaunchError
from ...plot import new_figure
from ...timing import event_seconds as seconds
from ... import xtx
from .incore import Covariance

MODES = tuple(tf32.MODES)                              # 'tf32-raw', 'tf32', '3xtf32'
EMULATED_SHAPE = {"T": 16, "WARPS_M": 1, "WARPS_N": 1, "KC": 8}  # one warp a work-group: any device runs it
EMULATED_MAX = (16_384, 256)                              # rows, features of the emulated check at most
MANTISSA = {"float32": 23, "tf32": 10}                    # stored mantissa bits (the format's definition)
WGMMA_EMULATED = (128, 256)    # rows, features of step 8's emulated check at most (within llvmpipe's loop cap)
# step 8's emulated tiles: 64 x 64, one warp group, whose stages fit 32 KiB of local memory in
# every mode (llvmpipe's); the tiles' code is the GPU's, their shape smaller
WGMMA_EMULATED_SHAPE = {"WGS": 1, "MW": 1, "TN": 64, "KC": 8, "STAGES": 3, "WAIT": 1}


def candidate_shapes():
    """The tile shapes gpubook.tensor offers for the sweep (its one default where it offers no list)."""
    return [dict(s) for s in (getattr(tf32, "XTX_SHAPES", None) or [tf32.XTX_SHAPE])]


def shape_of(row):
    """The tile shape of a sweep row (tf32.XTX_KEYS, and tf32.XTX_FLAGS where given)."""
    return {k: row[k] for k in (*tf32.XTX_KEYS, *tf32.XTX_FLAGS) if k in row}


def _fastest(rows):
    """The sweep row of the smallest median (the first of equals); None for no rows."""
    return min(rows, key=lambda r: r["median_s"]) if rows else None


def _versus(before, after):
    """How the time of sweep row `after` compares with `before`'s, as 'r× faster' or 'r× slower'."""
    b, a = before["median_s"], after["median_s"]
    return f"{b / a:.2f}× faster" if a < b else f"{a / b:.2f}× slower"


def split_note(sweep):
    """What the sweep says of where 3xTF32 splits its floats: the best time of each
    (the shapes fed by cp.async aside: feed_note compares those)."""
    if not sweep:
        return "No tensor cores run here, so nothing was timed"
    unfed = [r for r in sweep if not r.get("FEED")]
    best = {late: _fastest([r for r in unfed if bool(r.get("LATE")) == late]) for late in (False, True)}
    best = {late: row for late, row in best.items() if row is not None}
    if len(best) < 2:
        return f"The sweep here timed only the {'late' if True in best else 'early'} split"
    early, late = best[False], best[True]
    return (f"Split on the way into local memory, the best shape ({early['variant']}) takes "
            f"{early['median_s'] * 1e3:.1f} ms; split as each lane loads its fragment, the best "
            f"({late['variant']}) takes {late['median_s'] * 1e3:.1f} ms, " + _versus(early, late))


def feed_note(sweep):
    """What the sweep says of FEED (cp.async, float4 fragment loads, red flushes): its best time
    against the best of the late split fed the old way."""
    new = _fastest([r for r in sweep if r.get("FEED")])
    was = _fastest([r for r in sweep if r.get("LATE") and not r.get("FEED")])
    if new is None or was is None:
        return "The sweep here did not time both ways of feeding the tensor cores"
    return (f"Fed through registers, the best shape ({was['variant']}) takes {was['median_s'] * 1e3:.1f} ms; "
            f"fed by cp.async with float4 fragment loads, the best ({new['variant']}) takes "
            f"{new['median_s'] * 1e3:.1f} ms, " + _versus(was, new))


def label(shape):
    return (f"T {shape['T']}, warps {shape['WARPS_M']} x {shape['WARPS_N']}, KC {shape['KC']}, "
            f"{32 * shape['WARPS_M'] * shape['WARPS_N']} work-items" + (", split late" if shape.get("LATE") else "")
            + (", fed by cp.async" if shape.get("FEED") else ""))


def l2_slab_rows(device, n, flush):
    """(rows, L2 bytes): the most rows of an n-column float32 X, a multiple of `flush`
    (at least one), that fill no more than three quarters of the device's L2 by the
    book's data-sheet table (gpubook.peaks); (None, None) where the table does not
    know the device. Part 6.3 feeds X through its tiles in slabs of these rows."""
    from ...peaks import datasheet_value
    l2 = datasheet_value(device.name, "l2_bytes")
    if not l2:
        return None, None
    rows = int(0.75 * l2) // (4 * n) // flush * flush
    return max(rows, flush), l2


def work(shape, m, n):
    """(bytes of X that the tiles read from global memory, flops of one pass of
    mma) for S = X'X with this tile shape on m x n data. Each panel of T columns
    is read by as many tiles as there are panels (by the tiles of its row of the
    triangle and of its column, once on the diagonal): side x n x m floats. The
    mma run over whole tiles and over m rounded up to KC, except the warps'
    blocks that lie wholly above the diagonal of a diagonal tile (DIAG_SKIP)."""
    t, wm, wn = shape["T"], shape["WARPS_M"], shape["WARPS_N"]
    side = -(-n // t)
    rows = -(-m // shape["KC"]) * shape["KC"]
    bm, bn = t // wm, t // wn
    kept = sum(1 for i in range(wm) for j in range(wn) if j * bn <= i * bm + bm - 1)
    per_diag = kept * bm * bn if shape.get("DIAG_SKIP", 1) else t * t
    off = side * (side - 1) // 2
    return 4 * side * n * m, 2 * rows * (off * t * t + side * per_diag)


def covariance_events(cov, product):
    """The tensor-core step from centred data to C, as `Covariance.covariance_events`:
    S's lower triangle from cov.xc into cov.s (the padding rows and columns skipped),
    then the chapter's finishing kernel."""
    return [*product.enqueue(cov.xc, cov.m, cov.n, cov.s, ldx=cov.np_, lds=cov.np_), cov.finish()]


def run(cov, x, product):
    """Upload, mean, centre, then the tensor-core step: C as a NumPy array."""
    cov.upload(x)
    cov.mean()
    cov.centre()
    covariance_events(cov, product)
    return cov.result()


def why_not_here(device, emulate=False):
    """None where step 7's kernels can build and run on this device (their warp's
    product emulated in local memory with emulate=True), else why not, in one line.
    Their shared source (gpubook.tensor.MMA) uses double, so fp64 comes first."""
    if not has_fp64(device):
        return f"{fp64_missing(device)}, which the tensor-core kernels' source ({tensor.MMA}) needs"
    if emulate:
        need = 32 * EMULATED_SHAPE["WARPS_M"] * EMULATED_SHAPE["WARPS_N"]
        if launch.why_not(device, need):
            return (f"its emulated warp needs {need} work-items per work-group, this device allows "
                    f"{launch.device_max(device)}")
    return None


def products(ctx, queue, shapes, mode="3xtf32", emulate=False):
    """([(shape, XtX)] that build and launch here, [(shape, why not)] for the others)."""
    if not has_fp64(queue.device):
        return [], [(shape, why_not_here(queue.device)) for shape in shapes]
    built, skipped = [], []
    for shape in shapes:
        try:
            built.append((shape, tf32.XtX(ctx, queue, mode, shape=shape, emulate=emulate)))
        except (ValueError, LaunchError, KernelBuildError, tensor.TensorCoreError) as err:
            skipped.append((shape, str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__))
    return built, skipped


def _cut(ctx, queue, cov, x, ref, most):
    """(cov, x, ref) for at most `most` (rows, features) of x: its own Covariance and
    float64 reference where cut, the page's where not."""
    rows, cols = min(x.shape[0], most[0]), min(x.shape[1], most[1])
    if (rows, cols) == x.shape:
        return cov, x, ref
    x = np.ascontiguousarray(x[:rows, :cols])
    return Covariance(ctx, queue, rows, cols), x, xtx.reference(x)


def mode_errors(ctx, queue, cov, x, ref, shape=None, emulate=False):
    """({mode: the chapter's error, xtx.error, of C from the tensor-core step}, (m, n) checked).

    On the tensor cores: the page's `cov` and data. emulate=True: the warp's
    product done in local memory, on any device, on at most EMULATED_MAX of x
    (its own float64 reference when cut). A ValueError naming the limit where
    the kernels cannot run here (why_not_here)."""
    reason = why_not_here(queue.device, emulate)
    if reason:
        raise ValueError(f"step 7's check cannot run here: {reason}")
    if emulate:
        cov, x, ref = _cut(ctx, queue, cov, x, ref, EMULATED_MAX)
        shape = EMULATED_SHAPE
    errors = {mode: xtx.error(run(cov, x, tf32.XtX(ctx, queue, mode, shape=shape, emulate=emulate)), ref)
              for mode in MODES}
    return errors, x.shape


# --- step 8: the same modes on Hopper's wgmma (gpubook.wgmma.Gram) ---------------------------
def wgmma_why_not(binary_rows):
    """None where step 8 runs on the tensor cores here: the probe's whole wgmma product
    (the last row of gpubook.ptx_probe.from_binary) ran equal to NumPy; else why not."""
    if not binary_rows:
        return "the driver took no PTX for sm_90a here: wgmma is Hopper's, through NVIDIA's driver"
    what, built, ran = binary_rows[-1][:3]
    if what != ptx_probe.PRODUCT or ran != "ran, equal to NumPy":
        return f"the probe's wgmma product did not run equal to NumPy ({ran or built})"
    return None


def wgmma_events(cov, gram):
    """Step 8 from centred data to C: X' written, the tiles' products into S (the padding
    included), then the chapter's finishing kernel."""
    return [*gram.enqueue(cov.xc, cov.mp, cov.np_, cov.s, ldx=cov.np_, ldc=cov.np_), cov.finish()]


def wgmma_errors(ctx, queue, cov, x, ref, emulate=False):
    """({mode: the chapter's error of C from step 8}, (m, n) checked, {mode: its Gram}).

    On the tensor cores: the page's `cov` and data, in gpubook.wgmma's shapes.
    emulate=True: each product done by the work-items from local memory, on any device
    (a work-item plays several where a work-group is small), in WGMMA_EMULATED_SHAPE's
    tiles, on at most WGMMA_EMULATED of x (its own float64 reference when cut).
    ValueError or LaunchError where it cannot run here."""
    if emulate:
        cov, x, ref = _cut(ctx, queue, cov, x, ref, WGMMA_EMULATED)
    grams = {mode: wgmma.Gram(ctx, queue, mode, WGMMA_EMULATED_SHAPE if emulate else None, emulate=emulate,
                              clocks=not emulate) for mode in MODES}
    errors = {}
    for mode, gram in grams.items():
        cov.upload(x)
        cov.mean()
        cov.centre()
        wgmma_events(cov, gram)[-1].wait()
        errors[mode] = xtx.error(cov.result(), ref)
    return errors, x.shape, grams


def wgmma_flushes(ctx, queue, cov, x, ref, flush_rows, tf32_rows, repeats=3):
    """Step 8's 3xTF32 with its sums added into S every r rows, for each r in
    flush_rows, and rounded TF32 every tf32_rows: ({r: {"product_s", "error"}} for 3xTF32,
    rounded TF32's error, None), the product's median seconds over `repeats` runs after
    one that is checked; ({}, None, why) where wgmma does not run here. x is centred
    once: the products read the centred copy and leave it as it is."""
    if not ptx_probe.is_nvidia(queue.device):
        return {}, None, f"{queue.device.name.strip()} is not an NVIDIA device: wgmma does not apply"
    out = {}
    cov.upload(x)
    cov.mean()
    cov.centre()
    for mode, rows in [("3xtf32", r) for r in flush_rows] + [("tf32", tf32_rows)]:
        try:
            gram = wgmma.Gram(ctx, queue, mode, flush_rows=rows)
        except (cl.Error, KernelBuildError, ValueError) as err:
            return {}, None, f"wgmma does not build here: {ptx_probe.first_error(str(err))}"
        wgmma_events(cov, gram)[-1].wait()
        error = xtx.error(cov.result(), ref)
        times = []
        for _ in range(repeats):
            events = wgmma_events(cov, gram)
            events[-1].wait()
            times.append(seconds(events[1]))
        out[(mode, rows)] = {"product_s": float(np.median(times)), "error": error}
    three = {rows: v for (mode, rows), v in out.items() if mode == "3xtf32"}
    return three, out[("tf32", tf32_rows)]["error"], None


def wgmma_times(cov, grams, repeats=5):
    """{mode: {"pass_s", "product_s", "total_s", "executed", "clock_ghz", "capped_s",
    "window_s"}}: medians over `repeats` runs of step 8 on the page's centred data, by the
    device's events (X' written; the tiles' products; from the pass's start to the
    finishing kernel's end), one warm-up first; the flops the tiles execute (whole tiles,
    three products in 3xtf32); where the Gram stamps the clock, the median over the timed
    runs of the SM clock over their products, and the seconds nvidia-smi counts the clock
    held at the power cap over the window_s seconds of all the runs (else None)."""
    out = {}
    for mode, gram in grams.items():
        rows, ghz = [], []
        stop = clock.power_window(gram.queue.device)
        for rep in range(repeats + 1):
            events = wgmma_events(cov, gram)
            events[-1].wait()
            if rep:
                rows.append([seconds(events[0]), seconds(events[1]),
                             (events[-1].profile.end - events[0].profile.start) * 1e-9])
                ghz.append(gram.clock().ghz if gram.clocks and not gram.emulate else None)
        window, capped = stop()
        pass_s, product_s, total_s = np.median(np.array(rows), axis=0)
        executed = (2 * len(gram.tile_list(cov.np_)) * gram.tm * gram.tn * cov.mp
                    * (3 if mode == "3xtf32" else 1))
        out[mode] = {"pass_s": float(pass_s), "product_s": float(product_s), "total_s": float(total_s),
                     "executed": executed, "window_s": window,
                     "clock_ghz": None if None in ghz else float(np.median(ghz)),
                     "capped_s": capped}
    return out


def wgmma_note(times, mma_times, gemm_s, syrk_s, useful, gemm_flops=None):
    """The sentence on step 8's times, computed from them: one-pass TF32 against cuBLAS's
    TF32 GEMM and step 7, 3xTF32 against SSYRK and step 7, and the rate its three
    products execute at against the GEMM's (gemm_flops in gemm_s)."""
    if not times:
        return ""
    raw, three = times["tf32-raw"], times["3xtf32"]
    def against(t, other, name):
        return f"{other / t:.2f}× {name}'s speed" if other else f"no {name} was measured"
    return (f"On wgmma one-pass TF32 (truncated) takes {raw['total_s'] * 1e3:.1f} ms from centred data to C, "
            f"of which {raw['pass_s'] * 1e3:.2f} ms write X' and {raw['product_s'] * 1e3:.1f} ms are the "
            f"products ({useful / raw['product_s'] / 1e12:.0f} useful TFLOP/s): "
            + (f"{raw['total_s'] / gemm_s:.2f}× the time of cuBLAS's TF32 GEMM of both halves" if gemm_s else
               "no cuBLAS TF32 GEMM was measured")
            + f", and {against(raw['total_s'], mma_times.get('tf32-raw'), 'step 7')}. 3xTF32 takes "
            f"{three['total_s'] * 1e3:.1f} ms, {against(three['total_s'], syrk_s, 'cuBLAS SSYRK')} and "
            f"{against(three['total_s'], mma_times.get('3xtf32'), 'step 7')}; its three products execute "
            f"{three['executed'] / three['product_s'] / 1e12:.0f} TFLOP/s"
            + (f", where cuBLAS's TF32 GEMM executes {gemm_flops / gemm_s / 1e12:.0f}" if gemm_s and gemm_flops
               else ""))


# --- the figure of the idea: where the bits of x go, and how large each product is ------------

def significant_bits(v, lead, width=24):
    """The first `width` bits of |v|'s significand (24 for float32, 11 for TF32) placed by
    weight: entry k holds the bit of weight 2^(lead - k) (k = 0..23), -1 where v has no
    bit of that weight (v = 0 has none)."""
    out = np.full(24, -1)
    v = float(v)
    if v == 0.0:
        return out
    _, e = np.frexp(abs(v))                  # |v| = f 2^e, 1/2 <= f < 1: leading bit of weight 2^(e-1)
    bits = np.float32(abs(v)).view(np.uint32) & np.uint32(0x7FFFFF) | np.uint32(0x800000)
    for j in range(width):                   # bit j of the significand has weight 2^(e-1-j)
        k = lead - (e - 1 - j)
        if 0 <= k < 24:
            out[k] = (int(bits) >> (23 - j)) & 1
    return out


def split_rows(x):
    """Rows of the bit figure for one float32 x: (name, bits by weight, value), the weights
    counted from x's leading bit: x itself, TF32 truncated (what the tensor core reads of
    a raw float), TF32 rounded (hi) and the TF32 remainder (lo)."""
    x = np.float32(x)
    hi, lo = (float(p[0]) for p in tf32.split_tf32(np.array([x])))
    raw = float(tensor.tf32_truncate(np.array([x]))[0])
    lead = int(np.frexp(abs(float(x)))[1]) - 1
    bits = MANTISSA["tf32"] + 1
    return [(name, significant_bits(v, lead, w), v) for name, v, w in
            (("x, float32", float(x), MANTISSA["float32"] + 1), ("TF32 truncated", raw, bits),
             ("hi = tf32(x)", hi, bits), ("lo = tf32(x − hi)", lo, bits))]


def product_sizes(n=20_000, seed=6):
    """Median |term| / |a b| of the four products of the split, over random float32 pairs."""
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((2, n)).astype(np.float32)
    (ah, al), (bh, bl) = tf32.split_tf32(a), tf32.split_tf32(b)
    ab = np.abs(a.astype(np.float64) * b)
    terms = {"hi·hi": (ah, bh), "hi·lo": (ah, bl), "lo·hi": (al, bh), "lo·lo": (al, bl)}
    return {k: float(np.median(np.abs(p.astype(np.float64) * q) / ab)) for k, (p, q) in terms.items()}


def draw_split(x=np.float32(np.e), source="NumPy's bit arithmetic, as the kernel's tf32_round"):
    """Left: the significand bits of x and of its TF32 parts, by weight. Right: how large
    each of the four products of the split is, against float32's rounding."""
    rows = split_rows(x)
    sizes = product_sizes()
    fig, (ax, bx) = new_figure(1, 2, height=3.4, full=True, gridspec_kw={"width_ratios": [2.3, 1]})
    colours = {"x, float32": "0.75", "TF32 truncated": "C3", "hi = tf32(x)": "C0", "lo = tf32(x − hi)": "C1"}
    for r, (name, bits, value) in enumerate(rows):
        y = len(rows) - 1 - r
        for k, b in enumerate(bits):
            if b < 0:
                continue
            ax.add_patch(Rectangle((k, y + 0.1), 0.92, 0.8, facecolor=colours[name], edgecolor="0.3",
                                   linewidth=0.5))
            ax.text(k + 0.46, y + 0.5, str(b), ha="center", va="center", fontsize=7)
        ax.text(-0.4, y + 0.5, f"{name}\n{value:+.9g}", ha="right", va="center", fontsize=8)
    for k, text in ((0, "leading bit"), (MANTISSA["tf32"], "last TF32 bit"), (MANTISSA["float32"], "last float32 bit")):
        ax.annotate(text, xy=(k + 0.46, len(rows) + 0.05), xytext=(k + 0.46, len(rows) + 0.6), ha="center",
                    fontsize=7, arrowprops={"arrowstyle": "-", "color": "0.4"})
    ax.set_xlim(-7.5, 24.5)
    ax.set_ylim(-0.2, len(rows) + 1)
    ax.set_yticks([])
    ax.set_xticks([0, 5, 10, 15, 20, 23])
    ax.set_xlabel("bit position k below x's leading bit (the bit is worth 2^−k of it)")
    ax.set_title("The bits of x and of its TF32 parts", fontsize=10)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.set_facecolor("white")
    names = list(sizes)
    floor = -30
    _ = bx.bar(names, [np.log2(sizes[k]) - floor for k in names], bottom=floor, color=["C0", "C2", "C2", "0.6"])
    bx.annotate("dropped", xy=(3, np.log2(sizes["lo·lo"])), xytext=(0, 3), textcoords="offset points",
                ha="center", fontsize=8)
    _ = bx.axhline(-24, color="black", linestyle=":", linewidth=1, label="float32's rounding, 2^−24")
    _ = bx.legend(loc="upper right", fontsize=8)
    bx.set_ylabel("median |term| / |a·b| (log2)")
    bx.set_ylim(floor, 2)
    bx.set_title("The four products of a·b", fontsize=10)
    bx.grid(True, axis="y", alpha=0.3)
    bx.set_facecolor("white")
    fig.suptitle(f"3xTF32: x = hi + lo; keep hi·hi, hi·lo, lo·hi, drop lo·lo ({source})", fontsize=10)
    fig.tight_layout()
    return fig
