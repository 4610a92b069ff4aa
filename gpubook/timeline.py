"""Timelines of overlapped queues: when each transfer and kernel ran, from
the OpenCL profiling events, drawn as a Gantt chart."""
import matplotlib.pyplot as plt


def spans(lanes, offsets=None, t0=None):
    """{lane: [(label, event)]} -> [(lane, label, start ms, end ms)], times from
    t0 (ns), by default the earliest start. Events of one device share its clock;
    `offsets` ({lane: ns}) moves each lane onto a common clock, for several devices."""
    offsets = offsets or {}
    rows = [(lane, label, ev.profile.start + offsets.get(lane, 0), ev.profile.end + offsets.get(lane, 0))
            for lane, items in lanes.items() for label, ev in items]
    if not rows:
        raise ValueError("no events to draw")
    t0 = min(r[2] for r in rows) if t0 is None else t0
    return [(lane, label, (s - t0) * 1e-6, (e - t0) * 1e-6) for lane, label, s, e in rows]


def busy_ms(rows, lane):
    """Time a lane spent working, in ms."""
    return sum(e - s for ln, _, s, e in rows if ln == lane)


def plot_timeline(rows, title, device_name, ax=None, min_width=0.003):
    """One bar per command, one row per lane, a colour per label.

    A command shorter than `min_width` of the whole span is drawn that wide,
    so that every label in the legend has a bar one can see; each label has
    one legend entry, on one of its bars."""
    if ax is None:
        from .plot import new_figure  # the book's sizes (gpubook/plot.py)

        _, ax = new_figure(height=2.2 + 0.5 * len({r[0] for r in rows}), full=True)
    lanes = list(dict.fromkeys(r[0] for r in rows))
    labels = list(dict.fromkeys(r[1] for r in rows))
    colours = {label: f"C{i}" for i, label in enumerate(labels)}
    span = max(r[3] for r in rows) - min(r[2] for r in rows)
    shortest = min_width * span
    in_legend = set()
    for y, lane in enumerate(lanes):
        for label in labels:
            bars = [(s, max(e - s, shortest)) for ln, lb, s, e in rows if ln == lane and lb == label]
            if bars:
                ax.broken_barh(bars, (y - 0.35, 0.7), color=colours[label],
                               label="_nolegend_" if label in in_legend else label)
                in_legend.add(label)
    ax.set_yticks(range(len(lanes)), lanes)
    ax.set_ylim(len(lanes) - 0.5, -0.5)
    ax.set_xlabel("time since the first command started (ms)")
    ax.set_title(f"{title}\n{device_name}", fontsize=11)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=len(labels), frameon=False)
    return ax
