"""lsq.pages: the steps chapter 8's main line and its Going-further page both run."""
import numpy as np

from gpubook.chapters import lsq
from gpubook.chapters.lsq import pages


def test_base_factor_is_full_rank_with_rows_to_add(fp64_env):
    _, ctx, queue = fp64_env
    f, xs, ys = pages.base_factor(ctx, queue, 12)
    assert xs.shape == (64, 12) and ys.shape == (64,)
    assert lsq.sing(f) == [] and np.all(f.d > 0)


def test_time_panels_keeps_the_fastest_width_and_its_factor(fp64_env):
    _, ctx, queue = fp64_env
    x, y = lsq.make_problem(120, 20, seed=3)
    blocked, nb_best, qr = pages.time_panels(ctx, queue, x, y, [4, 8])
    assert set(blocked) == {4, 8} and nb_best == min(blocked, key=lambda w: blocked[w]["median_s"])
    assert qr.nb == nb_best and lsq.gram_error(qr, x, y) < 1e-12


def test_step5_labels_are_the_ones_the_stored_pages_show():
    shape = pages.TILE64[0]
    assert pages.run_label(16, 128, shape, 1) == "n_b = 16, n_o = 128, 128x64/8x4/K8, 1 row/item"
    assert pages.run_label(16, 128, shape, 2).endswith("2 rows/item")
    assert len(pages.step5_configs(True)) == 11 and len(pages.step5_configs(False)) == 4


def test_step5_sweep_runs_the_small_tiles_only_where_nothing_else_ran(fp64_env):
    _, ctx, queue = fp64_env
    x, y = lsq.make_problem(200, 40, seed=4)
    said = []
    tiled, runs, qr5 = pages.step5_sweep(ctx, queue, x, y, False, say=said.append)
    assert tiled and len(runs) == len(tiled) and qr5 is not None
    assert len(tiled) + len(said) <= len(pages.step5_configs(False)) + len(pages.SMALL)
    assert lsq.gram_error(qr5, x, y) < 1e-12
