"""Figures of chapters 1-5: each figure function draws on small inputs, and the
accesses traced on the device (chapters 3 and 5) equal the kernels' index
arithmetic as the figure modules repeat it in Python."""
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest

import gpubook as gb
from gpubook.chapters.logreg import figures as lf
from gpubook.chapters.reduction import figures as rf
from gpubook.chapters.transpose import figures as tf
from test_figures_style import every_figure_is_legible  # noqa: F401 (autouse: checks every figure)


@pytest.fixture(scope="module")
def ctx_queue():
    return gb.make_queue()


def white(fig):
    assert isinstance(fig, matplotlib.figure.Figure)
    assert matplotlib.colors.to_rgba(fig.get_facecolor()) == (1.0, 1.0, 1.0, 1.0)
    plt.close(fig)


def test_loop_orders_follow_the_kernels():
    assert lf.loop2_order("naive", 3, 2) == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]
    assert lf.loop2_order("reordered", 3, 2) == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]
    with pytest.raises(ValueError):
        lf.loop2_order("merged", 3, 2)


def test_owners_and_loads():
    assert lf.row_owner(8, 4).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert lf.row_owner(8, 4, "strided").tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
    writer, feature = lf.partial_writer(2, 3)
    assert writer.tolist() == [0, 0, 0, 1, 1, 1] and feature.tolist() == [0, 1, 2, 0, 1, 2]
    item, load = lf.loads_of(4, 8, 2, 4)
    assert load[:, 0].tolist() == [0, 2, 0, 2] and load[1, 4:].tolist() == [3] * 4
    assert lf.loads_of(4, 8, 2, 1)[1].max() == 15 and item[3, 0] == 1
    with pytest.raises(ValueError, match="divide"):
        lf.row_owner(10, 4)


def test_logreg_figures_draw():
    white(lf.walk_figure(4, 4))
    white(lf.split_figure(8, 4, 2))
    white(lf.float4_figure(4, 8, 2))
    with pytest.raises(ValueError, match="too large"):
        lf.walk_figure(64, 64)


@pytest.mark.parametrize("step", rf.TREES)
@pytest.mark.parametrize("wg", [8, 64])
def test_traced_tree_equals_index_arithmetic(ctx_queue, step, wg):
    ctx, queue = ctx_queue
    got = rf.traced_reads(ctx, queue, step, wg, groups=2)
    assert got == rf.predicted_reads(step, wg)


def test_warp_states_and_banks():
    reads = rf.rounds(rf.predicted_reads("1_interleaved", 64))
    assert rf.round_facts(reads[1], 64) == (["divergent", "divergent"], 1)
    seq = rf.rounds(rf.predicted_reads("2_sequential", 64))
    assert rf.round_facts(seq[32], 64) == (["all active", "idle"], 1)
    assert rf.bank_conflict(rf.bank_words(8)) == 8 and rf.bank_conflict(rf.bank_words(1)) == 1
    # tree.cl's later rounds: fewer work-items add, fewer collide (K = 8, 32 banks)
    assert rf.conflicts_by_active(8) == {32: 8, 16: 4, 8: 2, 4: 1}
    assert rf.conflicts_by_active(1) == {32: 1}


def test_reduction_figures_draw(ctx_queue):
    reads = {s: rf.predicted_reads(s, 16) for s in rf.TREES}
    white(rf.tree_figure(reads, 16, warp=8))
    white(rf.bank_figure())


@pytest.mark.parametrize("variant", list(tf.KERNELS))
@pytest.mark.parametrize("kp", [8, 296])
def test_traced_warp_addresses_equal_index_arithmetic(ctx_queue, variant, kp):
    ctx, queue = ctx_queue
    for step in (0, 1):
        assert np.array_equal(tf.traced_bytes(ctx, queue, variant, kp, step=step),
                              tf.predicted_bytes(variant, kp, step=step))


def test_sectors_and_warp_figure():
    assert tf.sectors(tf.predicted_bytes("cols", 296), 16) == (list(range(16)), 512)
    touched, used = tf.sectors(tf.predicted_bytes("rows", 296), 4)
    assert len(touched) == 32 and used == 128
    white(tf.warp_figure({v: tf.predicted_bytes(v, 16, warp=8) for v in tf.KERNELS}, 16))
    with pytest.raises(ValueError, match="unknown scores kernel"):
        tf.predicted_bytes("diagonal", 16)
