"""Chapter 7's figures: the traced scans equal the kernels' index arithmetic,
the look-back walks as the kernel does, and the figures draw."""
import matplotlib.pyplot as plt
import numpy as np
import pytest

import gpubook as gb
from gpubook.chapters.scan import figures as sf
from test_figures_style import every_figure_is_legible  # noqa: F401 (autouse: checks every figure)

A, I, N = sf.AGGREGATE, sf.INCLUSIVE, sf.NONE


@pytest.fixture(scope="module")
def cl_env():
    device, ctx, queue, _, _ = gb.open_device()
    return device, ctx, queue


@pytest.mark.parametrize("wg", [4, 16])
def test_hillis_steele_traced_adds_match_the_index_arithmetic(cl_env, wg):
    _, ctx, queue = cl_env
    adds = sf.hillis_steele_adds(wg)
    assert sf.traced_hillis_steele(ctx, queue, wg) == sorted(adds)
    # log2(WG) rounds; round r has WG - 2^r additions
    assert len(adds) == sum(wg - (1 << r) for r in range(wg.bit_length() - 1))


def test_hillis_steele_adds_give_a_scan():
    wg = 8
    x = np.arange(1, wg + 1)
    for off in sorted({o for o, _, _ in sf.hillis_steele_adds(wg)}):
        left = x.copy()
        for o, lid, src in sf.hillis_steele_adds(wg):
            if o == off:
                x[lid] += left[src]
    assert np.array_equal(x, np.cumsum(np.arange(1, wg + 1)))


def test_work_efficient_traced_owners_match_the_index_arithmetic(cl_env):
    _, ctx, queue = cl_env
    loaders, scanners = sf.traced_work_efficient(ctx, queue, wg=8, items=4)
    want = sf.work_efficient_owners(8, 4)
    assert np.array_equal(loaders, want[0]) and np.array_equal(scanners, want[1])


def test_bad_work_group_sizes_are_refused():
    with pytest.raises(ValueError, match="power of two"):
        sf.hillis_steele_adds(6)


def test_lookback_walks_as_the_kernel():
    walk = sf.lookback(sf.EXAMPLE_FLAGS, 9, 4)
    assert walk == {"windows": [[5, 6, 7, 8], [1, 2, 3, 4]], "waits": [7], "added": [8, 7, 6, 5, 4], "found": 4}
    assert sf.lookback([I, A, I], 3, 4)["added"] == [2] and sf.lookback([I, A, I], 3, 4)["found"] == 2
    start = sf.lookback([A, A], 2, 1)                   # no INCLUSIVE: back to the start of the list
    assert start["added"] == [1, 0] and start["found"] == -1 and start["windows"] == [[1], [0]]
    assert sf.lookback([], 0, 4) == {"windows": [], "waits": [], "added": [], "found": -1}


def test_the_figures_draw():
    for fig in (sf.draw_hillis_steele(sf.hillis_steele_adds(8), 8),
                sf.draw_work_efficient(*sf.work_efficient_owners(8, 4), 8, 4),
                sf.draw_lookback(sf.EXAMPLE_FLAGS, 9, 4)):
        assert fig.axes and fig.patch.get_alpha() == 1.0
    plt.close("all")
