"""The steps chapter 8's main line and its "Going further" page both run: a
full-rank factorisation to add rows to (steps 1 and 2, and the exercise on
the work-group size), step 3 at each panel width, and step 5's sweep of its
widths and product tiles. One definition each, so that the two pages agree."""
from ... import tiles
from ...launch import LaunchError
from . import rows as lsq

# step 5's product tiles in double: chapter 6's float shape and two smaller ones
TILE64 = [{"TM": 128, "TN": 64, "WM": 8, "WN": 4, "K": 8, "STAGES": 2},
          {"TM": 64, "TN": 64, "WM": 8, "WN": 4, "K": 8, "STAGES": 2},
          {"TM": 64, "TN": 64, "WM": 4, "WN": 4, "K": 16, "STAGES": 2}]
# 32, then 16 work-items per product: tried only where none of the shapes runs
TILE32 = {"TM": 32, "TN": 32, "K": 8, "STAGES": 2}
SMALL = [(8, 32, {**TILE32, "WM": 4, "WN": 8}, 1),
         (8, 32, {**TILE32, "WM": 8, "WN": 8}, 1)]


def base_factor(ctx, queue, n):
    """A full-rank factorisation of n rows, and 64 more rows of the same problem
    to add to it: (factor, x rows, y rows)."""
    xs, ys = lsq.make_problem(n + 64, n, seed=12)
    f = lsq.BlockedQR(ctx, queue, n, block_rows=n).add(xs[:n], ys[:n]).factor()
    return f, xs[n:], ys[n:]


def time_panels(ctx, queue, x, y, widths):
    """Step 3 at each panel width: ({width: median_s, q20_s, q80_s, by_kernel},
    the fastest width, and its factorisation from one more run)."""
    blocked = {}
    for nb in widths:
        t, by_kernel, _ = lsq.time_blocked(ctx, queue, x, y, nb)
        blocked[nb] = {"median_s": t.median, "q20_s": t.q20, "q80_s": t.q80,
                       "by_kernel": by_kernel}
    nb_best = min(widths, key=lambda nb: blocked[nb]["median_s"])
    _, _, qr = lsq.time_blocked(ctx, queue, x, y, nb_best, repeats=1)
    return blocked, nb_best, qr


def step5_configs(full):
    """Step 5's sweep: (inner width, outer width, product tile, rows per item)."""
    if full:
        return [(16, 128, TILE64[0], 1), (16, 128, TILE64[1], 1), (16, 128, TILE64[2], 1),
                (8, 128, TILE64[0], 1), (16, 64, TILE64[0], 1), (16, 256, TILE64[0], 1),
                (32, 128, TILE64[0], 1), (8, 256, TILE64[0], 1), (16, 128, TILE64[0], 2),
                (16, 128, TILE64[1], 2), (32, 128, TILE64[0], 2)]
    return [(8, 32, TILE64[1], 1), (8, 64, TILE64[1], 1), (16, 64, TILE64[2], 1),
            (8, 64, TILE64[1], 2)]


def run_label(nb, outer, shape, rpi):
    return (f"n_b = {nb}, n_o = {outer}, {shape['TM']}x{shape['TN']}/{shape['WM']}x"
            f"{shape['WN']}/K{shape['K']}, {rpi} row{'s' if rpi > 1 else ''}/item")


def step5_sweep(ctx, queue, x, y, full, say=print):
    """Step 5 over its configurations (the small tiles only where none ran):
    (rows of the sweep, {label: seconds by kernel}, the fastest's factor)."""
    tiled, runs, qr5 = [], {}, None
    for nb, outer, shape, rpi in step5_configs(full) + SMALL:
        if tiled and (nb, outer, shape, rpi) in SMALL:
            break
        options = {"outer": outer, "shape": shape, "rows_per_item": rpi}
        try:
            t, by_kernel, qr = lsq.time_blocked(ctx, queue, x, y, nb, tiled=options)
        except (tiles.TileError, LaunchError) as err:
            say(f"skipped n_b = {nb}, n_o = {outer}, {tiles.label(shape)}: {err}")
            continue
        if not tiled or t.median < min(r["median_s"] for r in tiled):
            qr5 = qr                                   # the fastest so far keeps its factor
        tiled.append({"nb": nb, "outer": outer, "shape": shape, "rows_per_item": rpi,
                      "median_s": t.median, "q20_s": t.q20, "q80_s": t.q80,
                      "by_kernel": by_kernel})
        runs[run_label(nb, outer, shape, rpi)] = by_kernel
    return tiled, runs, qr5


def tall_runs(ctx, queue, a, mma, repeats):
    """The tall-skinny case: TSQR and CholeskyQR2 (FMA register tiles, and the FP64
    tensor cores where `mma`) on the rows of a. ({name: time_factor's or
    time_tsqr's figures}, {name: R})."""
    from . import cholqr, measure as lm
    cols = a.shape[1]
    runs, found_r = {}, {}
    runs["TSQR"], found_r["TSQR"] = lm.time_tsqr(ctx, queue, a, repeats=repeats)
    name = "CholeskyQR2, FMA register tiles"
    runs[name], found_r[name] = lm.time_factor(lm.portable(ctx, queue, cols)[0], a, repeats)
    if mma:
        name = "CholeskyQR2, FP64 tensor cores (DMMA)"
        runs[name], found_r[name] = lm.time_factor(
            cholqr.CholeskyQR2(ctx, queue, cols, mma=True), a, repeats)
    return runs, found_r
