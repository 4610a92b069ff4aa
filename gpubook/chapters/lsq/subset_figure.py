"""Chapter 8, step 4's idea (part 8.2): a work-item's index is its subset. Work-item g
takes the k-subset of rank g in the combinatorial number system (gpubook.subsets.unrank,
the host's twin of kernels/lsq/4_subsets.cl's loop), so no list of subsets exists and
no work-item needs another's result."""
from math import comb

import numpy as np

from ...plot import new_figure
from ...subsets import unrank


def subset_grid(p, k):
    """(comb(p, k), p) array: row g is 1 in the columns of work-item g's subset."""
    grid = np.zeros((comb(p, k), p), dtype=int)
    for g in range(len(grid)):
        grid[g, list(unrank(g, k, p))] = 1
    return grid


def draw_unranking(p=6, k=3):
    """Work-items along x, candidate columns along y: which columns each work-item's
    subset holds, with the subset written under the first few."""
    grid = subset_grid(p, k)
    fig, ax = new_figure(height=2.9)
    ax.imshow(grid.T, cmap="Blues", vmin=0, vmax=1.6, aspect="auto", origin="lower",
              extent=(-0.5, len(grid) - 0.5, -0.5, p - 0.5))
    for g in range(len(grid)):
        for c in np.flatnonzero(grid[g]):
            ax.text(g, c, str(c), ha="center", va="center", fontsize=9, color="white")
    ax.set_xticks(range(len(grid)))
    ax.set_yticks(range(p))
    ax.tick_params(labelsize=9)
    ax.set_xlabel(f"work-item g (global id), {len(grid)} = C({p}, {k}) in all", fontsize=10)
    ax.set_ylabel("candidate column", fontsize=10)
    ax.set_title(f"Each work-item unranks its own {k}-subset of {p} candidates", fontsize=11)
    fig.tight_layout()
    return fig
