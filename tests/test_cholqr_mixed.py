"""CholeskyQR2 with its first Gram matrix in TF32 (gpubook.chapters.lsq.mixed), both
tensor-core kernels emulated on PoCL: R'R against A'A and Q's orthogonality in
float64 on a well-conditioned matrix whose sizes the tiles do not divide; the
float64 first pass taking over where the TF32 one cannot be trusted; the launches
grouped as the page's stages."""
import numpy as np
import pytest

from gpubook.chapters.lsq import measure as lm, mixed
from gpubook.chapters.lsq.rows import make_problem
from gpubook.orthogonality import gram_error, orthogonality_from_r


@pytest.fixture(scope="module")
def cq(fp64_env):
    _, ctx, queue = fp64_env
    return mixed.MixedCholeskyQR2(ctx, queue, 41, emulate=True)


def regression(m, n):
    x, y = make_problem(m, n)
    return np.column_stack([x, y])


def test_tf32_first_pass_gives_float64_accuracy(cq):
    """The regression of the page at 300 x 41: R to float64's rounding although G1 is
    TF32's (its own error is about 1e-4)."""
    a = regression(300, 40)
    found, r = lm.time_factor(cq, a, repeats=1)
    assert (found["method"], cq.first, cq.first_reason) == ("CholeskyQR2", "TF32", "")
    assert gram_error(r, a) <= 1e-14
    assert orthogonality_from_r(a, r) <= 1e-13
    assert [label for label in found["stage_s"]] == lm.STAGE_LABELS
    assert {"narrow_rows", "wgmma_gram", "widen_lower"} <= set(found["by_kernel"])
    # Q1 really came from the TF32 Gram matrix: far from orthonormal by float64's standard,
    # as a float64 first pass leaves it
    q1 = lm.cholqr2_orthogonality(cq, a)["q1"]
    assert 1e-8 < q1 < 1e-2


def test_float64_first_pass_where_tf32_is_not_trusted(cq):
    """cond(A) = 1e4: the first factor's ratio is over the limit, so the whole
    factorisation runs again with G1 in float64, which then holds R."""
    a = lm.conditioned(300, 41, 1e4, seed=2)
    found, r = lm.time_factor(cq, a, repeats=1)
    assert found["method"] == "CholeskyQR2" and cq.first == "float64"
    assert "above the TF32 limit" in cq.first_reason or "cond(Q1)" in cq.first_reason
    assert gram_error(r, a) <= 1e-14
    checks = lm.cholqr2_orthogonality(cq, a)
    assert checks["q"] <= 1e-13 and checks["q1"] <= 1e-7     # Q1 from the float64 pass (k^2 u = 1e-8)


def test_limits_are_checked_from_the_pivots(fp64_env):
    """A limit of 1 on the first ratio sends even a well-conditioned matrix to the
    float64 pass, with the reason; the next factorisation tries TF32 again."""
    _, ctx, queue = fp64_env
    cq = mixed.MixedCholeskyQR2(ctx, queue, 41, mixed_limit=1.0, emulate=True)
    a = regression(200, 40)
    r = cq.r_factor(a)
    assert cq.first == "float64" and "above the TF32 limit 1" in cq.first_reason
    assert gram_error(r, a) <= 1e-14
    cq.mixed_limit = mixed.MIXED_LIMIT
    cq.r_factor(a)
    assert cq.first == "TF32" and cq.first_reason == ""


def test_unknown_mode_is_refused(fp64_env):
    _, ctx, queue = fp64_env
    with pytest.raises(ValueError, match="unknown mode"):
        mixed.MixedCholeskyQR2(ctx, queue, 8, mode="fp8", emulate=True)


def test_available_says_why_not_off_nvidia(fp64_env):
    _, ctx, queue = fp64_env
    ok, why = mixed.available(ctx, queue)
    if "NVIDIA" not in queue.device.platform.name:
        assert not ok and "Hopper" in why


def test_narrow_widen_and_diagonal_kernels(fp64_env):
    """kernels/lsq/8_mixed.cl alone, at sizes that leave padding: A narrowed into a
    zero-padded float32 matrix, a float32 matrix's lower triangle widened, a diagonal
    moved; what lies outside each kernel's part is left as it was."""
    import pyopencl as cl
    from gpubook.kernels import kernel

    _, ctx, queue = fp64_env
    mf, i32 = cl.mem_flags, np.int32
    rng = np.random.default_rng(3)
    a = rng.standard_normal((7, 5))
    x = np.full((9, 8), np.nan, np.float32)
    ab = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
    xb = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=x)
    kernel(ctx, mixed.PATH, "narrow_rows")(queue, (8, 9), None, ab, i32(7), i32(5), i32(5), xb, i32(9), i32(8))
    cl.enqueue_copy(queue, x, xb)
    want = np.zeros((9, 8), np.float32)
    want[:7, :5] = a.astype(np.float32)
    assert np.array_equal(x, want)
    cf = rng.standard_normal((8, 8)).astype(np.float32)
    g = np.full((5, 5), -7.0)
    cb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=cf)
    gbuf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=g)
    kernel(ctx, mixed.PATH, "widen_lower")(queue, (5, 5), None, cb, i32(8), i32(5), gbuf)
    kernel(ctx, mixed.PATH, "add_to_diagonal")(queue, (5,), None, gbuf, i32(5), np.float64(-1.0))
    cl.enqueue_copy(queue, g, gbuf)
    want = np.where(np.tril(np.ones((5, 5), bool)), cf[:5, :5].astype(np.float64), -7.0) - np.eye(5)
    assert np.array_equal(g, want)


def test_busy_seconds_counts_overlap_once():
    from types import SimpleNamespace as NS
    evs = [NS(profile=NS(start=s, end=e)) for s, e in ((0, 10), (5, 12), (20, 25), (21, 22))]
    assert lm.busy_seconds(evs) == pytest.approx(17e-9)
