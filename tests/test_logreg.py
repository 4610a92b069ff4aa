"""gpubook.chapters.logreg: data, float64 reference, shape checks and the single-work-group
kernels of chapters 1-4 on the local device (a few iterations, small groups)."""
from types import SimpleNamespace

import numpy as np
import pytest

import gpubook as gb
from gpubook.chapters import logreg as lr


def fake_device(max_wg=1024, local=49152):
    return SimpleNamespace(max_work_group_size=max_wg, local_mem_size=local, name="fake",
                           extensions="", vendor="none", type=0)


def test_two_classes_shapes_and_labels():
    X, y = lr.two_classes(100, 8, seed=1)
    assert X.shape == (100, 8) and X.dtype == np.float32 and X.flags.c_contiguous
    assert y.dtype == np.float32 and y.sum() == 50 and set(np.unique(y)) == {0.0, 1.0}


@pytest.mark.parametrize("J,K", [(1, 8), (8, 0)])
def test_two_classes_rejects_bad_sizes(J, K):
    with pytest.raises(ValueError):
        lr.two_classes(J, K)


def test_one_iteration_matches_closed_form():
    # From w = 0 every sigmoid is 1/2: w1 = rate * X^T (y - 1/2).
    X, y = lr.two_classes(64, 4)
    w = lr.train(X, y, 0.01, 1)
    expected = 0.01 * X.astype(np.float64).T @ (y.astype(np.float64) - 0.5)
    np.testing.assert_allclose(w, expected, rtol=1e-12)


def test_log_likelihood_at_zero_and_after_training():
    X, y = lr.two_classes(256, 8)
    assert lr.log_likelihood(X, y, np.zeros(8)) == pytest.approx(256 * np.log(0.5))
    w = lr.train(X, y, lr.learning_rate(256), 200)
    assert lr.log_likelihood(X, y, np.zeros(8)) < lr.log_likelihood(X, y, w) < 0


def test_problem_sizes_and_overrides():
    full = lr.problem("full")
    assert (full.J, full.K, full.iterations) == (2048, 8, 50_000)
    assert full.rate == pytest.approx(1 / 2048)
    small = lr.problem("small", J=512, iterations=7)
    assert (small.J, small.iterations) == (512, 7) and small.X.shape == (512, 8)
    with pytest.raises(ValueError):
        lr.problem("small", iterations=0)


def test_reference_is_cached_and_matches_train():
    p = lr.problem("small", J=128, iterations=5)
    assert p.reference() is p.reference()
    np.testing.assert_allclose(p.reference(), lr.train(p.X, p.labels, p.rate, 5))


def test_check_accepts_rounding_and_rejects_errors():
    ref = np.array([1.0, -2.0, 0.5])
    assert lr.check(ref.astype(np.float32), ref) < 1e-7
    with pytest.raises(AssertionError, match="tolerance"):
        lr.check(ref * (1 + 1e-3), ref)


@pytest.mark.parametrize("step,J,K,N,defines,message", [
    ("work_items", 2048, 8, 3, {}, "do not divide"),
    ("tree", 2040, 8, 24, {}, "power-of-two"),
    ("float4", 2048, 6, 4, {}, "multiple of 4"),
    ("fast", 2048, 8, 16, {"SHUFFLE": 1}, "multiple of 32"),
    ("fast", 2048, 8, 64, {"IN_REGS": 64}, "IN_REGS"),
    ("tree", 4096, 8, 2048, {}, "exceeds"),
    ("fast", 2048, 8, 1024, {"SHUFFLE": 0, "RADIX": 16}, "local memory"),
])
def test_bad_shapes_raise(step, J, K, N, defines, message):
    with pytest.raises(ValueError, match=message):
        lr.check_shape(fake_device(), step, J, K, N, defines)
    assert not lr.fits(fake_device(), step, J, K, N, **defines)


def test_fast_defines_keep_examples_in_registers():
    dev = fake_device()
    assert lr.fast_defines(dev, 2048, 128) == {"SHUFFLE": 0, "RADIX": 16, "IN_REGS": 16}
    assert lr.fast_defines(dev, 2048, 1024)["IN_REGS"] == 2
    assert lr.fast_defines(dev, 2**20, 256)["IN_REGS"] == 16
    assert lr.fast_defines(dev, 2048, 128, shuffle=True)["SHUFFLE"] == 1


def test_work_item_counts():
    assert lr.work_item_counts(fake_device(max_wg=256), 2048) == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert lr.work_item_counts(fake_device(), 16) == [1, 2, 4, 8, 16]
    assert lr.work_item_counts(fake_device(), 2048, most=4) == [1, 2, 4]


def test_step_rows_and_seed_lines():
    rows = lr.step_rows([("a", 10.0), ("b", 40.0)], 20.0)
    assert rows[2][2] == "4.00x" and rows[2][3] == "2.00x" and rows[-1][0].startswith("NumPy")
    assert lr.seed_lines("merged loops")[0][0] == 1151


@pytest.fixture(scope="module")
def device_trainer():
    device = gb.choose_device()
    ctx, queue = gb.make_queue(device)
    prob = lr.problem("small", J=256, iterations=20)
    return device, ctx, lr.Trainer(ctx, queue, prob)


@pytest.mark.parametrize("step,N,defines", [
    ("naive", 1, {}), ("reordered", 1, {}), ("merged", 1, {}),
    ("work_items", 8, {}), ("tree", 16, {}), ("float4", 4, {}), ("float4", 2, {}),
    ("fast", 32, {"SHUFFLE": 0, "RADIX": 4, "IN_REGS": 8}),
    ("fast", 64, {"SHUFFLE": 0, "RADIX": 16, "IN_REGS": 1}),
    ("fast", 32, {"SHUFFLE": 0, "RADIX": 2, "IN_REGS": 0, "SLICES": 1}),
    ("fast", 16, {"SHUFFLE": 0, "RADIX": 4, "IN_REGS": 8, "SLICES": 1}),
])
def test_kernels_train_like_the_reference(device_trainer, step, N, defines):
    device, ctx, trainer = device_trainer
    prob = trainer.prob
    if N > gb.launch.device_max(device):   # a small device says so (PoCL at 32)
        with pytest.raises(ValueError, match=f"work-group size {N} exceeds"):
            lr.build(ctx, device, step, prob.J, prob.K, N, **defines)
        return
    knl = lr.build(ctx, device, step, prob.J, prob.K, N, **defines)
    w, _ = trainer.train(knl, N)
    lr.check(w, prob.reference())
    # resuming from the weights after 5 iterations gives the same 20-iteration result
    w5, _ = trainer.train(knl, N, iterations=5)
    w20, _ = trainer.train(knl, N, iterations=15, w0=w5)
    lr.check(w20, prob.reference())


def test_timing_and_numpy_baseline(device_trainer):
    device, ctx, trainer = device_trainer
    knl = lr.build(ctx, device, "merged", trainer.prob.J, trainer.prob.K)
    timing, w = trainer.time(knl, 1, repeats=2)
    assert len(timing.samples) == 2 and timing.median > 0
    lr.check(w, trainer.prob.reference())
    assert lr.numpy_timing(trainer.prob, repeats=1).median > 0


def test_likelihood_curve_rises(device_trainer):
    device, ctx, trainer = device_trainer
    knl = lr.build(ctx, device, "merged", trainer.prob.J, trainer.prob.K)
    curve, w = lr.likelihood_curve(trainer, knl, 1, [0, 1, 5, 20])
    lls = [ll for _, ll in curve]
    assert lls == sorted(lls) and [n for n, _ in curve] == [0, 1, 5, 20]
    lr.check(w, trainer.prob.reference())


@pytest.mark.parametrize("rate", [1 / 2048, 1 / 3, 0.1, 2.5e-7])
def test_rate_literal_is_the_exact_float32(rate):
    text = lr.rate_literal(rate)
    assert text.endswith("f") and np.float32(float.fromhex(text[:-1])) == np.float32(rate)


def test_iteration_count_is_compiled_in(device_trainer):
    device, ctx, trainer = device_trainer
    knl = lr.build(ctx, device, "merged", trainer.prob.J, trainer.prob.K)
    # one build per count, with the count and the step size as build options
    assert knl.compiled(3, trainer.prob.rate) is not knl.compiled(4, trainer.prob.rate)
    assert knl.compiled(3, trainer.prob.rate) is knl.compiled(3, trainer.prob.rate)
    with pytest.raises(ValueError, match="at least 1"):
        knl.compiled(0, trainer.prob.rate)
    # three iterations trained by the 3-iteration build match the reference of three
    w, _ = trainer.train(knl, 1, iterations=3)
    lr.check(w, trainer.prob.reference(3))


def test_benchmark_opens_the_chapter(capsys):
    device, ctx, queue, scale, name = gb.open_device()
    assert scale in ("small", "full") and name == device.name.strip()
    prob, trainer, numpy_rate = lr.benchmark(ctx, queue, "small", name)
    assert (prob.J, prob.K) == (2048, 8) and trainer.prob is prob and numpy_rate > 0
    assert "NumPy on the host CPU" in capsys.readouterr().out
    assert lr.benchmark(ctx, queue, "small", name, with_numpy=False)[2] is None


def test_reduction_only_build_leaves_the_weights_alone(device_trainer):
    device, ctx, trainer = device_trainer
    for step in ("work_items", "tree"):
        knl = lr.build(ctx, device, step, trainer.prob.J, trainer.prob.K, 8, PER_ITEM=0)
        w, _ = trainer.train(knl, 8)
        assert np.all(w == 0), step          # no example, no gradient: w stays 0
        assert lr.reduction_only_timing(trainer, device, step, 8, repeats=1, iterations=5).median > 0
    with pytest.raises(ValueError, match="PER_ITEM"):
        lr.reduction_only_timing(trainer, device, "fast", 32)


def test_one_change_steps_add_one_option_per_row(device_trainer):
    device, ctx, trainer = device_trainer
    steps = lr.one_change_steps(device, trainer.prob.J, trainer.prob.K, 32)
    assert steps[0][1] == "float4" and all(step == "fast" for _, step, _ in steps[1:])
    for (_, _, before), (_, _, after) in zip(steps[1:], steps[2:]):
        assert sum(before[k] != after[k] for k in after) == 1, (before, after)
    recs = lr.time_steps(trainer, device, steps[:2], 32, repeats=1)
    assert [r["variant"] for r in recs] == [label for label, _, _ in steps[:2]]
    assert all(r["rate"] > 0 and r["kernel"] is not None for r in recs)


def test_reference_sweeps_rename_by_prefix_and_drop_empty(monkeypatch):
    entries = {"a": {"device": "GPU A", "data": {"examples": [{"variant": "fastest config, N = 128", "rate": 1}]}},
               "b": {"device": "CPU B", "data": {"examples": [{"variant": "float4, N = 4096", "rate": 2}]}}}
    monkeypatch.setattr(lr.measure, "other_devices", lambda chapter, device: entries)
    got = lr.reference_sweeps("04_vector_types", None, key="examples", prefixes={"fastest config": "mine"})
    assert got == {"GPU A": [{"variant": "mine", "rate": 1}]}
    assert lr.reference_sweeps("04_vector_types", None, key="examples", variants=["nothing"]) == {}


def test_device_label_says_what_the_device_is():
    gpu = {"device": "NVIDIA H100 80GB HBM3", "vendor": "NVIDIA Corporation", "platform": "NVIDIA CUDA",
           "data": {"kind": "GPU"}}
    cpu = {"device": "cpu-x", "vendor": "AuthenticAMD", "platform": "Portable Computing Language",
           "data": {"kind": "CPU"}}
    assert lr.device_label(gpu) == "NVIDIA H100 80GB HBM3, a GPU"
    assert lr.device_label(cpu) == "cpu-x, a CPU through PoCL"


def test_a_loop_cap_splits_training_over_launches(device_trainer, monkeypatch):
    """Mesa's llvmpipe stops each work-item's loops after 65,535 iterations per launch
    (gpubook.loopcap): chapters 1-4 failed there (2026-11-28, 59 cells). With a cap,
    Trainer runs the iterations in launches under it, w carried between them, and
    times their span; the weights are the reference's."""
    from gpubook.chapters.logreg import training

    device, ctx, trainer = device_trainer
    prob = trainer.prob                                      # J=256, K=8, 20 iterations
    # one work-item: J + 2JK over the examples, 1 × K partials, 2K for its one round, 2K + 1
    per_iteration = 2 * prob.J * prob.K + prob.J + prob.K + 2 * prob.K + 2 * prob.K + 1
    assert lr.iterations_per_launch(None, prob.J, prob.K, 20) == 20
    assert lr.iterations_per_launch(65_535, prob.J, prob.K, 20) == 65_535 // per_iteration
    # 32 work-items share the examples: more iterations fit in one launch
    assert lr.iterations_per_launch(65_535, prob.J, prob.K, 20, 32) > 65_535 // per_iteration
    with pytest.raises(ValueError, match="longer than this device's cap"):
        lr.iterations_per_launch(1000, prob.J, prob.K, 20)
    monkeypatch.setattr(training, "loop_cap", lambda device: 3 * per_iteration)   # 3 per launch
    knl = lr.build(ctx, device, "naive", prob.J, prob.K, 1)
    events = trainer.launch(knl, 1)
    assert isinstance(events, list) and len(events) == 7                      # 6 × 3 + 2
    w, _ = trainer.train(knl, 1)
    lr.check(w, prob.reference())
    timing, w_timed = trainer.time(knl, 1, repeats=2)
    assert timing.median > 0
    lr.check(w_timed, prob.reference())
