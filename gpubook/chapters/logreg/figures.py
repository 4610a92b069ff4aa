"""Figures of the ideas of chapters 1-4 (logistic regression in one work-group),
drawn from the same index arithmetic as the kernels in kernels/logreg/.

Each `*_order`/`*_owner` function repeats a kernel's loops or indices in
Python (the comment names the kernel line); each `*_figure` function draws
them and returns the matplotlib Figure. Small sizes: these are diagrams.
"""
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from ...plot import new_figure, new_plain_figure

# one colour per work-item (or lane); text on them stays black
ITEM_COLOURS = ("#8dd3c7", "#fdb462", "#bebada", "#fb8072", "#80b1d3", "#b3de69", "#fccde5", "#d9d9d9")


def item_colour(i):
    return ITEM_COLOURS[int(i) % len(ITEM_COLOURS)]


def cell(ax, x, y, colour, text=None, w=1.0, h=1.0, fontsize=9, edge="white", lw=1.0, **text_kw):
    """One square of a grid, with its label centred."""
    ax.add_patch(Rectangle((x, y), w, h, facecolor=colour, edgecolor=edge, linewidth=lw))
    if text is not None:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fontsize, **text_kw)


def grid_axes(ax, cols, rows, xlabel, ylabel, title):
    """Axes of a grid drawn top row first: cells (x, y) with y = 0 at the top."""
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.set_aspect("equal")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=11)
    ax.set_facecolor("white")
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)


# ---- chapter 1: the order in which one work-item walks X ----------------------

def loop2_order(step, J, K):
    """The (row j, feature k) of X that loop 2 of kernels/logreg/<step>.cl reads,
    in order. X is row-major: the element's address is j * K + k floats."""
    if step == "naive":          # for k: for j: g += X[j * K + k] * scores[j]
        return [(j, k) for k in range(K) for j in range(J)]
    if step == "reordered":      # for j: for k: gradient[k] += X[j * K + k] * scores[j]
        return [(j, k) for j in range(J) for k in range(K)]
    raise ValueError(f"unknown step {step!r}; use 'naive' or 'reordered'")


def walk_figure(J=6, K=8, line_bytes=64):
    """Chapter 1: loop 2 of the naive and the reordered kernel, as the visit
    number of every element of a small row-major X, and as the address read
    against the visit number, with the cache lines of `line_bytes` bytes."""
    if J < 1 or K < 1 or J * K > 128:
        raise ValueError(f"a J x K = {J} x {K} grid is too large to draw (at most 128 cells)")
    fig = new_plain_figure(height=7.0, full=True)
    fig.patch.set_facecolor("white")
    spec = fig.add_gridspec(2, 2, height_ratios=[1, 1.1], hspace=0.45, wspace=0.15)
    cmap = plt.get_cmap("viridis")
    titles = {"naive": "naive (step 1a): down the columns", "reordered": "reordered (step 1b): along the rows"}
    orders = {}
    for col, step in enumerate(("naive", "reordered")):
        ax = fig.add_subplot(spec[0, col])
        order = loop2_order(step, J, K)
        orders[step] = [j * K + k for j, k in order]
        visit = {jk: n for n, jk in enumerate(order)}
        for (j, k), n in visit.items():
            colour = cmap(0.15 + 0.8 * n / max(1, J * K - 1))
            cell(ax, k, j, colour, str(n), fontsize=8, color="white" if n < 0.6 * J * K else "black")
        grid_axes(ax, K, J, "feature k (X is row-major: k varies fastest in memory)", "example j",
                  titles[step])
        ax.set_xticks(np.arange(K) + 0.5, [str(k) for k in range(K)])
        ax.set_yticks(np.arange(J) + 0.5, [str(j) for j in range(J)])
    ax = fig.add_subplot(spec[1, :])
    per_line = line_bytes // 4
    for start in range(0, J * K, per_line):
        if (start // per_line) % 2:
            _ = ax.axhspan(start - 0.5, start + per_line - 0.5, color="#eeeeee", linewidth=0)
    for step, marker in (("naive", "o"), ("reordered", "s")):
        _ = ax.plot(range(J * K), orders[step], marker=marker, markersize=3.5, linewidth=1,
                    label=f"{step}: enters a new cache line "
                          f"{1 + int(np.count_nonzero(np.diff(np.array(orders[step]) // per_line)))} times")
    ax.set_xlabel("visit number in loop 2 (one read of X after another)")
    ax.set_ylabel("address read (floats from X[0])")
    ax.set_title(f"Addresses against time; grey and white bands: {line_bytes}-byte cache lines "
                 f"({per_line} floats)", fontsize=11)
    ax.set_facecolor("white")
    ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    fig.suptitle(f"Loop 2 of one work-item over a {J} x {K} row-major X: the number in a cell is "
                 "when it is read", fontsize=12)
    return fig


# ---- chapter 2: rows split over work-items, partial sums in local memory --------

def row_owner(J, N, layout="slices"):
    """The work-item that handles each example (row of X).
    slices: work_items.cl, tree.cl, float4.cl (first = id * (J / N), J / N rows);
    strided: fast.cl (work-item id owns id, id + N, id + 2N, ...)."""
    if N < 1 or J % N:
        raise ValueError(f"N = {N} work-items must divide J = {J} examples")
    j = np.arange(J)
    if layout == "slices":
        return j // (J // N)
    if layout == "strided":
        return j % N
    raise ValueError(f"unknown layout {layout!r}; use 'slices' or 'strided'")


def partial_writer(N, K):
    """The work-item that writes each slot of the local array partial[N * K]
    (work_items.cl: partial[id * K + k] = gradient[k]), and the k it holds."""
    slot = np.arange(N * K)
    return slot // K, slot % K


def split_figure(J=16, K=8, N=4):
    """Chapter 2: which work-item reads which rows of X, and which slots of the
    local array `partial` it writes before the barrier."""
    if J * K > 256 or N > len(ITEM_COLOURS) or N > J:
        raise ValueError(f"J x K = {J} x {K} with N = {N} is too large to draw "
                         f"(at most 256 cells and {len(ITEM_COLOURS)} work-items)")
    owner = row_owner(J, N)
    writer, feature = partial_writer(N, K)
    fig, ax = new_figure(height=0.36 * J + 1.6, full=True)
    gap = 5                                   # columns between the two arrays
    top = (J - N) / 2                         # partial drawn level with the middle of X
    for j in range(J):
        for k in range(K):
            cell(ax, k, j, item_colour(owner[j]), str(j * K + k), fontsize=7, color="#333333")
        ax.text(-0.3, j + 0.5, str(j), ha="right", va="center", fontsize=8)
    for s in range(N * K):
        cell(ax, K + gap + feature[s], top + writer[s], item_colour(writer[s]), str(s), fontsize=8)
    for i in range(N):
        rows = np.flatnonzero(owner == i)
        _ = ax.annotate("", xy=(K + gap - 0.1, top + i + 0.5), xytext=(K + 0.1, rows.mean() + 0.5),
                        arrowprops={"arrowstyle": "->", "color": "#555555", "linewidth": 1.2})
        ax.text(2 * K + gap + 0.2, top + i + 0.5, f"work-item {i}", va="center", fontsize=9)
    ax.text(K / 2, -0.6, f"X in global memory ({J} x {K}, row-major):\n"
            f"work-item i reads rows i*J/N ... (i+1)*J/N - 1", ha="center", va="bottom", fontsize=10)
    ax.text(K + gap + K / 2, top - 0.6, f"partial[N * K] in local memory:\nwork-item i writes "
            "partial[i*K + k], k < K", ha="center", va="bottom", fontsize=10)
    ax.text(K + gap + K / 2, top + N + 0.5, "after the barrier, work-item 0 alone\nreads all "
            f"{N * K} slots and adds them up\n(the serial sum)", ha="center", va="top", fontsize=10)
    ax.text(K / 2, J + 0.4, "number in a cell: its address (floats)", ha="center", va="top", fontsize=9)
    grid_axes(ax, 2 * K + gap + 4, J + 1.5, "", "", f"J = {J} examples, K = {K} features, "
              f"N = {N} work-items (one colour each)")
    ax.set_ylim(J + 1.5, -2.2)
    ax.set_xlim(-1.2, 2 * K + gap + 4)
    ax.set_xticks([])
    ax.set_yticks([])
    return fig


# ---- chapter 4: float4 lanes ----------------------------------------------------

def loads_of(J, K, N, width):
    """For every element of X (J x K, row-major), the work-item that loads it in
    the score loop and that work-item's load number, for scalar loads (width 1,
    tree.cl: X[j * K + k]) or float4 loads (width 4, float4.cl: X[j * K4 + k])."""
    if width not in (1, 4) or K % width:
        raise ValueError(f"width must be 1 or 4 and divide K = {K}")
    owner = row_owner(J, N)
    item = np.repeat(owner[:, None], K, axis=1)
    load = np.zeros((J, K), int)
    for j in range(J):
        first = (j // (J // N)) * (J // N)   # for j = first .. first + J/N - 1
        for k in range(K // width):          # for k < K / width: one load of `width` floats
            load[j, k * width:(k + 1) * width] = (j - first) * (K // width) + k
    return item, load


def float4_figure(J=8, K=8, N=2):
    """Chapter 4: the loads one work-item issues for its rows of X, one float at
    a time (step 3) against one float4 at a time (step 4)."""
    if J * K > 128 or N > len(ITEM_COLOURS):
        raise ValueError(f"J x K = {J} x {K} is too large to draw (at most 128 cells)")
    fig, axes = new_figure(1, 2, height=4.6, full=True)
    for ax, width, name in zip(axes, (1, 4), ("float: step 3 (tree.cl), 4 bytes per load", "float4: step 4 (float4.cl), 16 bytes per load")):
        item, load = loads_of(J, K, N, width)
        for j in range(J):
            for k in range(0, K, width):
                for lane in range(1, width):
                    _ = ax.plot([k + lane, k + lane], [j, j + 1], color="white", linewidth=0.8)
                cell(ax, k, j, item_colour(item[j, k]), str(load[j, k]) if width == 1 else
                     f"load {load[j, k]}", w=width, fontsize=9 if width == 1 else 10, edge="black",
                     lw=1.2, bbox={"facecolor": item_colour(item[j, k]), "edgecolor": "none", "pad": 1})
        grid_axes(ax, K, J, "feature k (4 bytes each)", "example j",
                  f"{name}:\n{int(load.max()) + 1} loads per work-item for its {J // N} rows (score loop)")
        ax.set_xticks(np.arange(K) + 0.5, [str(k) for k in range(K)])
        ax.set_yticks(np.arange(J) + 0.5, [f"{j} (wi {item[j, 0]})" for j in range(J)])
    fig.suptitle(f"Who loads what: X is {J} x {K}, {N} work-items (colours); a framed box is one "
                 "load instruction,\nthe number is the work-item's load count; load 0 of every "
                 "work-item is one instruction of the group", fontsize=11)
    fig.tight_layout()
    return fig


def plot_data(X, labels, w, ax):
    """The two classes seen in a 2-D slice through feature space: the learned
    direction w (across the decision boundary w·x = 0) against the direction of
    largest spread orthogonal to it."""
    u = np.asarray(w, np.float64) / np.linalg.norm(w)
    Xd = np.asarray(X, np.float64)
    rest = Xd - np.outer(Xd @ u, u)
    v = np.linalg.svd(rest - rest.mean(axis=0), full_matrices=False)[2][0]
    for cls, color in ((0, "tab:red"), (1, "tab:blue")):
        sel = labels == cls
        ax.scatter(Xd[sel] @ u, Xd[sel] @ v, s=4, alpha=0.5, color=color, label=f"label {cls}")
    ax.axvline(0.0, color="black", linewidth=1.2, label="decision boundary (w·x = 0)")
    ax.set_xlabel("x · w / |w|  (along the learned weights)")
    ax.set_ylabel("x · v  (widest orthogonal direction)")
    ax.legend(fontsize=8, markerscale=3)
    return ax


def plot_bars(bars, xlabel, title, device_name, limits=(), ax=None):
    """Horizontal bars on a log scale. bars: (label, value, kind) with kind one
    of 'this device', 'reference device', 'seed'; limits: (value, label) lines."""
    colors = {"this device": "tab:blue", "reference device": "tab:gray", "seed": "tab:orange"}
    if ax is None:
        _, ax = new_figure(height=0.45 * len(bars) + 1.6)
    ys = np.arange(len(bars))[::-1]
    for y, (label, value, kind) in zip(ys, bars):
        ax.barh(y, value, color=colors[kind], hatch="//" if kind == "reference device" else None,
                edgecolor="white")
        ax.annotate(f"{value:,.0f}", xy=(value, y), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize=8)
    for value, label in limits:
        ax.axvline(value, color="black", linestyle=":", linewidth=1)
        ax.annotate(label, xy=(value, 1.0), xycoords=("data", "axes fraction"), xytext=(3, 3),
                    textcoords="offset points", fontsize=8)
    ax.set_yticks(ys, [b[0] for b in bars], fontsize=8)
    ax.set_xscale("log")
    values = [b[1] for b in bars] + [v for v, _ in limits]
    ax.set_xlim(min(values) / 2, max(values) * 4)
    ax.set_xlabel(xlabel)
    ax.set_title(f"{title}\n{device_name}", fontsize=11)
    ax.grid(True, axis="x", which="major", alpha=0.3)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c, hatch="//" if k == "reference device" else None)
               for k, c in colors.items() if any(b[2] == k for b in bars)]
    ax.legend(handles, [k for k in colors if any(b[2] == k for b in bars)], fontsize=8,
              loc="lower right")
    return ax
