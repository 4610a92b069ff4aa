"""The orthogonality check, ||QᵀQ − I||_F (gpubook.orthogonality), on PoCL: what it
says of NumPy's own Q, of a Q that passes the Gram check and is still not
orthonormal, of CholeskyQR2's Q1 and Q and of TSQR's Q = A R^-1 at sizes that do not
divide the tiles, on a well-conditioned matrix and on one with κ = 1e8. cuSOLVER's
checks (gpubook.vendor_calls) run through a NumPy stand-in for PyTorch in
tests/test_vendor.py."""
import numpy as np
import pytest

from gpubook import orthogonality as orth
from gpubook.chapters.lsq import cholqr, claims, measure as lm, tsqr

SMALL = {"TM": 16, "TN": 16, "WM": 4, "WN": 4, "K": 4, "STAGES": 2}
WIDE = {"TM": 32, "TN": 16, "WM": 4, "WN": 4, "K": 4, "STAGES": 2}


conditioned = lm.conditioned           # U diag(1 .. cond) Vᵀ, κ = cond


@pytest.fixture(scope="module")
def cq(fp64_env):
    _, ctx, queue = fp64_env
    return cholqr.CholeskyQR2(ctx, queue, 13, gram_shape=SMALL, product_shape=WIDE, update_shape=SMALL,
                              inverse_shape=WIDE, block=8, band=16, tsqr_options={"block_rows": 64})


def test_numpy_qr_is_orthonormal_to_rounding():
    a = np.random.default_rng(1).standard_normal((500, 40))
    q, r = np.linalg.qr(a)
    assert orth.orthogonality(q) < 1e-14
    assert orth.orthogonality_from_r(a, r) < 1e-13              # Q = A R^-1 formed again on the host
    assert orth.orthogonality(np.eye(7)) == 0.0
    assert orth.orthogonality(2 * q) == pytest.approx(3 * np.sqrt(40), rel=1e-12)   # (4 - 1) I: the norm's scale


def test_a_cholesky_factor_of_the_gram_matrix_passes_the_gram_check_only():
    """The case the Gram check cannot see, with κ(A) = 1e6: the Cholesky factor of
    A'A as float64 holds it (the normal equations, CholeskyQR's one pass), and
    another of A'A perturbed by 1e-15 of its largest entry (about one rounding of
    A'A). Both reproduce A'A to rounding, and Q = A R^-1 is off by 1e-6 or more:
    NumPy's Householder Q of the same A is orthonormal to 1e-13, and A R^-1 formed
    on the host from its R is off by the solve's own u·κ, about 1e-10."""
    a = conditioned(400, 13, 1e6, seed=4)
    gram = a.T @ a
    e = np.random.default_rng(5).standard_normal(gram.shape)
    for g in (gram, gram + 1e-15 * np.abs(gram).max() * (e + e.T)):
        r = np.linalg.cholesky(g).T
        assert orth.gram_error(r, a) < 1e-14
        assert orth.orthogonality_from_r(a, r) > 1e-6
    assert orth.orthogonality(np.linalg.qr(a)[0]) < 1e-13
    assert orth.orthogonality_from_r(a, np.linalg.qr(a, mode="r")) < 1e-9


def test_bad_input_is_refused_clearly():
    with pytest.raises(ValueError, match="NaN or infinite"):
        orth.orthogonality(np.array([[1.0], [np.nan]]))
    with pytest.raises(ValueError, match="2-D"):
        orth.orthogonality(np.ones(3))
    with pytest.raises(ValueError, match="2-D"):
        orth.orthogonality(np.ones((3, 0)))
    with pytest.raises(ValueError, match="singular"):
        orth.orthogonality_from_r(np.ones((4, 2)), np.array([[1.0, 1.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="n x n"):
        orth.orthogonality_from_r(np.ones((4, 2)), np.eye(3))


@pytest.mark.parametrize("m, cond", [(1003, 10.0), (13, 1.0), (77, 1e3)])
def test_cholesky_qr2_keeps_q_orthonormal_on_well_conditioned_matrices(cq, m, cond):
    """13 columns (tiles of 16, blocks of 8, bands of 16) and rows that no tile divides."""
    a = conditioned(m, 13, cond, seed=m)
    r = cq.r_factor(a)
    assert cq.method == "CholeskyQR2"
    found = lm.cholqr2_orthogonality(cq, a)
    assert found["q"] <= 1e-13 and found["q1"] <= 1e-10
    assert lm.orthogonality_from_r(a, r) <= 1e-13 and lm.gram_error(r, a) < 1e-14
    with pytest.raises(ValueError, match="rows"):
        lm.cholqr2_orthogonality(cq, a[:-1] if m > 13 else np.vstack([a, a]))


def test_cholesky_qr2_at_condition_1e8_keeps_the_method_and_its_second_pass_repairs_q1(cq):
    """What happens at κ(A) = 1e8 (U diag Vᵀ, 1003 x 13): the first factor's diagonal
    ratio estimates κ at about 1e6, below the limit (1e7), so the step keeps CholeskyQR2
    and its check does not refuse. The first pass's Q1 is far from orthonormal
    (κ² u ≈ 1); the second pass brings Q back to rounding. Q = A R^-1 formed on the
    host from the same R is off by about u·κ: that measure is the solve's, not the
    method's."""
    a = conditioned(1003, 13, 1e8, seed=1)
    r = cq.r_factor(a)
    assert cq.method == "CholeskyQR2" and cq.cond_estimate < cholqr.COND_LIMIT < 1e8
    found = lm.cholqr2_orthogonality(cq, a)
    assert found["q1"] > 1e-3 and found["q"] <= 1e-13
    assert 1e-11 < lm.orthogonality_from_r(a, r) < 1e-6
    assert lm.gram_error(r, a) < 1e-14
    c = claims.second_pass({1e8: ("CholeskyQR2", found["q1"], found["q"])})
    assert c.held is True and "repairs what the first lost" in c.sentence


def test_above_the_limit_the_step_falls_back_and_says_how_q_was_formed(cq):
    a = conditioned(1003, 13, 1e12, seed=5)
    r = cq.r_factor(a)
    assert cq.method == "TSQR"
    found = lm.cholqr2_orthogonality(cq, a)
    assert found["q1"] is None and "TSQR" in found["how"]
    assert found["q"] == lm.orthogonality_from_r(a, r)


@pytest.mark.parametrize("m, cols", [(1003, 13), (130, 9), (64, 33)])
def test_tsqr_implicit_q_from_its_r(fp64_env, m, cols):
    """TSQR's implicit Q = A R^-1 on the host from the device's R: orthonormal to
    rounding on a well-conditioned matrix, at sizes that do not divide its blocks."""
    _, ctx, queue = fp64_env
    a = conditioned(m, cols, 10.0, seed=cols)
    r = tsqr.TSQR(ctx, queue, cols, block_rows=64).r_factor(a)
    assert lm.orthogonality_from_r(a, r) <= 1e-13


def test_claims_over_every_method():
    c = claims.orthogonal_q("lsq_orthogonality_test", {"a": 1e-15, "b": 3e-14, "cuSOLVER": None}, "m × n")
    assert c.held is True and c.values["worst_name"] == "b" and c.values["methods"] == 2
    c = claims.orthogonal_q("lsq_orthogonality_test", {"a": 1e-15, "b": 0.2}, "m × n")
    assert c.held is False and "b reaches 2.0e-01" in c.sentence
    assert claims.orthogonal_q("lsq_orthogonality_test", {"a": None}, "m × n").held is None
    # the vendor's Q is shown beside, not held to the floor (cuSOLVER's reached 3.0e-13 on an H200)
    c = claims.orthogonal_q("lsq_orthogonality_test", {"a": 1e-15, "cuSOLVER QR": 3e-13}, "m × n")
    assert c.held is True and c.values["methods"] == 1
    assert "for comparison, not held to it: cuSOLVER QR 3.0e-13" in c.sentence
    c = claims.orthogonal_q("lsq_orthogonality_test", {"a": 2e-13, "cuSOLVER QR": 3e-14}, "m × n")
    assert c.held is False and c.values["worst_name"] == "a"
    # part 8.3 names step 5's implicit Q (A R⁻¹ from a Householder R) beside cuSOLVER's
    c = claims.orthogonal_q("lsq_orthogonality_test", {"step 5": 1.1e-13, "cq2": 7e-14}, "m × n",
                            beside={"step 5"})
    assert c.held is True and c.values["worst_name"] == "cq2" and "step 5 1.1e-13" in c.sentence
    assert claims.second_pass({1e9: ("TSQR", None, 1e-8)}).held is None
    assert claims.second_pass({1e6: ("CholeskyQR2", 1e-5, 1e-9)}).held is False


def test_step5s_r_and_the_table_of_both_checks():
    """householder_r puts [R z; 0 sqrt(sserr)] together from a factor of [X y]; the table
    shows a dash for a check that did not run."""
    from types import SimpleNamespace

    a = conditioned(300, 9, 30.0, seed=2)
    r = np.linalg.qr(a, mode="r")
    factor = SimpleNamespace(triangular=lambda: (r[:8, :8], r[:8, 8]), sserr=r[8, 8] ** 2)
    r5 = lm.householder_r(factor)
    assert np.allclose(np.abs(r5), np.abs(r)) and lm.orthogonality_from_r(a, r5) < 1e-13
    table = lm.checks_table([{"method": "step 5", "matrix": "[X y]", "gram": lm.gram_error(r5, a),
                              "q": 2.5e-14, "how": "A R⁻¹ on the host"}]).data
    assert "| step 5 | [X y] |" in table and "| — | 2.5e-14 | A R⁻¹ on the host |" in table
    assert claims.second_pass({1e2: ("CholeskyQR2", 1e-15, 1e-15)}).held is False   # nothing to repair
