"""Chapter 8's figures: the row update's owners follow the kernel's loop, the
compact form is the product of the reflections, and the figures draw."""
import matplotlib.pyplot as plt
import numpy as np
import pytest

from gpubook.chapters.lsq import figures as lf
from test_figures_style import every_figure_is_legible  # noqa: F401 (autouse: checks every figure)


def test_row_update_owners_follow_the_kernel_loop():
    n, wg = 11, 4
    own = lf.row_update_owners(n, wg)
    want = np.full((n, n), -1)
    for i in range(n):
        for lid in range(wg):
            for k in range(i + 1 + lid, n, wg):       # 2_row_group.cl's loop
                want[i, k] = lid
    assert np.array_equal(own, want)
    with pytest.raises(ValueError):
        lf.row_update_owners(0, 4)


def test_compact_form_is_the_product_of_the_reflections():
    rng = np.random.default_rng(8)
    r, b = rng.standard_normal((5, 5)), rng.standard_normal((9, 5))
    v, t, out = lf.compact_wy(r, b)
    assert lf.wy_error(v, t) < 1e-13
    assert np.allclose(np.tril(t, -1), 0) and np.allclose(v[:5], np.eye(5))
    q = np.eye(14) - v @ t @ v.T
    reflected = q.T @ np.vstack([np.triu(r), b])
    assert np.abs(reflected[5:]).max() < 1e-12                 # B reflected to zero
    assert np.allclose(reflected[:5], np.triu(out[:5]))        # R as house_step leaves it
    assert np.allclose(q.T @ q, np.eye(14))


def test_panels_and_parts():
    assert lf.panels(10, 4) == [(0, 4), (4, 4), (8, 2)]
    part = lf.blocked_parts(12, 10, 4, 4, 1)
    names = list(lf.PART_COLOURS)
    assert (part[12:, 5] == names.index("column")).all() and part[5, 5] == names.index("column")
    assert (part[:, 12] == names.index("response")).all()
    with pytest.raises(ValueError):
        lf.blocked_parts(12, 10, 4, 8, 4)


def test_the_figures_draw():
    v, t, _ = lf.compact_wy(np.eye(3) * 2, np.ones((4, 3)))
    for fig in (lf.draw_row_update(10, 4), lf.draw_blocked_qr(), lf.draw_compact_wy(v, t)):
        assert fig.axes and fig.patch.get_alpha() == 1.0
    plt.close("all")


def test_the_conditioning_figure_draws_cusolver_where_the_rows_have_it():
    """draw_conditioning: a line per method, cuSOLVER's beside them only where with_vendor
    added it; a method that broke down is an open marker on the top edge."""
    rows = [{"cond": c, "CholeskyQR": c * c * 1e-16 if c < 1e8 else None,
             "CholeskyQR2": 1e-15 if c < 1e8 else None, "shifted CholeskyQR3": 2e-15, "chosen": 2e-15}
            for c in (1e2, 1e6, 1e10, 1e14)]
    labels = [ln.get_label() for ln in lf.draw_conditioning(rows, "t").axes[0].get_lines()]
    assert "cuSOLVER (Householder)" not in labels and "chosen from the estimate" in labels
    with_it = [dict(r, cuSOLVER=3e-14) for r in rows]
    labels = [ln.get_label() for ln in lf.draw_conditioning(with_it, "t").axes[0].get_lines()]
    assert "cuSOLVER (Householder)" in labels
    plt.close("all")
