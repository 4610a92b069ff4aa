"""Figure of chapter 5's idea: the addresses one warp reads in one load
instruction of the scores kernels, and the 32-byte sectors they touch, with X
row-major (scores_rows, scores_rows4) against transposed (scores_cols).

The addresses are traced on the device (gpubook.trace): each work-item of the
first warp records the element it reads at step k of its loop; `predicted_bytes`
repeats the kernels' index arithmetic so that a test can compare the two.
"""
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from ... import launch, trace
from ...plot import IDLE, new_figure
from .steps import EXAMPLE_MULTIPLE, padded

# variant -> (kernel file, kernel name, bytes per access)
KERNELS = {"rows": ("scores_rows.cl", "scores_rows", 4),
           "rows4": ("scores_rows4.cl", "scores_rows4", 16),
           "cols": ("scores_cols.cl", "scores_cols", 16)}
LABELS = {"rows": "row-major X, float (scores_rows)",
          "rows4": "row-major X, float4 (scores_rows4)",
          "cols": "transposed X, float4 over examples (scores_cols)"}


def _variant(variant):
    if variant not in KERNELS:
        raise ValueError(f"unknown scores kernel {variant!r}; use one of {', '.join(KERNELS)}")
    return KERNELS[variant]


def predicted_bytes(variant, kp, warp=32, step=0):
    """Byte offsets from the start of x (or xt) that work-items 0..warp-1 read
    at step `step` of their loop, from the kernels' index arithmetic, for a
    launch of one warp (xt then holds `padded(4 * warp)` examples per row)."""
    _, _, width = _variant(variant)
    j = np.arange(warp)
    if variant == "rows":        # row[k] with row = x + j * KP
        return 4 * (j * kp + step)
    if variant == "rows4":       # row[k] with row = x + j * (KP / 4), float4
        return 16 * (j * (kp // 4) + step)
    stride4 = padded(4 * warp, EXAMPLE_MULTIPLE) // 4
    return 16 * (step * stride4 + j)   # xt[k * stride4 + j], float4


def traced_bytes(ctx, queue, variant, kp, warp=32, step=0):
    """The byte offsets the first warp's work-items read at loop step `step`,
    traced on the device: `warp` work-items, one warp's worth of examples (zeros:
    only the addresses matter), in one work-group where the device allows it,
    else in several (the kernels index by global id: the addresses are the same)."""
    path, name, width = _variant(variant)
    if kp % 8:
        raise ValueError(f"kp = {kp} must be a multiple of 8 (use transpose.padded)")
    if variant == "cols":
        stride = padded(4 * warp, EXAMPLE_MULTIPLE)
        args = [np.zeros(kp * stride, np.float32), np.zeros(stride, np.float32),
                np.zeros(kp, np.float32), np.zeros(stride, np.float32),
                np.int32(warp), np.int32(stride // 4)]
    else:
        args = [np.zeros(warp * kp, np.float32), np.zeros(warp, np.float32),
                np.zeros(kp, np.float32), np.zeros(warp, np.float32), np.int32(warp)]
    local = launch.largest(queue.device, warp)
    tr = trace.run(ctx, queue, f"transpose/{path}", name, warp, local, args, {"KP": kp},
                   events=step + 1).select(step=step)
    if sorted(tr.item.tolist()) != list(range(warp)):
        raise RuntimeError(f"the trace of {name} holds work-items {sorted(tr.item.tolist())}, "
                           f"not 0..{warp - 1}")
    return width * tr.index[np.argsort(tr.item)]


def sectors(addresses, width, sector=32):
    """(sorted sector numbers touched, bytes used) by accesses of `width` bytes."""
    touched = sorted({int(a + o) // sector for a in addresses for o in range(0, width, 4)})
    return touched, len(addresses) * width


def warp_figure(addresses, kp, sector=32):
    """One panel per kernel ({variant: byte offsets of lanes 0..31}): the lanes
    on top, the sectors they touch below in address order (a gap: sectors
    skipped), each sector cut into its 4-byte words, a word coloured by the lane
    that reads it; lines join each lane to its first word."""
    fig, axes = new_figure(len(addresses), 1, height=2.5 * len(addresses) + 0.7, full=True,
                           squeeze=False)
    words_per_sector = sector // 4
    for ax, (variant, addr) in zip(axes[:, 0], addresses.items()):
        width = KERNELS[variant][2]
        warp = len(addr)
        colours = plt.get_cmap("viridis")(np.linspace(0.05, 0.95, warp))
        touched, used = sectors(addr, width, sector)
        # x position of each touched sector: one unit each, a gap where sectors are skipped
        pos, x = {}, 0.0
        for i, s in enumerate(touched):
            if i and s != touched[i - 1] + 1:
                x += 0.5
            pos[s] = x
            x += 1.0
        span = max(x, 16.0)
        lane_w = span / warp
        owner = {}
        for lane, a in enumerate(addr):
            for o in range(0, width, 4):
                owner[int(a + o) // 4] = lane
        for s in touched:
            for w in range(words_per_sector):
                word = s * words_per_sector + w
                colour = colours[owner[word]] if word in owner else IDLE
                ax.add_patch(Rectangle((pos[s] + w / words_per_sector, 2.0), 1 / words_per_sector, 0.8,
                                       facecolor=colour, edgecolor="none"))
            ax.add_patch(Rectangle((pos[s], 2.0), 1, 0.8, facecolor="none", edgecolor="black", linewidth=0.6))
        for i, s in enumerate(touched[1:], start=1):
            if s != touched[i - 1] + 1:
                ax.text(pos[s] - 0.25, 2.4, "…", ha="center", va="center", fontsize=9)
        for lane, a in enumerate(addr):
            ax.add_patch(Rectangle((lane * lane_w, 0), lane_w, 0.8, facecolor=colours[lane],
                                   edgecolor="white", linewidth=0.5))
            s, w = divmod(int(a) // 4, words_per_sector)
            _ = ax.plot([(lane + 0.5) * lane_w, pos[s] + (w + 0.5) / words_per_sector], [0.8, 2.0],
                        color="#555555", lw=0.5)
        for lane in range(0, warp, 8):
            ax.text((lane + 0.5) * lane_w, -0.1, str(lane), ha="center", va="bottom", fontsize=8)
        moved = len(touched) * sector
        per = {s: sum(1 for word in owner if word // words_per_sector == s) * 4 for s in touched}
        note = (f"each sector: {per[touched[0]]} of its {sector} bytes read" if len(set(per.values())) == 1
                else "sectors partly read")
        gap = (touched[1] - touched[0] - 1) * sector if len(touched) > 1 else 0
        note += f"; {gap:,} bytes skipped between sectors (…)" if gap else "; no gaps"
        ax.text(span / 2, 3.05, note, ha="center", va="top", fontsize=9)
        gaps = np.diff(np.asarray(addr))
        ax.set_title(f"{LABELS[variant]}: neighbours {int(gaps[0]):,} bytes apart\n"
                     f"{warp} work-items read {used:,} bytes; the memory moves {len(touched)} sectors "
                     f"= {moved:,} bytes ({100 * used / moved:g}% of them used)", fontsize=10)
        ax.set_xlim(-0.2, span + 0.2)
        ax.set_ylim(3.5, -0.5)
        ax.set_yticks([0.4, 2.4], ["work-item\n(lane)", f"{sector}-byte\nsectors"])
        ax.set_xticks([])
        ax.set_facecolor("white")
        ax.tick_params(length=0)
        for side in ax.spines.values():
            side.set_visible(False)
    fig.suptitle(f"One warp's first load of X (K padded to {kp} features), traced on the device: "
                 "which bytes each work-item reads", fontsize=11)
    fig.tight_layout()
    return fig
