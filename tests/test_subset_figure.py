"""Part 8.2's idea figure: work-item g's row holds exactly the columns of the subset of
rank g, every k-subset appears once, and the figure draws."""
from itertools import combinations

import matplotlib

matplotlib.use("Agg")

from gpubook.chapters.lsq import subset_figure as sf  # noqa: E402


def test_each_work_item_holds_its_unranked_subset_and_all_appear_once():
    grid = sf.subset_grid(7, 3)
    rows = {tuple(int(c) for c in r.nonzero()[0]) for r in grid}
    assert rows == set(combinations(range(7), 3)) and len(grid) == 35
    assert all(r.sum() == 3 for r in grid)


def test_the_figure_draws_one_cell_per_work_item_and_column():
    fig = sf.draw_unranking(p=6, k=3)
    image = fig.axes[0].images[0].get_array()
    assert image.shape == (6, 20)
