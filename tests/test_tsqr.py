"""Chapter 8's communication-avoiding panel (gpubook.chapters.tsqr) in float64
against NumPy: odd sizes, blocks in local and in global memory, repeated
columns, and least squares with the response carried along."""
import numpy as np
import pyopencl as cl
import pytest

from gpubook.chapters import lsq
from gpubook.chapters.lsq import tsqr

def assert_r_matches(r, a):
    """R'R = A'A to 1e-12 of its largest entry, |R| = |numpy's R| (rows may differ in sign)."""
    assert np.all(np.isfinite(r))
    assert np.allclose(r, np.triu(r))
    assert tsqr.gram_error(r, a) < 1e-12
    ref = np.linalg.qr(a, mode="r")
    k = min(a.shape)
    assert np.max(np.abs(np.abs(r[:k]) - np.abs(ref[:k]))) <= 1e-12 * np.max(np.abs(ref))
    assert not np.any(r[k:])  # rows past the rank of a short matrix are zero


@pytest.mark.parametrize("m, cols, block_rows, in_local", [
    (1001, 13, 64, None),    # 16 leaves and a partial one: a tree of 5 levels, odd counts
    (777, 7, None, False),   # blocks factored in place in global memory
    (90, 33, 8, None),       # more than 32 columns; leaves of fewer rows than columns
    (5, 13, 64, None),       # fewer rows than columns
    (1, 7, None, False),
])
def test_tsqr_matches_numpy(fp64_env, m, cols, block_rows, in_local):
    _, ctx, queue = fp64_env
    a = np.random.default_rng(m + cols).standard_normal((m, cols))
    qr = tsqr.TSQR(ctx, queue, cols, block_rows=block_rows, in_local=in_local)
    if in_local is False:
        assert not any(qr.in_local.values())
    assert qr.leaves(m) == -(-m // qr.BR)
    assert_r_matches(qr.r_factor(a), a)


def guarded_triangles(ctx, queue, qr, count, guard=512):
    """Give qr its two triangle buffers (Ra, Rb) for `count` leaves, each with
    `guard` more doubles after them, every value NaN; returns them."""
    size = 8 * (count * qr.C ** 2 + guard)
    bufs = [cl.Buffer(ctx, cl.mem_flags.READ_WRITE, size) for _ in range(2)]
    for buf in bufs:
        cl.enqueue_fill_buffer(queue, buf, np.float64(np.nan), 0, size)
    qr.Ra, qr.Rb = bufs
    qr._capacity = count
    return bufs


@pytest.mark.parametrize("leaves, in_local", [(2, None), (4, None), (5, None), (6, None), (7, None),
                                              (4, False), (5, False)])
def test_no_work_group_writes_past_its_triangle(fp64_env, leaves, in_local):
    """The leaves write triangles 0 .. leaves-1 of Ra, the first tree level
    triangles 0 .. ceil(leaves/2)-1 of Rb, later levels fewer: nothing past
    them. With an early return in tsqr_tree (where it copied an unpaired
    triangle), PoCL 3.0's loopvec work-group method ran write_r's loop for every
    work-item, so each pair wrote WG - C*C values past its triangle: into the
    next pair's triangle (a wrong R whenever that group had finished first, as
    after Includ's run on the other thread) or past the buffer's end. NaN in
    the buffers makes it deterministic: leaves = 2, 4 and 6 wrote into Rb's tail."""
    _, ctx, queue = fp64_env
    qr = tsqr.TSQR(ctx, queue, 7, block_rows=64, in_local=in_local)
    m = (leaves - 1) * qr.BR + 44                       # a partial last leaf
    a = np.random.default_rng(leaves).standard_normal((m, 7))
    assert qr.leaves(m) == leaves
    ra, rb = guarded_triangles(ctx, queue, qr, leaves)
    qr.enqueue(qr.upload(a), m)
    assert_r_matches(qr.r(), a)
    for buf, written in ((ra, leaves), (rb, -(-leaves // 2))):
        host = np.empty(buf.size // 8)
        cl.enqueue_copy(queue, host, buf)
        past = np.flatnonzero(~np.isnan(host[written * qr.C ** 2:]))
        assert not past.size, f"{past.size} values written past triangle {written - 1} (leaves = {leaves})"


def test_tsqr_after_includ_in_the_same_context(fp64_env):
    """The reported case: a row-group Includ run, then TSQR of 300 x 7 rows
    (5 leaves, unpaired triangles at two levels) gave a Gram error of ~0.1 in
    up to half the runs on PoCL (2 threads) before the tree kernel lost its
    early return. A race between work-groups, so this catches the old code only
    now and then; the test above catches it every time."""
    _, ctx, queue = fp64_env
    x, y = lsq.make_problem(300, 6)
    a = np.column_stack([x, y])
    qr = tsqr.TSQR(ctx, queue, 7, block_rows=64)
    errors = []
    for _ in range(25):
        lsq.Includ(ctx, queue, 6, "2_row_group").run(x, y)     # a new one each time, as reported
        errors.append(tsqr.gram_error(qr.r_factor(a), a))
    assert max(errors) < 1e-12, f"{sum(e >= 1e-12 for e in errors)} of 25 runs wrong, worst {max(errors):.1e}"


def test_repeated_columns_give_zero_diagonal_not_nan(fp64_env):
    _, ctx, queue = fp64_env
    rng = np.random.default_rng(3)
    a = rng.standard_normal((500, 13))
    a[:, 4] = a[:, 1]                    # a repeat
    a[:, 7] = 2 * a[:, 0] - a[:, 2]      # a combination
    a[:, 9] = 0.0                        # a zero column
    r = tsqr.TSQR(ctx, queue, 13, block_rows=64).r_factor(a)
    assert np.all(np.isfinite(r))
    scale = np.max(np.abs(r))
    dependent = [4, 7, 9]
    assert np.all(np.abs(np.diag(r)[dependent]) < 1e-12 * scale)
    assert np.all(np.abs(np.delete(np.diag(r), dependent)) > 1e-3 * scale)
    assert tsqr.gram_error(r, a) < 1e-12


def test_least_squares_with_the_response_as_a_column(fp64_env):
    _, ctx, queue = fp64_env
    x, y = lsq.make_problem(3001, 12)
    qr = tsqr.TSQR(ctx, queue, 13, block_rows=64)
    rt, z, rss = qr.least_squares(x, y)
    assert rss == pytest.approx(lsq.rss_lstsq(x, y), rel=1e-10)
    coef = np.linalg.solve(rt, z)
    assert np.allclose(coef, np.linalg.lstsq(x, y, rcond=None)[0], rtol=1e-10, atol=1e-12)
    f = qr.factor(x, y)                  # Miller's form, as chapter 8's other steps hold it
    assert lsq.factor_error(f, x) < 1e-12
    assert f.rss_nested()[-1] == pytest.approx(rss, rel=1e-12)


def test_bad_input_is_refused_clearly(fp64_env):
    _, ctx, queue = fp64_env
    qr = tsqr.TSQR(ctx, queue, 13, block_rows=64)
    with pytest.raises(ValueError, match="a must have 13 columns"):
        qr.r_factor(np.ones((10, 5)))
    with pytest.raises(ValueError, match="NaN or infinite"):
        qr.r_factor(np.full((10, 13), np.nan))
    with pytest.raises(ValueError, match="a must have at least 1 row"):
        qr.r_factor(np.ones((0, 13)))
    with pytest.raises(ValueError, match="y must hold 10 values"):
        qr.least_squares(np.ones((10, 12)), np.ones(9))


def test_tall_skinny_million_by_128_on_a_gpu(fp64_env):
    device, ctx, queue = fp64_env
    if not device.type & cl.device_type.GPU:
        pytest.skip("the 1,000,000 x 128 case runs on a GPU only (CPU: minutes)")
    rng = np.random.default_rng(7)
    a = rng.standard_normal((1_000_000, 128))
    r = tsqr.TSQR(ctx, queue, 128).r_factor(a)
    assert tsqr.gram_error(r, a) < 1e-12
    ref = np.linalg.qr(a, mode="r")
    assert np.max(np.abs(np.abs(r) - np.abs(ref))) <= 1e-10 * np.max(np.abs(ref))


def test_on_a_cpu_a_work_group_has_at_most_eight_rows(fp64_env):
    """Debian's PoCL corrupts memory running tsqr_tree with 16 or more rows of work-items."""
    device, ctx, queue = fp64_env
    if not device.type & cl.device_type.CPU:
        pytest.skip("a GPU keeps the work-groups asked for")
    for cols in (1, 3, 7, 40):
        qr = tsqr.TSQR(ctx, queue, cols)
        for name, wg in qr.wg.items():
            assert wg // tsqr._columns_per_row(cols, wg) <= 8, (cols, name, wg)
