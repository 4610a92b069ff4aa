"""The centred product XᵀX that chapters 6 and 10 share: the problem (observations
with a planted covariance), its float64 NumPy reference and check, the padding,
the register-tile shapes that run it, and the launches of the kernels in
kernels/covariance/ (column sums, centring, the register-tile product, the finish
that scales, mirrors and strips the padding). Chapter 6 builds it step by step;
chapter 10 spreads it over devices.
"""
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from . import launch, loopcap, tiles
from .kernels import kernel


COL_PAD = 128   # the padded width is a multiple of every tile width the steps use


ROW_PAD = 64    # the padded height is a multiple of every chunk of rows


SUM_ROWS = 256  # R: partial sums per column in the first pass of the mean


def round_up(x, multiple):
    return -(-x // multiple) * multiple


def sizes(scale):
    """(m observations, n features) for the scale; small is not a multiple of any tile."""
    return (131_072, 4_096) if scale == "full" else (3_000, 200)


def flops(m, n):
    """(useful, GEMM-equivalent) flops of one covariance: the symmetric half, m·n·(n+1),
    and what a full XᵀX costs, 2·m·n²."""
    return m * n * (n + 1), 2 * m * n * n


@dataclass
class Data:
    """Observations with a planted covariance: a large mean, a few strong
    principal directions (orthonormal rows of `directions`, variances
    `variances`) and unit noise."""
    x: np.ndarray
    mean: np.ndarray
    directions: np.ndarray
    variances: np.ndarray


def make_data(m, n, k=3, offset=1000.0, seed=6):
    if m < 2 or n < 1:
        raise ValueError(f"need at least 2 observations and 1 feature, not m={m}, n={n}")
    rng = np.random.default_rng(seed)
    directions = np.linalg.qr(rng.standard_normal((n, k)))[0].T.astype(np.float32)
    variances = np.array([400.0, 100.0, 25.0][:k] + [9.0] * max(0, k - 3), np.float32)
    mean = (offset + 10.0 * rng.standard_normal(n)).astype(np.float32)
    x = rng.standard_normal((m, n), dtype=np.float32)
    x += (rng.standard_normal((m, k), dtype=np.float32) * np.sqrt(variances)) @ directions
    x += mean
    return Data(x, mean, directions, variances)


def reference(x):
    """C = (1/m) Σ (v - μ)(v - μ)ᵀ in float64."""
    xd = x.astype(np.float64)
    xd -= xd.mean(axis=0)
    return (xd.T @ xd) / x.shape[0]


def error(c, ref):
    """Largest deviation from the reference, relative to its largest entry."""
    return float(np.max(np.abs(c - ref)) / np.max(np.abs(ref)))


def check(c, ref, tol):
    err = error(c, ref)
    if not err <= tol:
        raise AssertionError(loopcap.with_note(f"covariance differs from float64 by {err:.2e} of its "
                                               f"largest entry (tolerance {tol:.0e})"))
    return err


# Step 4's sweep: what each row changes against the one before it is the
# chapter's story (a bigger tile, more work per work-item, longer chunks, two
# local buffers, loads issued when needed instead of a chunk ahead). The first,
# 32 work-items, is for devices whose built kernel allows few (Mesa's llvmpipe: 32).
SWEEP = [(32, 4, 8, 16, 1, 1), (64, 4, 4, 16, 1, 1), (64, 8, 8, 16, 1, 1), (128, 8, 8, 16, 1, 1),
         (128, 8, 8, 8, 1, 1), (128, 8, 8, 32, 1, 1), (128, 8, 16, 16, 1, 1), (128, 16, 8, 16, 1, 1),
         (128, 8, 16, 8, 1, 1), (128, 8, 8, 16, 2, 1), (128, 8, 16, 16, 2, 1), (128, 8, 8, 16, 1, 0),
         (128, 8, 8, 16, 2, 0), (128, 8, 8, 32, 2, 0)]


def shape(tb, wm, wn, k, stages=1, prefetch=1):
    """A square TB x TB tile of S (kernels/tiles/register_tiles.cl's keys)."""
    return {"TM": tb, "TN": tb, "WM": wm, "WN": wn, "K": k, "STAGES": stages, "PREFETCH": prefetch}


DEFAULT_TILE = shape(64, 4, 4, 16)  # step 4's shape until a sweep picks one, where it runs


# Tiles of 16, 8 and 4 work-items, for devices that allow fewer work-items per
# work-group than every shape of the sweep needs (PoCL with
# POCL_MAX_WORK_GROUP_SIZE=16): tried only where none of the candidates fits.
SMALL_TILES = [(32, 8, 8, 16, 1, 1), (16, 4, 4, 16, 1, 1), (16, 4, 8, 16, 1, 1), (16, 8, 8, 16, 1, 1)]


def tile_shapes(device, candidates=SWEEP):
    """(the register-tile shapes this device can run for S, [(shape, reason)] for the
    others). Where none of the candidates fits, the first of SMALL_TILES that does."""
    shapes = [shape(*c) for c in candidates]
    padded = [s for s in shapes if not (COL_PAD % s["TM"] or ROW_PAD % s["K"])]
    ok, skipped = tiles.feasible(device, padded, np.float32)
    pad = f"the tile must divide the padding ({COL_PAD} columns, {ROW_PAD} rows)"
    skipped = [(s, pad) for s in shapes if s not in padded] + skipped
    if not ok:
        small, _ = tiles.feasible(device, [shape(*c) for c in SMALL_TILES if shape(*c) not in shapes],
                                  np.float32)
        ok = small[:1]
    return ok, skipped


def runnable_tile(ctx, device, preferred=()):
    """The first of the preferred shapes, then DEFAULT_TILE, then the sweep's, whose
    kernel builds here with the work-items it needs (TileError naming every reason if none)."""
    first = [(s["TM"], s["WM"], s["WN"], s["K"], s.get("STAGES", 1), s.get("PREFETCH", 1))
             for s in [*preferred, DEFAULT_TILE]]
    ok, skipped = tile_shapes(device, list(dict.fromkeys(first + SWEEP)))
    for s in ok:
        try:
            tiles.launch_kernel(ctx, device, s, np.float32, triangle=True, aligned=True)  # as launch_tiles
            return s
        except tiles.TileError as err:
            skipped.append((s, str(err).split(": ", 1)[-1]))
    raise tiles.TileError(f"{device.name.strip()} can run none of chapter 6's register-tile shapes:\n" +
                          "\n".join(f"  {tiles.label(s)}: {why}" for s, why in skipped))


def launch_col_sums(queue, x, shift, partial, m, n, accumulate=False, rows=SUM_ROWS, wait_for=None):
    """Column sums of the m x n array x minus shift, `rows` partial sums per column."""
    k = kernel(queue.context, "covariance/col_sums.cl", "col_sums")
    return launch.enqueue(queue, k, (n, rows), (64, 1), x, shift, partial, np.int32(m), np.int32(n),
                          np.int32(accumulate), wait_for=wait_for)


def launch_centre(queue, x, shift, xc, scale, m, n, mp, np_, wait_for=None):
    """xc (mp x np_) = x (m x n) - scale * shift, zero-padded."""
    k = kernel(queue.context, "covariance/centre.cl", "centre")
    # mp and np_ are multiples of every local size tried (ROW_PAD, COL_PAD): no work-item past them
    return launch.enqueue(queue, k, (np_, mp), (64, 4), x, shift, xc, np.float32(scale), np.int32(m),
                          np.int32(n), np.int32(np_), wait_for=wait_for)


def tile_loops(tile, lv=4):
    """(loop iterations per row, fixed ones) of a work-item of the float register tiles
    (kernels/tiles/register_tiles.cl), for gpubook.loopcap. Counted in the source as if
    no loop were unrolled: per chunk of K rows its own iteration, two fetches and two
    stores of LA and LB loads, and for each row the loops over its WM and WN values and
    the WM x WN products (either way of the diagonal skip); fixed, the loads before the
    first chunk, the accumulators' zeroing and stores, and the steps that find the tile.
    Then doubled: as compiled for Mesa's llvmpipe (LLVM 15, 2026-11-28), a work-item of
    the 4 x 8 and 8 x 8 blocks looped up to 1.25 times that count per row."""
    wm, wn, k = tile["WM"], tile["WN"], tile["K"]
    nt = tiles.work_items(tile)
    la, lb = -(-k * tile["TM"] // lv // nt), -(-k * tile["TN"] // lv // nt)
    per_row = 1 + wm // lv + wn // lv + wm + wm // lv * (wn // lv) + wm * wn // lv + wm * wn
    return 2 * (per_row + (1 + 2 * (la + lb)) / k), 2 * (la + lb + 3 * wm * wn + 3 * wm + 8)


def launch_tiles(queue, a, b, s, m, lda, ldb, ldc, tile, pair=None, accumulate=False, wait_for=None,
                 extra=None):
    """S (+)= AᵀB with register tiles (gpubook.tiles, float): over the lower
    triangle of a square S (pair=None, A = B), or over the full rows x cols grid
    of S for two panels (pair=(rows, cols)). Everything is padded: no bounds.
    extra: more build options ({"DIAG_SKIP": 0}: the kernel before the diagonal skip).
    One launch over the m rows; on a device that stops loops early (gpubook.loopcap)
    launches of fewer rows, each adding to S: then the list of their events."""
    rows, cols = (lda, lda) if pair is None else pair
    split = loopcap.launches(queue.device, m, *tile_loops(tile), step=tile["K"],
                             what=f"register tiles ({tiles.label(tile)})", unit="rows")
    return loopcap.one_or_all([
        tiles.launch(queue, tile, np.float32, a, 0, lda, b, 0, ldb, s, 0, ldc, rows, cols, k0, k0 + k,
                     accumulate=accumulate or k0 > 0, triangle=pair is None, aligned=True,
                     wait_for=wait_for, extra=extra) for k0, k in split])


def launch_finish(queue, s, lds, c, rows, cols, d1, d2, inv_m, mirror=True, wait_for=None):
    """c (rows x cols) = S * inv_m - d1 d2ᵀ, from S's lower triangle when mirror."""
    k = kernel(queue.context, "covariance/finish.cl", "finish", {"MIRROR": int(mirror)})
    return launch.enqueue(queue, k, (cols, rows), (16, 16), s, np.int32(lds), c,
                          np.int32(rows), np.int32(cols), d1, d2, np.float32(inv_m), wait_for=wait_for)


def product_of(ctx, queue, x, enqueue):
    """XᵀX of a host matrix through a product's `enqueue(x_buf, m, n, c_buf)` (its events):
    x checked (2-D, not empty, finite), C zeroed first, so what the product leaves
    unwritten above the diagonal reads 0; float32, n x n."""
    x = np.ascontiguousarray(x, np.float32)
    if x.ndim != 2 or x.size == 0:
        raise ValueError(f"expected a non-empty m x n matrix, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("X contains NaN or infinite values")
    m, n = x.shape
    mf = cl.mem_flags
    xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    cb = cl.Buffer(ctx, mf.READ_WRITE, 4 * n * n)
    cl.enqueue_fill_buffer(queue, cb, np.float32(0), 0, 4 * n * n)
    events = enqueue(xb, m, n, cb)
    cl.wait_for_events(events if isinstance(events, list) else [events])
    out = np.empty((n, n), np.float32)
    cl.enqueue_copy(queue, out, cb)
    return out
