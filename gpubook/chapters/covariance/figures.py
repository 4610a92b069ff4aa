"""Chapter 6's figures of ideas: which work-group and which work-item own each
element of S = XcᵀXc, and what a work-group loads for each slice of rows, for
the local-memory tiles (kernels/covariance/local_tiles.cl) and the register
tiles (kernels/tiles/register_tiles.cl).

`*_owners` compute the ownership from the kernels' index arithmetic;
`traced_*` run the kernels' TRACE builds (gpubook.trace) at a tiny size and read
who really wrote what; the tests check that the two agree. `draw_*` draw either.
"""
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Rectangle

from ... import trace
from ...plot import fit_tick_labels, new_figure, new_plain_figure, on_white

LV = 4                      # floats per 16-byte vector: the register tiles' LV in float
ITEM_COLOURS = ListedColormap(plt.get_cmap("tab20").colors)
GROUP_COLOURS = ListedColormap(plt.get_cmap("Pastel1").colors)


@dataclass
class Owners:
    """Per element of a square S: the work-group and the work-item (local id)
    that write it, -1 where nobody does."""
    group: np.ndarray
    local: np.ndarray


def triangle_tile(g):
    """The tile (bi, bj), bj <= bi, of work-group g in the kernels' row-by-row
    numbering of the lower triangle."""
    bi = int((np.sqrt(8 * g + 1) - 1) / 2)
    while bi * (bi + 1) // 2 > g:
        bi -= 1
    while (bi + 1) * (bi + 2) // 2 <= g:
        bi += 1
    return bi, g - bi * (bi + 1) // 2


def _empty(n):
    return Owners(np.full((n, n), -1), np.full((n, n), -1))


def local_tile_owners(tiles, t):
    """Step 3: work-group g owns tile triangle_tile(g) of T x T; work-item
    (tx, ty), local id ty*T + tx, owns its element (ty, tx)."""
    own = _empty(tiles * t)
    for g in range(tiles * (tiles + 1) // 2):
        bi, bj = triangle_tile(g)
        rows, cols = slice(bi * t, (bi + 1) * t), slice(bj * t, (bj + 1) * t)
        own.group[rows, cols] = g
        own.local[rows, cols] = np.arange(t * t).reshape(t, t)
    return own


def local_tile_loads(tiles, t, g, chunk):
    """Step 3: which work-item of work-group g loads each element of Xc (rows x
    tiles*t) in `chunk`: a[ty][tx] and b[ty][tx] both come from work-item (tx, ty)."""
    loads = np.full((t * (chunk + 1), tiles * t), -1)
    bi, bj = triangle_tile(g)
    for col0 in (bi * t, bj * t):
        loads[chunk * t:(chunk + 1) * t, col0:col0 + t] = np.arange(t * t).reshape(t, t)
    return loads


def traced_local_tiles(ctx, queue, tiles=3, t=4, chunks=2):
    """Run step 3's TRACE build on a (chunks*t) x (tiles*t) Xc; returns
    (Owners of S, the Trace) as the device recorded them."""
    n, m = tiles * t, chunks * t
    tr = trace.run(ctx, queue, "covariance/local_tiles.cl", "local_tiles",
                   (tiles * (tiles + 1) // 2 * t, t), (t, t),
                   [np.zeros(m * n, np.float32), np.zeros(n * n, np.float32), np.int32(m), np.int32(n),
                    np.int32(0)], {"T": t}, events=2 * chunks + 1)
    return _owners_from(tr.select(step=-1), n), tr


def _owners_from(tr, n):
    own = _empty(n)
    own.group.flat[tr.index] = tr.group
    own.local.flat[tr.index] = tr.local
    return own


def register_tile_owners(shape, n, triangle=True):
    """Step 4 on an n x n S (n a multiple of the tile, as chapter 6 pads it):
    the write loop of register_tiles.cl. Work-item lid, (tx, ty) = (lid % TX,
    lid / TX), owns rows i0 + p/LV*(TY*LV) + ty*LV + p%LV for p < WM and
    columns j0 + hq*(TX*LV) + tx*LV + r for hq < WN/LV, r < LV."""
    tm, tn, wm, wn = shape["TM"], shape["TN"], shape["WM"], shape["WN"]
    tx_n, ty_n = tn // wn, tm // wm
    tiles_x = n // tn
    groups = tiles_x * (tiles_x + 1) // 2 if triangle else (n // tm) * tiles_x
    own = _empty(n)
    for g in range(groups):
        bi, bj = triangle_tile(g) if triangle else divmod(g, tiles_x)
        for lid in range(tx_n * ty_n):
            tx, ty = lid % tx_n, lid // tx_n
            rows = [bi * tm + p // LV * (ty_n * LV) + ty * LV + p % LV for p in range(wm)]
            cols = [bj * tn + hq * (tx_n * LV) + tx * LV + r for hq in range(wn // LV) for r in range(LV)]
            own.group[np.ix_(rows, cols)] = g
            own.local[np.ix_(rows, cols)] = lid
    return own


def register_tile_loads(shape, width, gv=LV):
    """Step 4's fetch: which work-item loads each element of one K x width panel
    (width = TM for A, TN for B) from global memory, GV floats at a time."""
    nt = (shape["TM"] // shape["WM"]) * (shape["TN"] // shape["WN"])
    count = shape["K"] * width // gv
    loads = np.full((shape["K"], width), -1)
    for e in range(count):                  # e = lid + l * NT
        k, i = divmod(e, width // gv)
        loads[k, i * gv:(i + 1) * gv] = e % nt
    return loads


def traced_register_tiles(ctx, queue, shape, tiles=2):
    """Run step 4's TRACE build (float, triangle, aligned as chapter 6 runs it)
    on an n x n S with n = tiles*TM; returns (Owners of S, the Trace)."""
    tm, k = shape["TM"], shape["K"]
    n, rows = tiles * tm, 2 * k
    nt = (tm // shape["WM"]) * (shape["TN"] // shape["WN"])
    defines = {"TYPE": "float", "FP64": 0, "LV": LV, "GV": LV, "TRIANGLE": 1, "CHECK": 0,
               "STAGES": shape.get("STAGES", 1), "PREFETCH": shape.get("PREFETCH", 1),
               **{key: shape[key] for key in ("TM", "TN", "WM", "WN", "K")}}
    i32 = np.int32
    x = np.zeros(rows * n, np.float32)
    groups = tiles * (tiles + 1) // 2
    tr = trace.run(ctx, queue, "tiles/register_tiles.cl", "register_tiles", (groups * nt, 1), (nt, 1),
                   [x, i32(0), i32(n), x, i32(0), i32(n), np.zeros(n * n, np.float32), i32(0), i32(n),
                    i32(n), i32(n), i32(0), i32(rows), i32(rows), i32(0), i32(tiles), np.float32(1), i32(0)],
                   defines, events=shape["WM"] * shape["WN"])
    return _owners_from(tr, n), tr


# drawing -----------------------------------------------------------------------

def _cells(ax, values, cmap, labels=None, fontsize=7):
    """A grid of cells coloured by an integer category (-1: white), optionally
    labelled; a listed colour map's colours repeat past its length."""
    values = np.asarray(values)
    if isinstance(cmap, ListedColormap):
        top = cmap.N
        values = np.where(values >= 0, values % top, -1)
    else:
        top = max(int(values.max()) + 1, 1)
    ax.imshow(np.ma.masked_less(values, 0), cmap=cmap.with_extremes(bad="white"), vmin=0, vmax=top,
              interpolation="nearest")
    rows, cols = values.shape
    if max(rows, cols) <= 40:                      # cell borders where they stay visible
        ax.set_xticks(np.arange(-0.5, cols, 1), minor=True)
        ax.set_yticks(np.arange(-0.5, rows, 1), minor=True)
        ax.grid(which="minor", color="0.85", linewidth=0.4)
        ax.tick_params(which="minor", length=0)
    if labels is not None:
        for (r, c), text in np.ndenumerate(labels):
            if text != "":
                ax.text(c, r, text, ha="center", va="center", fontsize=fontsize)


def _frame(ax, r0, c0, h, w, **kw):
    style = {"fill": False, "edgecolor": "black", "linewidth": 1.2, **kw}
    ax.add_patch(Rectangle((c0 - 0.5, r0 - 0.5), w, h, **style))


def _tile_frames(ax, own, tm, tn):
    for g in np.unique(own.group[own.group >= 0]):
        r, c = np.argwhere(own.group == g).min(axis=0)
        _frame(ax, r, c, tm, tn)
        ax.text(c + tn / 2 - 0.5, r + tm / 2 - 0.5, f"group {g}", ha="center", va="center", fontsize=8,
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1})


def _item_cmap(n):
    return ITEM_COLOURS if n <= 20 else plt.get_cmap("turbo")


def draw_local_tiles(own, t, g=None, chunk=0, source="index arithmetic"):
    """Step 3 in three panels: S by work-group, one work-group's tile by work-item,
    and the two panels of Xc that work-group loads in one chunk of rows."""
    n = own.group.shape[0]
    tiles = n // t
    g = tiles * (tiles + 1) // 2 - 2 if g is None else g      # a tile below the diagonal
    bi, bj = triangle_tile(g)
    fig, axes = new_figure(1, 3, height=4.2, full=True, gridspec_kw={"width_ratios": [1, 0.75, 1.1]})
    ax = axes[0]
    _cells(ax, own.group, GROUP_COLOURS)
    _tile_frames(ax, own, t, t)
    ax.text(n - 0.5 - n / 4, n / 4, "above the diagonal:\nno work-group", ha="center", va="center", fontsize=8,
            color="0.4")
    ax.set_title(f"S ({n} x {n}): one work-group\nper {t} x {t} tile, lower triangle", fontsize=10)
    ax.set_xlabel("column j of S")
    ax.set_ylabel("row i of S")

    ax = axes[1]
    tile = own.local[bi * t:(bi + 1) * t, bj * t:(bj + 1) * t]
    _cells(ax, tile, _item_cmap(t * t), labels=np.vectorize(str)(tile), fontsize=8)
    ax.set_xticks(range(t), [str(bj * t + j) for j in range(t)], fontsize=7)
    ax.set_yticks(range(t), [str(bi * t + i) for i in range(t)], fontsize=7)
    ax.set_title(f"tile ({bi}, {bj}) of group {g}: work-item\n(local id ty·{t} + tx) per element", fontsize=10)
    ax.set_xlabel("column j of S (tx)")
    ax.set_ylabel("row i of S (ty)")

    ax = axes[2]
    chunks = max(chunk + 2, 2)
    loads = np.full((chunks * t, n), -1)
    loads[:(chunk + 1) * t] = local_tile_loads(tiles, t, g, chunk)
    _cells(ax, loads, _item_cmap(t * t), labels=np.where(loads >= 0, loads.astype(str), ""), fontsize=7)
    for col0, name in ((bi * t, "a"), (bj * t, "b")):
        _frame(ax, chunk * t, col0, t, t)
        _frame(ax, (chunk + 1) * t, col0, t, t, linestyle="--", linewidth=0.8)
        ax.text(col0 + t / 2 - 0.5, chunk * t + t / 2 - 0.5, name, ha="center", va="center", fontsize=22,
                alpha=0.35, fontweight="bold")
    ax.text(n / 2 - 0.5, (chunk + 1.5) * t - 0.5, "next chunk: the same\ncolumns, the next rows",
            ha="center", va="center", fontsize=8, color="0.3")
    ax.set_yticks(range(0, chunks * t, t))
    ax.set_title(f"Xc, chunk {chunk} (rows {chunk * t}-{chunk * t + t - 1}): group {g} copies two\n"
                 f"{t} x {t} panels to local memory, one float per work-item", fontsize=10)
    ax.set_xlabel("column (feature) of Xc")
    ax.set_ylabel("row (observation) of Xc")
    _frame(axes[0], bi * t, bj * t, t, t, linewidth=3)
    fig.suptitle(f"Step 3, local tiles with T = {t} ({source})", fontsize=11)
    fig.tight_layout()
    return on_white(fig)


def draw_register_tiles(own, shape, source="index arithmetic"):
    """Step 4 in three panels: S by work-group, one work-group's tile by
    work-item with the values of one row k each work-item reads, and who loads
    each float4 of A's panel for one chunk of K rows."""
    tm, tn, wm, wn, k = shape["TM"], shape["TN"], shape["WM"], shape["WN"], shape["K"]
    tx_n, ty_n = tn // wn, tm // wm
    nt = tx_n * ty_n
    n = own.group.shape[0]
    fig = new_plain_figure(height=5.2, full=True)
    grid = fig.add_gridspec(2, 3, width_ratios=[1, 1.15, 1.1], height_ratios=[1, 0.28])
    ax = fig.add_subplot(grid[:, 0])
    _cells(ax, own.group, GROUP_COLOURS)
    _tile_frames(ax, own, tm, tn)
    ax.set_title(f"S ({n} x {n}): one work-group\nper {tm} x {tn} tile", fontsize=10)
    ax.set_xlabel("column j of S")
    ax.set_ylabel("row i of S")

    ax = fig.add_subplot(grid[:, 1])
    tile = np.full((tm + 2, tn + 2), -1)
    tile[2:, 2:] = own.local[:tm, :tn]
    reader_a = (np.arange(tm) // LV) % ty_n         # la[.. + h*TY + ty]: ty reads columns LV*(h*TY + ty)..
    reader_b = (np.arange(tn) // LV) % tx_n
    _cells(ax, tile, _item_cmap(nt))
    for p in range(0, tm, LV):
        for q in range(0, tn, LV):
            ax.text(2 + q + LV / 2 - 0.5, 2 + p + LV / 2 - 0.5, str(own.local[p, q]), ha="center", va="center",
                    fontsize=7)
    strip = np.full(tile.shape, -1)
    strip[2:, 0] = reader_a
    strip[0, 2:] = reader_b
    strip_cmap = ListedColormap(plt.get_cmap("Set2").colors).with_extremes(bad=(0, 0, 0, 0))
    strip = np.where(strip >= 0, strip % strip_cmap.N, -1)
    ax.imshow(np.ma.masked_less(strip, 0), cmap=strip_cmap, vmin=0, vmax=strip_cmap.N,
              interpolation="nearest")
    for i in range(0, tm, LV):
        ax.text(0, 2 + i + LV / 2 - 0.5, str(reader_a[i]), ha="center", va="center", fontsize=7)
    for j in range(0, tn, LV):
        ax.text(2 + j + LV / 2 - 0.5, 0, str(reader_b[j]), ha="center", va="center", fontsize=7)
    _frame(ax, 2, 2, tm, tn)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel(f"left: A's row k, {tm} values; top: B's row k, {tn} values")
    ax.set_title(f"group 0's tile: work-item (of {nt}) per element;\n"
                 f"row k's values: A read by ty, B by tx, {LV} at a time", fontsize=10)

    ax = fig.add_subplot(grid[0, 2])
    loads = register_tile_loads(shape, tm)
    lab = np.full(loads.shape, "", dtype=object)
    lab[:, LV // 2::LV] = loads[:, ::LV].astype(str)
    _cells(ax, loads, _item_cmap(nt), labels=lab, fontsize=7)
    for i in range(0, tm, LV):
        for kk in range(k):
            _frame(ax, kk, i, 1, LV, linewidth=0.6)
    ax.set_aspect("auto")
    ax.set_yticks(range(k))
    ax.set_title(f"one chunk of K = {k} rows of A's panel ({tm} columns):\n"
                 f"work-item that loads each float4 from global memory", fontsize=10)
    ax.set_xlabel("column of A's panel")
    ax.set_ylabel("row k")
    ax = fig.add_subplot(grid[1, 2])
    ax.axis("off")
    ax.text(0, 0.9, f"Per row k, work-item (tx, ty) multiplies its {wm} values of A\n"
                    f"by its {wn} of B: {wm * wn} multiply-adds for {wm + wn} local reads.\n"
                    f"{nt} work-items, {wm} x {wn} each, in {LV} x {LV} blocks spread\n"
                    f"{LV * ty_n} rows and {LV * tx_n} columns apart.", va="top", fontsize=8.5)
    fig.suptitle(f"Step 4, register tiles {tm} x {tn}, {wm} x {wn} per work-item ({source})", fontsize=11)
    fig.tight_layout()
    return on_white(fig)


def step_rates(labels, rates, recorded, limit, title, device_name):
    """Chapter 6.1's bars: useful GFLOP/s of each step and baseline (`labels`) on this
    device (`rates`), beside each other recorded device's ({device: {label: GFLOP/s}};
    a label it lacks is left out), on a log axis under the FP32 `limit`. The labels
    wrap (or turn) where they would overlap (gpubook.plot.fit_tick_labels)."""
    fig, ax = new_figure(height=4)
    width = 0.8 / (1 + len(recorded))
    x = np.arange(len(labels))
    _ = ax.bar(x, rates, width, label=device_name)
    for k, (name, rec) in enumerate(recorded.items(), start=1):
        _ = ax.bar(x + k * width, [rec.get(lb, np.nan) for lb in labels], width,
                   label=f"{name} (recorded)", alpha=0.6)
    ax.axhline(limit, color="black", linestyle=":", linewidth=1)
    ax.annotate(f"chapter 0 FP32 limit, {limit:,.0f} GFLOP/s", xy=(0.01, limit),
                xycoords=("axes fraction", "data"), xytext=(0, 3), textcoords="offset points", fontsize=8)
    ax.set_yscale("log")
    ax.set_xticks(x + width * len(recorded) / 2, labels)
    ax.set_ylabel("useful GFLOP/s (m·n·(n+1) per covariance)")
    ax.set_title(f"{title}\n{device_name}", fontsize=11)
    fit_tick_labels(ax)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12 - 0.05 * _lines(ax)), frameon=False)
    return fig


def _lines(ax):
    """The extra lines of the tallest x tick label of ax (0 for one line)."""
    return max((t.get_text().count("\n") for t in ax.get_xticklabels()), default=0)
