"""Chapter 7's figures of ideas: the rounds of the Hillis-Steele scan, the
phases of the work-efficient scan, and the flags of the decoupled look-back.

`*_adds` / `*_owners` / `lookback` follow the kernels' index arithmetic
(kernels/scan/); `traced_*` run the kernels' TRACE builds (gpubook.trace) on a
tiny list and read what each work-item really did; the tests check that the two
agree. `draw_*` draw either.
"""
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import FancyArrowPatch, Rectangle

from ... import trace
from ...plot import new_figure, on_white
from .steps import WG_SCAN

ITEM_COLOURS = ListedColormap(plt.get_cmap("tab20").colors)
NONE, AGGREGATE, INCLUSIVE = 0, 1, 2          # a tile's flag in the look-back
FLAG_STYLE = {NONE: ("white", "nothing yet"), AGGREGATE: ("#f5b041", "AGGREGATE: its own total"),
              INCLUSIVE: ("#58d68d", "INCLUSIVE: its prefix")}


def _check_wg(wg):
    if wg < 2 or wg & (wg - 1):
        raise ValueError(f"the work-group size must be a power of two of at least 2, not {wg}")


def hillis_steele_adds(wg):
    """Step 1's rounds: (offset 2^r, work-item, the position whose value it adds)
    for every addition, in the kernel's order."""
    _check_wg(wg)
    return [(off, lid, lid - off) for off in (1 << r for r in range(wg.bit_length() - 1))
            for lid in range(off, wg)]


def traced_hillis_steele(ctx, queue, wg=8):
    """The same triples, as step 1's TRACE build records them on the device
    (the first block of a list of 2*wg labels)."""
    _check_wg(wg)
    n = 2 * wg
    tr = trace.run(ctx, queue, "scan/1_hillis_steele.cl", "fitness_hs", (wg,), (wg,),
                   [np.ones(n, np.int32), np.int32(n), np.zeros(2, np.uint64)], {"WG": wg, "T": "uint"},
                   events=wg.bit_length())
    return sorted(zip(tr.step.tolist(), tr.local.tolist(), tr.index.tolist()))


def work_efficient_owners(wg, items):
    """Step 2 on its first block of items*wg labels: (the work-item that loads
    each position into local memory, the one that scans it in its registers)."""
    pos = np.arange(wg * items)
    return pos % wg, pos // items


def traced_work_efficient(ctx, queue, wg=8, items=4):
    """The same two arrays, as step 2's TRACE build records them on the device."""
    n = wg * items
    tr = trace.run(ctx, queue, (WG_SCAN, "scan/2_work_efficient.cl"), "fitness_we", (wg,), (wg,),
                   [np.ones(n, np.int32), np.int32(n), np.zeros(2, np.uint64)],
                   {"WG": wg, "T": "uint", "ITEMS": items}, events=2 * items)
    owners = []
    for step in (0, 1):
        rows = tr.select(step=step)
        out = np.full(n, -1)
        out[rows.index] = rows.local
        owners.append(out)
    return tuple(owners)


def lookback(flags, tile, look):
    """What tile `tile` of the single pass does, given the flags its
    predecessors show (NONE, AGGREGATE, INCLUSIVE per tile): the windows of
    `look` tiles it reads, nearest last, as the kernel's loop takes them;
    the tiles it must wait for (no flag yet); the tiles whose values it adds,
    nearest first; and the tile whose INCLUSIVE prefix ends the walk (-1:
    the start of the list)."""
    if not 0 <= tile < len(flags) + 1 or look < 1:
        raise ValueError("need 0 <= tile <= len(flags) and look >= 1")
    windows, waits, added, found = [], [], [], None
    end = tile
    while found is None and tile > 0:
        window = [j for j in range(end - look, end)]
        if end > 0:
            windows.append([j for j in window if j >= 0])
        waits += [j for j in window if j >= 0 and flags[j] == NONE]
        for j in reversed(window):            # work-item 0, nearest first
            if j < 0:
                found = -1                    # before tile 0: a prefix of 0
                break
            added.append(j)
            if flags[j] == INCLUSIVE:
                found = j
                break
        end -= look
    return {"windows": windows, "waits": waits, "added": added, "found": -1 if found is None else found}


# drawing -----------------------------------------------------------------------

def _box(ax, x, y, colour, text="", w=0.9, h=0.6, fontsize=7, **kw):
    ax.add_patch(Rectangle((x - w / 2, y - h / 2), w, h, facecolor=colour, edgecolor="0.3", linewidth=0.6, **kw))
    if text:
        ax.text(x, y, text, ha="center", va="center", fontsize=fontsize)


def _arrow(ax, start, end, colour="black", **kw):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=7, color=colour, linewidth=0.8,
                                 shrinkA=2, shrinkB=2, **kw))


def _span(lo, hi):
    return str(lo) if lo == hi else f"{lo}-{hi}"


def draw_hillis_steele(adds, wg, source="index arithmetic"):
    """Rounds as rows: in the row of round r, work-item `lid` holds the sum of
    positions lid - 2^(r+1) + 1 .. lid; an arrow for every addition."""
    offsets = sorted({off for off, _, _ in adds})
    rounds = len(offsets)
    fig, ax = new_figure(height=0.9 * rounds + 1.7, full=wg > 8)
    for r in range(rounds + 1):
        y = -r
        width = 1 << r                          # positions summed after r rounds
        for lid in range(wg):
            _box(ax, lid, y, ITEM_COLOURS(lid % 20), _span(max(0, lid - width + 1), lid))
        what = "labels in local memory" if r == 0 else f"after round {r}"
        ax.text(-0.8, y, what, ha="right", va="center", fontsize=8)
        if r:
            off = offsets[r - 1]
            mine = [(lid, src) for o, lid, src in adds if o == off]
            for lid, src in mine:
                _arrow(ax, (src, y + 1 - 0.3), (lid, y + 0.3), colour="0.25")
            ax.text(wg - 0.2, y + 0.5, f"offset {off}: {len(mine)} additions", ha="left", va="center",
                    fontsize=8, color="0.25")
    for lid in range(wg):
        ax.text(lid, 0.55, str(lid), ha="center", va="bottom", fontsize=7)
    ax.text((wg - 1) / 2, 0.95, "work-item (local id)", ha="center", va="bottom", fontsize=8)
    ax.set_xlim(-4.2, wg + 2.8)
    ax.set_ylim(-rounds - 0.6, 1.4)
    ax.axis("off")
    ax.set_title(f"Step 1, Hillis-Steele in one work-group of {wg} ({source}).\nEach box: the sum of "
                 "the positions it names. In each round, every work-item\nfrom the offset on adds the "
                 "value offset places to its left; a barrier ends the round", fontsize=10)
    fig.tight_layout()
    return on_white(fig)


def draw_work_efficient(loaders, scanners, wg, items, source="index arithmetic"):
    """Step 2's phases as rows over the positions of one block: who loads each
    label, who scans it in registers, the work-group scan of the totals, and
    the carry added back."""
    n = wg * items
    fig, ax = new_figure(height=3.6, full=True)
    rows = [("1. load (coalesced):\nposition i by work-item i mod WG", loaders),
            ("2. scan in registers:\nwork-item t takes t·ITEMS ..", scanners)]
    for r, (what, owner) in enumerate(rows):
        y = -1.1 * r
        for i in range(n):
            _box(ax, i, y, ITEM_COLOURS(owner[i] % 20), str(owner[i]), w=0.95, h=0.6, fontsize=7)
        ax.text(-1, y, what, ha="right", va="center", fontsize=8)
    for t in range(wg):                       # the serial chain in registers
        for k in range(items - 1):
            _arrow(ax, (t * items + k + 0.2, -1.1 - 0.35), (t * items + k + 0.8, -1.1 - 0.35), colour="0.3")
    y = -2.3
    for t in range(wg):
        centre = t * items + (items - 1) / 2
        _box(ax, centre, y, ITEM_COLOURS(t % 20), f"total {t}", w=items - 0.3, h=0.5, fontsize=7)
        _arrow(ax, (t * items + items - 1, -1.1 - 0.3), (centre + 0.3, y + 0.25), colour="0.6")
    ax.text(-1, y, f"3. work-group scan of the\n{wg} totals ({wg.bit_length() - 1} rounds, as step 1)",
            ha="right", va="center", fontsize=8)
    y = -3.3
    for t in range(wg):
        centre = t * items + (items - 1) / 2
        text = ("+ 0", "+ total 0")[t] if t < 2 else f"+ totals 0-{t - 1}"
        _box(ax, centre, y, "white", text, w=items - 0.3, h=0.5, fontsize=7)
    ax.text(-1, y, "4. each adds the totals\nof the work-items before it", ha="right", va="center", fontsize=8)
    for i in range(0, n, items):
        ax.text(i - 0.5, 0.45, str(i), ha="left", va="bottom", fontsize=7)
    ax.text(n / 2, 0.85, "position in the block of ITEMS·WG labels", ha="center", va="bottom", fontsize=8)
    ax.set_xlim(-10, n + 0.5)
    ax.set_ylim(-3.8, 1.3)
    ax.axis("off")
    ax.set_title(f"Step 2, work-efficient: WG = {wg} work-items, ITEMS = {items} labels each ({source}); "
                 "numbers in boxes are work-items", fontsize=10)
    fig.tight_layout()
    return on_white(fig)


def draw_lookback(flags, tile, look):
    """One moment of the single pass: the flag each tile has published, and
    the look-back of `tile` over windows of `look` tiles until an INCLUSIVE
    prefix."""
    walk = lookback(flags, tile, look)
    shown = len(flags) + 1
    fig, ax = new_figure(height=3.2, full=shown > 7)
    for j in range(shown):
        if j == tile:
            _box(ax, j, 0, "#85c1e9", "looks back", h=0.7)
        elif j < len(flags):
            colour, _ = FLAG_STYLE[flags[j]]
            _box(ax, j, 0, colour, "waits" if j in walk["waits"] else "", h=0.7,
                 hatch="///" if flags[j] == NONE else None)
        ax.text(j, -0.5, f"tile {j}", ha="center", va="top", fontsize=8)
    for j in walk["added"]:
        rad = 0.25 + 0.03 * (tile - j)
        _arrow(ax, (tile, 0.35), (j, 0.35), colour="#1f618d", connectionstyle=f"arc3,rad={rad:.2f}")
    for w, window in enumerate(walk["windows"]):
        if window:
            lo, hi = min(window), max(window)
            ax.add_patch(Rectangle((lo - 0.5, -1.05), hi - lo + 1, 0.25, facecolor="0.9", edgecolor="0.5"))
            ax.text((lo + hi) / 2, -0.93, f"window {w + 1}: {look} work-items read these flags at once",
                    ha="center", va="center", fontsize=7)
    found = walk["found"]
    end = "the start of the list" if found < 0 else f"tile {found}'s INCLUSIVE prefix"
    ax.text(-0.5, -1.4, f"Tile {tile} adds the AGGREGATE totals of tiles "
                        f"{', '.join(str(j) for j in walk['added'] if j != found)} and {end}; "
                        f"then it publishes its own INCLUSIVE prefix.", fontsize=8, va="center")
    handles = [Rectangle((0, 0), 1, 1, facecolor=c, edgecolor="0.3", hatch="///" if f == NONE else None)
               for f, (c, _) in FLAG_STYLE.items()]
    ax.legend(handles, [label for _, label in FLAG_STYLE.values()], fontsize=8, loc="upper left",
              bbox_to_anchor=(0, 1.02), ncol=3, frameon=False)
    ax.set_xlim(-0.7, shown - 0.3)
    ax.set_ylim(-1.65, 2.0)
    ax.axis("off")
    ax.set_title(f"Step 3b, decoupled look-back: the flags at one moment, and tile {tile}'s walk back "
                 f"(LOOK = {look})", fontsize=10)
    fig.tight_layout()
    return on_white(fig)


EXAMPLE_FLAGS = [INCLUSIVE, INCLUSIVE, AGGREGATE, INCLUSIVE, INCLUSIVE, AGGREGATE, AGGREGATE, NONE, AGGREGATE]
"""A moment of the single pass for the figure: tiles 0-8 as they might stand
when tile 9 looks back (tiles publish in any order; 7 has not yet)."""
