"""Chapter 10's figure: the log of a shared queue taken by several threads,
ordered and drawn for any number of devices."""
import matplotlib.pyplot as plt
import pytest

from gpubook.chapters import multi
from gpubook.chapters.multi import figures as mf
from gpubook.stream import blocks


@pytest.mark.parametrize("devices", [1, 3])
def test_a_shared_queue_log_orders_and_draws(devices):
    work = multi.Work(blocks(10_000, 700))
    multi.in_threads(lambda k: [None for _ in iter(lambda: work.take(k), None)], devices)
    taken = work.by_worker(devices)
    order = mf.take_order(taken)
    assert sorted(n for *_, n in order) == list(range(15))
    assert all(i0 == 700 * n for _, i0, _, n in order)        # the queue hands out blocks in row order
    fig = mf.draw_taken(taken, [f"GPU {d}" for d in range(devices)])
    assert len(fig.axes) == 2
    plt.close("all")


def test_bad_logs_are_refused():
    with pytest.raises(ValueError, match="no blocks"):
        mf.take_order([[], []])
    with pytest.raises(ValueError, match="twice"):
        mf.take_order([[(0, 5)], [(0, 5)]])
    with pytest.raises(ValueError, match="names"):
        mf.draw_taken([[(0, 5)]], ["a", "b"])


def test_amdahl_and_the_weak_scaling_figure():
    import matplotlib.pyplot as plt

    assert mf.amdahl(0.0, [1, 2, 4]) == [1.0, 2.0, 4.0]
    s = mf.amdahl(0.2, [1, 2, 4])
    assert s[0] == 1.0 and abs(s[2] - 1 / (0.2 + 0.8 / 4)) < 1e-12
    with pytest.raises(ValueError):
        mf.amdahl(1.5, [1])
    fig, ax = plt.subplots()
    mf.plot_weak(ax, [1, 2], [10.0, 11.0], [9.0, 10.5], 1000, "weak")
    mf.plot_speedup(ax, [1, 2], [1.0, 1.8], [1.0, 1.9], "strong", amdahl=[1.0, 1.7])
    labels = ax.get_legend_handles_labels()[1]
    assert "ideal (flat)" in labels and "Amdahl, measured serial part" in labels
    plt.close(fig)


@pytest.mark.parametrize("devices", [1, 2, 5, 8])
def test_the_figures_are_legible_for_any_number_of_devices(devices):
    from gpubook.plot import check_legible

    work = multi.Work(blocks(64 * 16_384, 16_384))
    multi.in_threads(lambda k: [None for _ in iter(lambda: work.take(k), None)], devices)
    names = [f"{k}: NVIDIA H100 80GB HBM3" for k in range(devices)]
    check_legible(mf.draw_taken(work.by_worker(devices), names), "blocks taken")
    counts = list(range(1, devices + 1))
    check_legible(mf.scaling_figure(counts, counts, counts, mf.amdahl(0.05, counts), counts,
                                    "Streamed covariance, 17.2 GB", "Subset search, 3.70 billion subsets",
                                    f"{devices} × NVIDIA H100 80GB HBM3"), "strong scaling")
    check_legible(mf.weak_figure(counts, [100.0] * devices, [90.0] * devices, 262_144,
                                 "Weak scaling of the streamed covariance\n4 × NVIDIA H100"), "weak scaling")
    plt.close("all")
