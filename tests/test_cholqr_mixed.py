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
