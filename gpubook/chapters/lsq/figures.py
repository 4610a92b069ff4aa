"""Chapter 8's figures of ideas: the row-by-row update of step 2, and the
panel, the trailing update and the compact form Q = I - V T Vᵀ of step 3's
blocked Householder QR (`blocked`, kernels/lsq/3_blocked.cl), and the launches
of step 6's CholeskyQR2 (`cholqr`).

`row_update_owners` and `panels` follow the kernels' index arithmetic and the
host's loop; `compact_wy` builds V and T of a small panel in NumPy by the
kernel's own formulas (house_step), and `wy_error` checks them against the
product of the reflections. `draw_*` draw them. `q1_parts` marks which
entries of R1^-1 the banded product Q1 = A R1^-1 sums over (the host's band
arithmetic), and `draw_launches` draws both from the trace of a real
factorisation.
"""
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch, Rectangle

from ...plot import new_figure, on_white
from .measure import phases

ITEM_COLOURS = ListedColormap(plt.get_cmap("tab20").colors)
PART_COLOURS = {"done": "0.82", "panel": "#f5b041", "column": "#d35400", "trailing": "#85c1e9",
                "response": "#abebc6", "zero": "white"}


def row_update_owners(n, wg):
    """Step 2 (kernels/lsq/2_row_group.cl): at column i, work-item t updates
    R[i, k] and x[k] for the k > i with k - i - 1 = t (mod WG); -1 elsewhere.
    Row i of the result is column step i: the steps run one after the other,
    a barrier between two."""
    if n < 1 or wg < 1:
        raise ValueError("n and the work-group size must be positive")
    i, k = np.indices((n, n))
    return np.where(k > i, (k - i - 1) % wg, -1)


def draw_row_update(n, wg):
    """Column steps as rows: which work-item updates each element of row i of
    R (and the incoming row's x[k]) at step i."""
    own = row_update_owners(n, wg)
    fig, (ax, side) = new_figure(1, 2, height=4.6, full=True, gridspec_kw={"width_ratios": [2.2, 1]})
    shown = np.ma.masked_less(np.where(own >= 0, own % ITEM_COLOURS.N, -1), 0)
    ax.imshow(shown, cmap=ITEM_COLOURS.with_extremes(bad="white"), vmin=0, vmax=ITEM_COLOURS.N,
              interpolation="nearest")
    for (i, k), t in np.ndenumerate(own):
        if t >= 0:
            ax.text(k, i, str(t), ha="center", va="center", fontsize=7)
        if k == i:
            ax.text(k, i, "d", ha="center", va="center", fontsize=7, color="0.4")
    ax.set_xticks(np.arange(-0.5, n, 1), minor=True)
    ax.set_yticks(np.arange(-0.5, n, 1), minor=True)
    ax.grid(which="minor", color="0.85", linewidth=0.4)
    ax.tick_params(which="minor", length=0)
    ax.set_xlabel("column k of R (and entry k of the incoming row x)")
    ax.set_ylabel("step i: column i is rotated in")
    ax.set_title(f"Step 2: one row enters R, n = {n}, WG = {wg}; the work-item\n"
                 "that updates R[i, k] and x[k] at step i (a barrier after each row)", fontsize=10)
    active = [min(wg, n - i - 1) for i in range(n)]
    side.barh(range(n), active, color="#5dade2", height=0.7)
    side.barh(range(n), [wg - a for a in active], left=active, color="0.88", height=0.7)
    side.set_ylim(n - 0.5, -0.5)
    side.set_xlim(0, wg)
    side.set_yticks([])
    side.set_xlabel("work-items: busy (blue), idle at the barrier (grey)")
    side.set_title("busy work-items per step", fontsize=10)
    fig.tight_layout()
    return on_white(fig)


def panels(n, nb):
    """(first column, width) of each panel, in BlockedQR.enqueue's order."""
    if n < 1 or nb < 1:
        raise ValueError("n and the panel width must be positive")
    return [(k0, min(nb, n - k0)) for k0 in range(0, n, nb)]


def blocked_parts(n, b, nb, k0, jj):
    """Each element of [R; B] ((n + b) x (n + 1)) by its part in panel k0's step
    jj: done, panel, column (the reflection's column j = k0 + jj: row j of R and
    u in B's column j), trailing, response, zero (below R's diagonal). B's
    columns before j hold the vectors u of their reflections."""
    pw = dict(panels(n, nb))[k0]
    if not 0 <= jj < pw:
        raise ValueError(f"the panel at column {k0} has {pw} columns, not a column {jj}")
    names = list(PART_COLOURS)
    part = np.full((n + b, n + 1), names.index("zero"))
    j = k0 + jj
    for c in range(n + 1):
        kind = ("done" if c < k0 else "panel" if c < k0 + pw else "trailing" if c < n else "response")
        part[:min(c + 1, n), c] = names.index(kind)               # R, upper triangle
        part[n:, c] = names.index(kind)
    part[j, j:k0 + pw] = names.index("column")
    part[n:, j] = names.index("column")
    return part


def draw_blocked_qr(n=12, b=10, nb=4, k0=4, jj=1, row_groups=3):
    """[R; B] during panel k0's column jj, with the launches that touch each part."""
    part = blocked_parts(n, b, nb, k0, jj)
    pw = dict(panels(n, nb))[k0]
    cmap = ListedColormap(list(PART_COLOURS.values()))
    fig, ax = new_figure(height=5.2, full=True)
    ax.imshow(part, cmap=cmap, vmin=0, vmax=len(PART_COLOURS), interpolation="nearest")
    ax.set_xticks(np.arange(-0.5, n + 1, 1), minor=True)
    ax.set_yticks(np.arange(-0.5, n + b, 1), minor=True)
    ax.grid(which="minor", color="white", linewidth=0.8)
    ax.tick_params(which="minor", length=0)
    ax.axhline(n - 0.5, color="black", linewidth=1.5)
    j = k0 + jj
    ax.set_xticks([k0 / 2 - 0.5, k0 + pw / 2 - 0.5, (k0 + pw + n) / 2 - 0.5, n],
                  ["done", f"panel\n{k0}-{k0 + pw - 1}", "trailing", "y"], fontsize=8)
    ax.set_yticks([n / 2 - 0.5, n + b / 2 - 0.5], ["R", "block\nof rows B"], fontsize=9)
    ax.tick_params(axis="y", length=0)
    edges = np.linspace(n, n + b, row_groups + 1)
    for g in range(row_groups):                 # house_step and trail_update: rows by work-group
        ax.annotate("", xy=(n + 0.8, edges[g] - 0.4), xytext=(n + 0.8, edges[g + 1] - 0.6),
                    arrowprops={"arrowstyle": "|-|", "color": "0.3", "shrinkA": 0, "shrinkB": 0},
                    annotation_clip=False)
        ax.text(n + 1.1, (edges[g] + edges[g + 1]) / 2 - 0.5, f"work-group {g}'s rows", va="center",
                fontsize=7, color="0.3")
    notes = [("done", "earlier panels: R final;\nB holds their u (reflected values are 0)"),
             ("panel", "house_step, one launch per column,\nreflects the panel's columns"),
             ("column", f"column j = {j}: R[j, j] and B's column j\n(then u) make the reflection;"
                        "\nit acts on row j of R and all of B"),
             ("trailing", "after the panel: trail_w, trail_finish,\ntrail_update apply all pw reflections\n"
                          "at once, Q = I - V T V'"),
             ("response", "the response y, a trailing column")]
    handles = [Rectangle((0, 0), 1, 1, facecolor=PART_COLOURS[k], edgecolor="0.4") for k, _ in notes]
    ax.legend(handles, [t for _, t in notes], fontsize=8, loc="upper left", bbox_to_anchor=(1.22, 1.0),
              frameon=False, labelspacing=1.0)
    ax.set_title(f"Step 3: [R; B] with n = {n}, b = {b} rows, panels of {nb}, during column {j}", fontsize=10)
    fig.tight_layout()
    return on_white(fig)


def compact_wy(r_rows, block):
    """V = [I; U] and T of one panel, by house_step's formulas: r_rows, the
    panel's pw rows of R (pw x pw, upper triangle used), block, B's panel
    columns (b x pw). Returns (V, T, the reflected [R rows; B]), in float64."""
    r = np.triu(np.array(r_rows, np.float64))
    bb = np.array(block, np.float64)
    pw = r.shape[1]
    if r.shape != (pw, pw) or bb.ndim != 2 or bb.shape[1] != pw:
        raise ValueError(f"expected a {pw} x {pw} block of R and b x {pw} rows of B")
    t_mat = np.zeros((pw, pw))
    for jj in range(pw):
        alpha, sigma = r[jj, jj], bb[:, jj] @ bb[:, jj]
        t, scale, beta = 0.0, 0.0, alpha
        if sigma > 0.0:
            beta = -np.copysign(np.sqrt(alpha * alpha + sigma), alpha)
            t, scale = (beta - alpha) / beta, 1.0 / (alpha - beta)
        u = scale * bb[:, jj]
        w = r[jj, jj + 1:] + u @ bb[:, jj + 1:]          # v' (column l) for the later columns
        r[jj, jj + 1:] -= t * w
        bb[:, jj + 1:] -= t * np.outer(u, w)
        r[jj, jj], bb[:, jj] = beta, u
        t_mat[:jj, jj] = -t * t_mat[:jj, :jj] @ (bb[:, :jj].T @ u)
        t_mat[jj, jj] = t
    v = np.vstack([np.eye(pw), bb])
    return v, t_mat, np.vstack([r, bb])


def wy_error(v, t_mat):
    """max |(I - V T V') - H_0 H_1 ... H_{pw-1}|, H_j = I - T_jj v_j v_j'."""
    rows, pw = v.shape
    q = np.eye(rows)
    for jj in range(pw):
        q = q @ (np.eye(rows) - t_mat[jj, jj] * np.outer(v[:, jj], v[:, jj]))
    return float(np.max(np.abs(np.eye(rows) - v @ t_mat @ v.T - q)))


def draw_compact_wy(v, t_mat):
    """V, T and the three products of the trailing update, drawn to shape."""
    rows, pw = v.shape
    fig, axes = new_figure(1, 3, height=4.4, full=True, gridspec_kw={"width_ratios": [0.9, 0.9, 2.2]})
    limit = max(np.abs(v).max(), np.abs(t_mat).max())
    for ax, mat, what in ((axes[0], v, f"V = [I; U], {rows} x {pw}"), (axes[1], t_mat, f"T, {pw} x {pw}")):
        shown = np.ma.masked_equal(mat, 0.0)
        ax.imshow(shown, cmap=plt.get_cmap("RdBu_r").with_extremes(bad="white"), vmin=-limit, vmax=limit,
                  interpolation="nearest")
        for (i, k), val in np.ndenumerate(mat):
            if val != 0.0:
                ax.text(k, i, f"{val:.1f}", ha="center", va="center", fontsize=7)
        ax.set_xticks(range(pw))
        ax.set_yticks([])
        ax.set_xlabel("reflection")
        ax.set_title(what, fontsize=10)
    axes[0].axhline(pw - 0.5, color="black", linewidth=1)
    axes[0].set_yticks([(pw - 1) / 2, pw + (rows - pw - 1) / 2], ["e_j\n(R rows)", "u_j\n(B rows)"], fontsize=8)
    ax = axes[2]
    ax.axis("off")
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 10)
    ax.text(0, 9.6, "Q = H_0 H_1 ... H_{pw-1} = I - V T V'", fontsize=11, va="top")
    ax.text(0, 8.7, "T is upper triangular: T_jj = tau_j and\nT[0:j, j] = -tau_j T[0:j, 0:j] (U[:, 0:j]' u_j)",
            fontsize=8.5, va="top")
    steps = [("Z = R_panel + U'B", "trail_w (row chunks), trail_finish", "#f5b041"),
             ("W = T' Z", "trail_finish", "#f8c471"),
             ("R_panel -= W", "trail_finish", "#85c1e9"),
             ("B -= U W", "trail_update", "#5dade2")]
    for s, (formula, kernel, colour) in enumerate(steps):
        y = 6.6 - 1.5 * s
        ax.add_patch(Rectangle((0, y - 0.5), 4.2, 1.0, facecolor=colour, edgecolor="0.3"))
        ax.text(2.1, y, formula, ha="center", va="center", fontsize=9)
        ax.text(4.5, y, kernel, va="center", fontsize=8)
    ax.text(0, 0.4, "For the trailing columns: pw reflections applied in three\nmatrix products "
                    "instead of pw passes over the columns.", fontsize=8.5)
    fig.suptitle(f"The compact form of a panel of {pw} reflections (a random {rows - pw} x {pw} block, "
                 "by house_step's formulas)", fontsize=10)
    fig.tight_layout()
    return on_white(fig)


def q1_parts(cols, band):
    """Which entries of R1^-1 (cols x cols, upper triangular) the product
    Q1 = A R1^-1 sums over: band b (columns j0..j1) sums rows 0..j1 of its
    columns (1 where summed, 0 where skipped), as CholeskyQR2._banded does;
    and the (j0, j1) of each band. Entries below the diagonal inside a band
    are summed zeros; the rest of the lower triangle is skipped."""
    if cols < 1 or band < 1:
        raise ValueError("cols and band must be positive")
    mask = np.zeros((cols, cols), np.int8)
    bands = []
    for j0 in range(0, cols, band):
        j1 = min(cols, j0 + band)
        mask[:j1, j0:j1] = 1
        bands.append((j0, j1))
    return mask, bands


def draw_launches(trace, cols, band, title="CholeskyQR2: every launch of one factorisation"):
    """Left: the launches of a traced factorisation in the queue's order, one
    box each, a row per stage, coloured by kernel. Right: R1^-1 as Q1 = A R1^-1's
    bands read it, the skipped triangle white."""
    names = [name for name, _ in trace]
    stages = phases(names)
    kinds = list(dict.fromkeys(names))
    colours = dict(zip(kinds, plt.get_cmap("tab20").colors))
    fig, (ax, side) = new_figure(1, 2, height=4.8, full=True, gridspec_kw={"width_ratios": [2.6, 1]})
    for row, (label, idx) in enumerate(stages):
        for i in idx:
            ax.add_patch(Rectangle((i, row - 0.38), 0.9, 0.76, color=colours[names[i]], linewidth=0))
        ax.text(idx[-1] + 1.4, row, f"{len(idx)}", va="center", fontsize=8, color="0.3")
    ax.set_xlim(-0.5, len(names) + 4)
    ax.set_ylim(len(stages) - 0.5, -0.5)
    ax.set_yticks(range(len(stages)))
    ax.set_yticklabels([label for label, _ in stages], fontsize=9)
    ax.set_xlabel("launch number, in the queue's order (count of each stage at its end)")
    ax.set_title(f"{title}\n({cols} columns: {len(names)} launches)", fontsize=10)
    ax.legend(handles=[Patch(color=colours[k], label=k) for k in kinds], fontsize=7, ncol=3, frameon=False,
              loc="upper center", bbox_to_anchor=(0.5, -0.16))
    mask, bands = q1_parts(cols, band)
    shown = np.where(mask == 1, np.where(np.triu(np.ones_like(mask)) == 1, 2, 1), 0)
    side.imshow(shown, cmap=plt.matplotlib.colors.ListedColormap(["white", "#d6eaf8", "#2e86c1"]),
                vmin=0, vmax=2, interpolation="nearest")
    for j0, j1 in bands:
        side.add_patch(Rectangle((j0 - 0.5, -0.5), j1 - j0, j1, fill=False, edgecolor="#d35400", linewidth=1.2))
    side.set_xlabel("column of R1^-1 (column of Q1)")
    side.set_ylabel("row of R1^-1 (column of A summed)")
    side.set_title(f"Q1 = A R1^-1 in {len(bands)} bands of {band} columns:\n"
                   "dark: summed, light: summed zeros, white: skipped", fontsize=10)
    fig.tight_layout()
    return on_white(fig)


CONDITIONING_STYLE = {"CholeskyQR": ("#b03a2e", "v", ":"), "CholeskyQR2": ("#d68910", "s", "--"),
                      "shifted CholeskyQR3": ("#1f618d", "o", "-"), "chosen": ("#1e8449", "x", "-"),
                      "cuSOLVER": ("0.35", "d", "-")}


def draw_conditioning(rows, title, floor=1e-13, u=2.0 ** -53):
    """||QᵀQ − I||_F against κ(A) for each method of `conditioned.family`'s rows, a
    method that broke down or refused drawn as an open marker on the top edge; the
    floor and κ² u (the one-pass loss the Gram matrix predicts) as guides; cuSOLVER's
    Householder QR of the same matrices too, where the rows have it (with_vendor)."""
    from .conditioned import METHODS
    shown = METHODS + (("cuSOLVER",) if any(r.get("cuSOLVER") is not None for r in rows) else ())
    fig, ax = new_figure(height=4.2)
    conds = np.array([r["cond"] for r in rows])
    top = 10.0
    loss = conds ** 2 * u
    ax.plot(conds, np.where(loss <= top, loss, np.nan), color="0.6", linewidth=1, label="κ² u")
    ax.axhline(floor, color="0.3", linewidth=0.8, linestyle="-.", label=f"floor {floor:.0e}")
    for i, name in enumerate(shown):
        colour, marker, line = CONDITIONING_STYLE[name]
        vals = np.array([np.nan if r.get(name) is None else max(r[name], 1e-17) for r in rows])
        shift = 1.0 + 0.06 * (i - 1.5)           # nudged apart where methods agree
        ax.plot(conds * shift, vals, color=colour, marker=marker, linestyle=line, markersize=5,
                label={"chosen": "chosen from the estimate", "cuSOLVER": "cuSOLVER (Householder)"}.get(name, name))
        broke = np.isnan(vals) & (name != "cuSOLVER")
        if broke.any():
            ax.plot(conds[broke] * shift, np.full(broke.sum(), top), linestyle="none", marker=marker,
                    markerfacecolor="none", color=colour, markersize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(1e-17, top * 3)
    ax.set_xlabel("κ(A), A = U diag(σ) Vᵀ")
    ax.set_ylabel("‖QᵀQ − I‖_F")
    ax.set_title(f"{title}\n(open markers at the top: broke down or refused)")
    ax.legend(loc="center right", frameon=False)
    fig.tight_layout()
    return on_white(fig)
