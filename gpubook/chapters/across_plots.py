"""Chapter 9's figures, drawn from what `across` reads from the records."""
import math

from .across import name, steps, with_shares


def plot_progress(results, ncols=3):
    """One panel per chapter: every step's share of each device's own limit (log scale)."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    chapters = with_shares(results)
    nrows = math.ceil(len(chapters) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.3 * ncols, 3.9 * nrows), sharey=True, squeeze=False)
    lines = {}
    for ax, c in zip(axes.flat, chapters):
        labels = []
        for i, r in enumerate(results.values()):
            found = [s for s in steps(c, r) if s[2] is not None]
            if found:  # a small sideways shift per device keeps equal points apart
                labels = labels if len(labels) >= len(found) else [s[0] for s in found]
                lines[name(r)], = ax.plot([k + 0.04 * (i - 1) for k in range(len(found))],
                                          [100 * s[2] for s in found], marker="osD^v<>"[i % 7],
                                          markersize=4, color=f"C{i}", label=name(r))
        lines["the device's limit (100%)"] = ax.axhline(100, color="black", linestyle=":", linewidth=1)
        ax.set_xticks(range(len(labels)), labels, rotation=40, ha="right", fontsize=8)
        ax.set_xlim(-0.5, len(labels) - 0.5)
        ax.set_title(f"{c.title}\n{c.unit}, share of {c.limit.label}", fontsize=9)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}%"))
        ax.grid(True, which="major", alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("share of the device's limit (%)")
    for ax in axes.flat[len(chapters):]:
        ax.remove()
    fig.suptitle("How far each step got: share of each device's own chapter-0 limit", fontsize=11)
    fig.legend(list(lines.values()), list(lines), loc="lower center", ncol=min(len(lines), 4),
               fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 0.97))
    return fig
