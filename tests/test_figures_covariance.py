"""Chapter 6's figures: the traced ownership of S equals the kernels' index
arithmetic, for the local tiles and the register tiles, and the figures draw."""
import matplotlib.pyplot as plt
import numpy as np
import pytest

import gpubook as gb
from gpubook.chapters.covariance import figures as cf
from test_figures_style import every_figure_is_legible  # noqa: F401 (autouse: checks every figure)

SHAPE = {"TM": 32, "TN": 32, "WM": 8, "WN": 8, "K": 4}


@pytest.fixture(scope="module")
def cl_env():
    device, ctx, queue, _, _ = gb.open_device()
    return device, ctx, queue


def test_triangle_numbering_is_row_by_row():
    assert [cf.triangle_tile(g) for g in range(6)] == [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (2, 2)]
    assert cf.triangle_tile(5049) == (99, 99)


def test_local_tiles_traced_owners_and_loads_match_the_index_arithmetic(cl_env):
    _, ctx, queue = cl_env
    tiles, t, chunks = 3, 4, 2
    own, tr = cf.traced_local_tiles(ctx, queue, tiles, t, chunks)
    ref = cf.local_tile_owners(tiles, t)
    assert not tr.truncated
    assert np.array_equal(own.group, ref.group) and np.array_equal(own.local, ref.local)
    blocks = ref.group[::t, ::t]                       # one entry per tile
    assert (blocks[np.triu_indices(tiles, 1)] == -1).all()   # no work-group above the diagonal tiles
    assert sorted(blocks[np.tril_indices(tiles)]) == list(range(tiles * (tiles + 1) // 2))
    n = tiles * t
    for g in range(tiles * (tiles + 1) // 2):
        for chunk in range(chunks):
            want = cf.local_tile_loads(tiles, t, g, chunk)[chunk * t:]
            got = np.full_like(want, -1)
            for step in (2 * chunk, 2 * chunk + 1):
                rows = tr.select(step=step, group=g)
                got.flat[rows.index - chunk * t * n] = rows.local
            assert np.array_equal(got, want), (g, chunk)


def test_register_tiles_traced_owners_match_the_index_arithmetic(cl_env):
    _, ctx, queue = cl_env
    own, tr = cf.traced_register_tiles(ctx, queue, SHAPE, tiles=2)
    ref = cf.register_tile_owners(SHAPE, 64)
    assert not tr.truncated and len(tr) == 3 * 16 * 64
    assert np.array_equal(own.group, ref.group) and np.array_equal(own.local, ref.local)
    # each work-item owns WM x WN elements in LV x LV blocks
    counts = np.bincount(ref.local[ref.group == 0])
    assert (counts == SHAPE["WM"] * SHAPE["WN"]).all()


def test_register_tile_loads_cover_the_panel_once_and_coalesce():
    loads = cf.register_tile_loads(SHAPE, SHAPE["TM"])
    assert (loads >= 0).all()
    nt = (SHAPE["TM"] // SHAPE["WM"]) * (SHAPE["TN"] // SHAPE["WN"])
    first = loads[0, ::cf.LV]                          # neighbours load neighbouring float4s
    assert list(first) == list(range(len(first)))
    assert np.bincount(loads.ravel()).tolist() == [SHAPE["K"] * SHAPE["TM"] // nt] * nt


def test_the_figures_draw():
    fig = cf.draw_local_tiles(cf.local_tile_owners(3, 4), 4)
    assert len(fig.axes) == 3
    fig2 = cf.draw_register_tiles(cf.register_tile_owners(SHAPE, 64), SHAPE)
    assert len(fig2.axes) == 4
    plt.close("all")


def test_the_step_bars_labels_do_not_overlap():
    """6.1's bars with every step and baseline, beside two recorded devices: the labels
    wrap rather than overlap (the fixture's check_legible fails on an overlap)."""
    import gpubook.plot as gp

    labels = ["naive", "symmetric", "local_tiles", "register_tiles", "NumPy (host)",
              "cuBLAS SSYRK", "cuBLAS GEMM"]
    rates = [1e3, 2.5e3, 6e3, 4.8e4, 1.1e3, 4.2e4, 2.6e4]
    recorded = {"Intel Xeon Processor (PoCL, skylake-avx512)": dict(zip(labels[:5], [1.2, 2.2, 6, 16, 37])),
                "NVIDIA H200": dict(zip(labels, rates))}
    fig = cf.step_rates(labels, rates, recorded, 63_798.0, "Covariance of 131,072 x 4,096 float32, step by step",
                        "NVIDIA H100 80GB HBM3")
    assert gp.overlapping_labels(fig.axes[0]) == []
    plt.close(fig)
