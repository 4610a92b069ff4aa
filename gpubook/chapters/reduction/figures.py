"""Figures of chapter 3's idea: interleaved against sequential addressing in
the tree of a work-group, traced on the device (gpubook.trace) from
kernels/reduction/1_interleaved.cl and 2_sequential.cl, as Harris draws them;
and the banks that one warp's reads of the local partial gradients fall in.

A round's trace is the list of (work-item, word) reads of that round: every
active work-item reads `sums[lid]` and `sums[lid + s]` and writes `sums[lid]`.
"""
import numpy as np

from ... import launch, trace
from ...plot import IDLE, new_figure

TREES = ("1_interleaved", "2_sequential")
WARP_STATE_COLOURS = {"all active": "#2ca02c", "divergent": "#d62728", "idle": "#d9d9d9"}


def predicted_reads(step, wg):
    """The (stride s, work-item, word) reads of one work-group's tree, in the
    kernel's own order, from its index arithmetic."""
    if wg < 2 or wg & (wg - 1):
        raise ValueError(f"work-group size {wg} must be a power of two from 2 up")
    if step == "1_interleaved":      # for (s = 1; s < WG; s *= 2) if (lid % (2 * s) == 0)
        strides = [1 << r for r in range(wg.bit_length() - 1)]
        active = lambda s: [lid for lid in range(wg) if lid % (2 * s) == 0]
    elif step == "2_sequential":     # for (s = WG / 2; s > 0; s /= 2) if (lid < s)
        strides = [wg >> r for r in range(1, wg.bit_length())]
        active = lambda s: list(range(s))
    else:
        raise ValueError(f"unknown tree {step!r}; use one of {', '.join(TREES)}")
    return [(s, lid, word) for s in strides for lid in active(s) for word in (lid, lid + s)]


def traced_reads(ctx, queue, step, wg=64, groups=1):
    """Run the tree kernel with TRACE on `groups` work-groups of `wg` ones and
    return the reads of work-group 0 as (stride, work-item, word) rows, in the
    order of the rounds (work-item 0 works in every round; its record order
    gives the order of the strides)."""
    if step not in TREES:
        raise ValueError(f"unknown tree {step!r}; use one of {', '.join(TREES)}")
    n = wg * groups
    tr = trace.run(ctx, queue, f"reduction/{step}.cl", "reduce", n, wg,
                   [np.ones(n, np.float32), np.zeros(groups, np.float32), np.uint32(n)],
                   {"WG": wg}, events=2 * (wg.bit_length() - 1))
    if tr.truncated:
        raise RuntimeError("the trace lost records: a work-item read more words than the tree has")
    first = tr.select(group=0)
    order = list(dict.fromkeys(first.select(local=0).step.tolist()))
    rows = sorted(zip(first.step.tolist(), first.local.tolist(), first.index.tolist(),
                      first.seq.tolist()), key=lambda r: (order.index(r[0]), r[1], r[3]))
    return [(s, lid, word) for s, lid, word, _ in rows]


def traced_trees(ctx, queue, want=64):
    """(wg, {tree: traced_reads}) of both TREES at the largest power of two wg up
    to `want` that their traced kernels allow here (a compiler may allow a kernel
    fewer work-items than the device's maximum: Mesa's rusticl allows 32)."""
    wg = 1 << max(1, int(want).bit_length() - 1)
    while True:
        try:
            return wg, {step: traced_reads(ctx, queue, step, wg) for step in TREES}
        except launch.LaunchError:
            if wg == 2:
                raise
            wg //= 2


def rounds(reads):
    """{stride: {work-item: (first word, second word)}} in round order."""
    out = {}
    for s, lid, word in reads:
        out.setdefault(s, {}).setdefault(lid, []).append(word)
    return {s: {lid: tuple(w) for lid, w in by.items()} for s, by in out.items()}


def warp_states(active, wg, warp=32):
    """For each warp of the work-group: 'all active', 'divergent' or 'idle'."""
    active = set(active)
    states = []
    for w0 in range(0, wg, warp):
        n = sum(1 for lid in range(w0, min(w0 + warp, wg)) if lid in active)
        states.append("idle" if n == 0 else "all active" if n == min(warp, wg - w0) else "divergent")
    return states


def bank_conflict(words, banks=32):
    """The n of an n-way conflict: the most distinct words in one bank among
    the words one instruction of one warp reads (1: no conflict)."""
    by_bank = {}
    for w in set(words):
        by_bank.setdefault(w % banks, set()).add(w)
    return max((len(v) for v in by_bank.values()), default=0)


def round_facts(by_lid, wg, warp=32, banks=32):
    """(warp states, worst bank conflict over the warps and the two reads)."""
    states = warp_states(by_lid, wg, warp)
    worst = 1
    for w0 in range(0, wg, warp):
        lanes = [lid for lid in by_lid if w0 <= lid < w0 + warp]
        for which in (0, 1):
            if lanes:
                worst = max(worst, bank_conflict([by_lid[lid][which] for lid in lanes], banks))
    return states, worst


def tree_figure(reads_by_step, wg, warp=32, banks=32, source="traced on the device"):
    """Harris's picture for each tree: one row per round; a coloured cell is a
    word written that round (colour: the warp of the work-item that writes it),
    lines join it to the two words it adds. Right: each warp's state and the
    worst bank conflict of the round."""
    n_rounds = wg.bit_length() - 1
    fig, axes = new_figure(len(reads_by_step), 1, height=3.1 * len(reads_by_step) + 0.8, full=True,
                           squeeze=False)
    warp_colours = ("#1f77b4", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#bcbd22", "#e377c2", "#7f7f7f")
    n_warps = -(-wg // warp)
    for ax, (step, reads) in zip(axes[:, 0], reads_by_step.items()):
        ax.set_facecolor("white")
        by_round = rounds(reads)
        for x in range(wg):
            ax.add_patch(_box(x, 0, "#c6dbef"))
        for r, (s, by_lid) in enumerate(by_round.items(), start=1):
            for x in range(wg):
                lid_colour = warp_colours[(x // warp) % len(warp_colours)] if x in by_lid else IDLE
                ax.add_patch(_box(x, r, lid_colour))
            for lid, (a, b) in by_lid.items():
                _ = ax.plot([a + 0.5, lid + 0.5], [r - 1 + 0.85, r + 0.15], color="#555555", lw=0.6)
                _ = ax.plot([b + 0.5, lid + 0.5], [r - 1 + 0.85, r + 0.15], color="#555555", lw=0.6)
            states, conflict = round_facts(by_lid, wg, warp, banks)
            for w, state in enumerate(states):
                ax.add_patch(_box(wg + 1 + 2.5 * w, r, WARP_STATE_COLOURS[state], width=2))
            ax.text(wg + 1.5 + 2.5 * n_warps, r + 0.5,
                    f"s = {s}: {len(by_lid)} work-items; "
                    f"{states.count('divergent')} of {n_warps} warps divergent; "
                    + ("reads: no bank conflict" if conflict == 1
                       else f"reads: {conflict}-way bank conflict"),
                    va="center", fontsize=9)
        ax.text(wg + 1.5 + 2.5 * n_warps, 0.5, f"load: {wg} words of local memory", va="center", fontsize=9)
        for w in range(n_warps):
            ax.text(wg + 2 + 2.5 * w, 0.5, f"w{w}", ha="center", va="center", fontsize=8)
        ax.set_xlim(-0.5, wg + 2.5 * n_warps + 0.5 * wg)
        ax.set_ylim(n_rounds + 1.1, -0.6)
        ax.set_xticks([x + 0.5 for x in range(0, wg, 8)], [str(x) for x in range(0, wg, 8)])
        ax.set_yticks([r + 0.5 for r in range(n_rounds + 1)], ["load"] + [f"round {r}" for r in
                                                                       range(1, n_rounds + 1)])
        ax.set_xlabel("word of local memory (sums[]); work-item lid writes word lid", fontsize=9)
        ax.set_title(f"kernels/reduction/{step}.cl, WG = {wg} ({source})", fontsize=11)
        ax.tick_params(length=0)
        for side in ax.spines.values():
            side.set_visible(False)
    handles = [_box(0, 0, c) for c in list(WARP_STATE_COLOURS.values()) + list(warp_colours[:n_warps])]
    labels = ([f"right, one box per warp: {k}" if i == 0 else k for i, k in enumerate(WARP_STATE_COLOURS)]
              + [f"word written by a work-item of warp {w}" for w in range(n_warps)])
    fig.legend(handles, labels, loc="lower center", ncol=len(handles), fontsize=8, frameon=False)
    fig.suptitle(f"Who adds what, round by round: a line joins each word a work-item reads to the "
                 f"word it writes\n(warps of {warp} work-items, {banks} banks of 4 bytes)", fontsize=11)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def _box(x, y, colour, width=1.0):
    from matplotlib.patches import Rectangle
    return Rectangle((x, y + 0.1), width, 0.8, facecolor=colour, edgecolor="white", linewidth=0.5)


def bank_words(stride, k=0, offset=32, warp=32):
    """The words one warp's work-items 0..warp-1 read in one round of a tree
    whose partial sums sit `stride` floats apart (tree.cl: partial[(id +
    offset) * K + k], stride = K; 2_sequential.cl: sums[lid + s], stride 1)."""
    return [(lane + offset) * stride + k for lane in range(warp)]


BANK_CASES = (("2_sequential.cl: sums[lid + s], neighbours 1 float apart", 1),
              ("logreg/tree.cl with K = 8: partial[(id + offset) * K + k], neighbours K floats apart", 8))


def conflicts_by_active(stride, warp=32, banks=32):
    """{active work-items of a warp: the n of their n-way conflict} for a tree's
    later rounds, where the offset falls below a warp and only the first `active`
    lanes add: warp, warp/2, ... down to the first count with no conflict."""
    out, active = {}, warp
    while active >= 1:
        out[active] = bank_conflict(bank_words(stride, offset=warp, warp=active), banks)
        if out[active] == 1:
            break
        active //= 2
    return out


def _fewer_note(stride, warp, banks):
    """The conflicts of the rounds in which fewer than `warp` work-items add (in
    tree.cl the first `offset` work-items add, so the active count is the offset)."""
    fewer = {a: c for a, c in conflicts_by_active(stride, warp, banks).items() if a < warp}
    if not fewer:
        return ""
    parts = [f"offset {a}: {c}-way" if c > 1 else f"offset {a} or less: none"
             for a, c in fewer.items()]
    return (f"\nlater rounds, where only offset < {warp} work-items of the warp add: "
            + ", ".join(parts))


def bank_figure(cases=BANK_CASES, warp=32, banks=32):
    """One warp's reads of local memory in one round, lane -> bank, for each
    (label, stride) case: partial sums `stride` floats apart."""
    fig, axes = new_figure(len(cases), 1, height=2.4 * len(cases) + 0.6, full=True, squeeze=False)
    for ax, (label, stride) in zip(axes[:, 0], cases):
        words = bank_words(stride, warp=warp)
        conflict = bank_conflict(words, banks)
        hits = np.bincount([w % banks for w in words], minlength=banks)
        ax.set_facecolor("white")
        for b in range(banks):
            ax.add_patch(_box(b, 2, "#fdd0a2" if hits[b] else IDLE))
            if hits[b] > 1:
                ax.text(b + 0.5, 2.95, f"{hits[b]} reads", ha="center", va="top", fontsize=8)
        for lane, w in enumerate(words):
            ax.add_patch(_box(lane, 0, "#c6dbef"))
            _ = ax.plot([lane + 0.5, w % banks + 0.5], [0.9, 2.1], color="#555555", lw=0.7)
        ax.set_xlim(-0.5, max(warp, banks) + 0.5)
        ax.set_ylim(3.7, -0.2)
        ax.set_yticks([0.5, 2.5], ["work-item\n(lane)", "bank"])
        ax.set_xticks([x + 0.5 for x in range(0, max(warp, banks), 4)],
                      [str(x) for x in range(0, max(warp, banks), 4)])
        ax.tick_params(length=0)
        for side in ax.spines.values():
            side.set_visible(False)
        ax.set_title(f"{label}\n{int((hits > 0).sum())} of {banks} banks used: "
                     + ("no conflict, one turn" if conflict == 1 else
                        f"{conflict}-way conflict, the reads take {conflict} turns")
                     + (_fewer_note(stride, warp, banks) if conflict > 1 else ""), fontsize=10)
    fig.suptitle(f"One warp's {warp} reads of local memory in a round where all {warp} of its "
                 f"work-items add (bank = word mod {banks})", fontsize=11)
    fig.tight_layout()
    return fig
