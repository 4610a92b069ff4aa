"""gpubook.dmma (the FP64 tensor-core product, kernels/tensor/dmma_tiles.cl, in
Ampere's m8n8k4 shape and Hopper's m16n8k4 and m16n8k8)
run emulated on PoCL against NumPy float64: offsets, strides, sizes that are
not multiples of the tile or of the mma shape, chunks of rows, the triangle,
the upper triangle of a triangular product, alpha and accumulation; and chapter 8's CholeskyQR2 with its products there.
On an NVIDIA GPU the same kernel runs on the tensor cores (the mma layout
itself is checked by tests/test_tensor.py)."""
import os

import numpy as np
import pyopencl as cl
import pytest

from gpubook import dmma
from gpubook.chapters.lsq import cholqr, tsqr

SMALL = {"TM": 16, "TN": 16, "WARPS_M": 2, "WARPS_N": 1, "KC": 4, "MMA": "m8n8k4"}
# Hopper's shapes: fragments of 16 x 8, two warps along i or along j; one with a single local stage
HOPPER = {"TM": 32, "TN": 16, "WARPS_M": 2, "WARPS_N": 1, "KC": 8, "MMA": "m16n8k4"}
HOPPER_K8 = {"TM": 16, "TN": 32, "WARPS_M": 1, "WARPS_N": 2, "KC": 8, "MMA": "m16n8k8"}
HOPPER_ONE_STAGE = {"TM": 32, "TN": 32, "WARPS_M": 2, "WARPS_N": 2, "KC": 12, "STAGES": 1, "MMA": "m16n8k4"}
SHAPES = {"m8n8k4": SMALL, "m16n8k4": HOPPER, "m16n8k8": HOPPER_K8, "one stage": HOPPER_ONE_STAGE,
          "m16n8k4 paired loads": {**HOPPER, "PAIRS": 1},
          "m16n8k8 paired, one stage": {**HOPPER_K8, "KC": 16, "STAGES": 1, "PAIRS": 1},
          "m8n8k4 paired": {"TM": 32, "TN": 32, "WARPS_M": 2, "WARPS_N": 1, "KC": 8, "MMA": "m8n8k4", "PAIRS": 1}}
# On a GPU host, GPUBOOK_DMMA_NATIVE=1 runs every test on the tensor cores instead.
SHAPES["m16n8k4 8 across"] = {**HOPPER, "ACROSS": 8}
SHAPES["one stage, 4 across"] = {**HOPPER_ONE_STAGE, "ACROSS": 4}
EMULATE = os.environ.get("GPUBOOK_DMMA_NATIVE") != "1"


def run(ctx, queue, a, b, c0, **kw):
    mf = cl.mem_flags
    bufs = [cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(h)) for h in (a, b, c0)]
    dmma.product(queue, kw.pop("shape", SMALL), bufs[0], kw.pop("a_off"), kw.pop("lda"), bufs[1], kw.pop("b_off"),
                 kw.pop("ldb"), bufs[2], kw.pop("c_off"), kw.pop("ldc"), emulate=EMULATE, **kw).wait()
    out = np.empty_like(c0)
    cl.enqueue_copy(queue, out, bufs[2])
    return out


@pytest.mark.parametrize("tile", list(SHAPES))
@pytest.mark.parametrize("m, n, rows, chunk", [(37, 21, 29, None), (16, 16, 8, None), (5, 40, 53, 12), (1, 1, 1, None)])
def test_product_matches_numpy(fp64_env, m, n, rows, chunk, tile):
    """Sizes that are not multiples of the tile nor of the fragments (8 or 16 x 8, 4 or 8 deep)."""
    _, ctx, queue = fp64_env
    rng = np.random.default_rng(m * n + rows)
    lda, ldb, ldc = m + 3, n + 2, n + 1
    a = rng.standard_normal((rows + 2) * lda)
    b = rng.standard_normal((rows + 2) * ldb)
    chunks = 1 if chunk is None else -(-rows // chunk)
    c0 = rng.standard_normal(chunks * (m + 1) * ldc + 5)
    out = run(ctx, queue, a, b, c0, a_off=1, lda=lda, b_off=2, ldb=ldb, c_off=3, ldc=ldc, m=m, n=n, k_begin=1,
              k_end=1 + rows, k_chunk=chunk, c_stride=(m + 1) * ldc, alpha=-0.5, accumulate=True,
              shape=SHAPES[tile])
    A = a[1:1 + (rows + 1) * lda].reshape(rows + 1, lda)[1:, :m]
    B = b[2:2 + (rows + 1) * ldb].reshape(rows + 1, ldb)[1:, :n]
    expect = c0.copy()
    for h in range(chunks):
        lo, hi = (0, rows) if chunk is None else (h * chunk, min(rows, (h + 1) * chunk))
        block = expect[3 + h * (m + 1) * ldc:][:m * ldc].reshape(m, ldc)
        block[:, :n] += -0.5 * A[lo:hi].T @ B[lo:hi]
    assert np.max(np.abs(out - expect)) <= 1e-13 * max(1.0, np.max(np.abs(expect)))


@pytest.mark.parametrize("tile", [SMALL, {**HOPPER, "TN": 32, "WARPS_N": 2}])
def test_triangle_writes_only_tiles_on_and_below_the_diagonal(fp64_env, tile):
    _, ctx, queue = fp64_env
    rng = np.random.default_rng(1)
    n, t = 2 * tile["TM"] + 3, tile["TM"]
    x = rng.standard_normal((23, n))
    c0 = np.full(n * n, 7.0)
    out = run(ctx, queue, x, x, c0, a_off=0, lda=n, b_off=0, ldb=n, c_off=0, ldc=n, m=n, n=n, k_begin=0,
              k_end=23, triangle=True, shape=tile).reshape(n, n)
    g = x.T @ x
    low = np.tril_indices(n)
    assert np.max(np.abs(out[low] - g[low])) <= 1e-13 * np.max(np.abs(g))
    assert out[0, t] == 7.0 and out[0, n - 1] == 7.0 and out[t, 2 * t] == 7.0  # tiles above the diagonal


@pytest.mark.parametrize("tile", ["m16n8k4", "one stage", "m16n8k8 paired, one stage", "m8n8k4",
                                  "m16n8k4 8 across", "one stage, 4 across"])
@pytest.mark.parametrize("m, n, rows, chunk", [(37, 21, 29, None), (5, 40, 53, 12), (129, 9, 129, None)])
def test_a_given_the_other_way_round(fp64_env, m, n, rows, chunk, tile):
    """a_trans: C[i][j] = alpha * sum over k of A[a_off + i*lda + k] B[k][j], as
    Q1 = A R^-1 reads a matrix stored by rows; sizes off the tiles and the steps."""
    _, ctx, queue = fp64_env
    rng = np.random.default_rng(m + n + rows)
    lda, ldb, ldc = rows + 5, n + 2, n + 1
    a = rng.standard_normal(m * lda + 8)
    b = rng.standard_normal((rows + 2) * ldb)
    chunks = 1 if chunk is None else -(-rows // chunk)
    c0 = rng.standard_normal(chunks * m * ldc + 4)
    out = run(ctx, queue, a, b, c0, a_off=2, lda=lda, b_off=1, ldb=ldb, c_off=4, ldc=ldc, m=m, n=n, k_begin=1,
              k_end=1 + rows, k_chunk=chunk, c_stride=m * ldc, alpha=2.0, accumulate=True, a_trans=True,
              shape=SHAPES[tile])
    A = a[2:2 + m * lda].reshape(m, lda)[:, 1:1 + rows]          # A[i][k]
    B = b[1:1 + (rows + 1) * ldb].reshape(rows + 1, ldb)[1:, :n]
    expect = c0.copy()
    for h in range(chunks):
        lo, hi = (0, rows) if chunk is None else (h * chunk, min(rows, (h + 1) * chunk))
        expect[4 + h * m * ldc:][:m * ldc].reshape(m, ldc)[:, :n] += 2.0 * A[:, lo:hi] @ B[lo:hi]
    assert np.max(np.abs(out - expect)) <= 1e-13 * max(1.0, np.max(np.abs(expect)))


UPPER_TILES = {"m8n8k4": SMALL, "m16n8k4, warps along j": {**HOPPER, "TN": 32, "WARPS_N": 2},
               "one stage": HOPPER_ONE_STAGE, "m8n8k4 paired": SHAPES["m8n8k4 paired"]}


@pytest.mark.parametrize("tile", list(UPPER_TILES))
@pytest.mark.parametrize("accumulate", [True, False])
@pytest.mark.parametrize("c, k_begin, k_end, chunk", [(5, 0, 5, None), (40, 0, 40, 12), (53, 2, 50, 12),
                                                      (70, 0, 70, 16), (70, 7, 70, None)])
def test_upper_gives_the_product_of_a_lower_and_an_upper_triangle(fp64_env, c, k_begin, k_end, chunk,
                                                                   accumulate, tile):
    """upper: C = alpha L'U (+ C) for a lower-triangular L and an upper-triangular U,
    square, in one launch of the tiles on and above the diagonal, each over its rows
    max(k0, i0)..min(k1, j0 + TN) only: the terms those clip away hold NaN here, so a
    read of one would show. Sizes off the tile, rows in chunks of k_chunk at c_stride,
    offsets and strides; within 1e-12 of NumPy's float64 product relative to its largest
    term. The tiles below the diagonal keep what C held."""
    _, ctx, queue = fp64_env
    shape = UPPER_TILES[tile]
    t = shape["TM"]
    rng = np.random.default_rng(c + k_begin + 100 * accumulate)
    low, up = np.tril(rng.standard_normal((c, c))), np.triu(rng.standard_normal((c, c)))
    k, col = np.indices((c, c))
    low_nan, up_nan = low.copy(), up.copy()
    low_nan[k < col // t * t] = np.nan                 # rows above the first row of the column's tile of C
    up_nan[k >= (col // t + 1) * t] = np.nan           # rows past the last column of the column's tile
    lda, ldb, ldc = c + 3, c + 2, c + 1
    a = rng.standard_normal(c * lda + 4)
    b = rng.standard_normal(c * ldb + 4)
    a[1:1 + c * lda].reshape(c, lda)[:, :c] = low_nan
    b[2:2 + c * ldb].reshape(c, ldb)[:, :c] = up_nan
    rows = k_end - k_begin
    chunks = 1 if chunk is None else -(-rows // chunk)
    stride = (c + 1) * ldc
    c0 = rng.standard_normal(chunks * stride + 5)
    out = run(ctx, queue, a, b, c0, a_off=1, lda=lda, b_off=2, ldb=ldb, c_off=3, ldc=ldc, m=c, n=c,
              k_begin=k_begin, k_end=k_end, k_chunk=chunk, c_stride=stride, alpha=-0.5, accumulate=accumulate,
              upper=True, shape=shape)
    expect = c0.copy()
    above = np.triu(np.ones((c, c), bool))
    tiles_below = (np.arange(c)[:, None] // t) > (np.arange(c)[None, :] // t)
    for h in range(chunks):
        lo, hi = (k_begin, k_end) if chunk is None else (k_begin + h * chunk, min(k_end, k_begin + (h + 1) * chunk))
        block = expect[3 + h * stride:][:c * ldc].reshape(c, ldc)[:, :c]
        product = -0.5 * low[lo:hi].T @ up[lo:hi]
        assert np.all(product[~above] == 0)
        block[above] = block[above] * accumulate + product[above]
        got = out[3 + h * stride:][:c * ldc].reshape(c, ldc)[:, :c]
        assert np.all(got[tiles_below] == block[tiles_below])                 # not written
        if accumulate:
            assert np.all(got[~above] == block[~above])                       # += exact zeros
        else:
            assert np.all(got[~above & ~tiles_below] == 0)
            block[~above & ~tiles_below] = 0
    assert np.all(np.isfinite(out))
    assert np.max(np.abs(out - expect)) <= 1e-12 * max(1.0, np.max(np.abs(expect)))


def test_upper_is_refused_with_the_triangle_a_the_other_way_round_or_off_the_square(fp64_env):
    _, ctx, queue = fp64_env
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 8 * 64)
    for kw, words in (({"triangle": True}, "exclude each other"), ({"a_trans": True}, "other way round")):
        with pytest.raises(ValueError, match=words):
            dmma.product(queue, SMALL, buf, 0, 8, buf, 0, 8, buf, 0, 8, 8, 8, 0, 8, upper=True, emulate=EMULATE,
                         **kw)
        with pytest.raises(ValueError, match=words):
            dmma.get_kernel(ctx, queue.device, SMALL, emulate=True, upper=True, **kw)
    with pytest.raises(ValueError, match="needs a square C"):
        dmma.product(queue, SMALL, buf, 0, 8, buf, 0, 8, buf, 0, 8, 8, 7, 0, 8, upper=True, emulate=EMULATE)
    with pytest.raises(ValueError, match="upper .* needs square tiles"):
        dmma.get_kernel(ctx, queue.device, HOPPER, emulate=True, upper=True)
    with pytest.raises(ValueError, match="FP64 tensor cores only"):
        cholqr.Products(emulate=True).check(ctx, queue.device, cholqr.PRODUCT_SHAPE, upper=True)
    assert cholqr.Products.upper_in_one(SMALL) and not cholqr.Products.upper_in_one(HOPPER)
    assert not cholqr.Products.upper_in_one(cholqr.PRODUCT_SHAPE)


def test_a_the_other_way_round_is_refused_in_the_triangle(fp64_env):
    _, ctx, queue = fp64_env
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 8 * 64)
    with pytest.raises(ValueError, match="other way round"):
        dmma.product(queue, SMALL, buf, 0, 8, buf, 0, 8, buf, 0, 8, 8, 8, 0, 8, triangle=True, a_trans=True,
                     emulate=EMULATE)


def test_bad_shapes_are_refused(fp64_env):
    _, ctx, queue = fp64_env
    with pytest.raises(ValueError, match="multiple of 8 WARPS_M"):
        dmma.get_kernel(ctx, queue.device, {**SMALL, "TM": 12}, emulate=True)
    with pytest.raises(ValueError, match="square tiles"):
        dmma.get_kernel(ctx, queue.device, {**SMALL, "TM": 32}, triangle=True, emulate=True)
    with pytest.raises(ValueError, match="with m16n8k4, TM must be a multiple of 16 WARPS_M"):
        dmma.get_kernel(ctx, queue.device, {**SMALL, "MMA": "m16n8k4"}, emulate=True)
    with pytest.raises(ValueError, match="KC of 8"):
        dmma.get_kernel(ctx, queue.device, {**HOPPER_K8, "KC": 12}, emulate=True)
    with pytest.raises(ValueError, match="STAGES is 1 or 2"):
        dmma.get_kernel(ctx, queue.device, {**HOPPER, "STAGES": 3}, emulate=True)
    with pytest.raises(ValueError, match="unknown FP64 mma shape"):
        dmma.get_kernel(ctx, queue.device, {**SMALL, "MMA": "m8n8k8"}, emulate=True)
    with pytest.raises(ValueError, match="ACROSS"):
        dmma.get_kernel(ctx, queue.device, {**HOPPER, "ACROSS": 16}, emulate=True)
    with pytest.raises(ValueError, match="PAIRS is 0 or 1, and 1 needs"):
        dmma.get_kernel(ctx, queue.device, {**SMALL, "PAIRS": 1}, emulate=True)


def test_local_bytes_and_labels():
    """Rows of TM + 4 doubles with paired loads (blocks 16 wide), TM + 8 without."""
    assert dmma.pairs(dmma.SHAPE) == dmma.pairs(HOPPER) == 0 and dmma.pairs({**HOPPER, "PAIRS": 1}) == 1
    assert dmma.local_bytes(dmma.SHAPE) == 2 * 8 * 16 * (64 + 64 + 16) + 8
    assert dmma.local_bytes({**dmma.SHAPE, "PAIRS": 1}) == 2 * 8 * 16 * (64 + 64 + 8) + 8
    assert dmma.local_bytes({**dmma.SHAPE, "STAGES": 1, "KC": 32}) == 8 * 32 * 144 + 8
    assert dmma.local_bytes(SMALL, emulate=True) == 2 * 8 * 4 * 48 + 8 * (32 + 32) * 2
    assert dmma.local_bytes(HOPPER, emulate=True) == 2 * 8 * 8 * 64 + 8 * (64 + 32) * 2
    assert dmma.label(HOPPER_ONE_STAGE) == "32x32 tile, 2x2 warps, K=12, one local stage, FP64 mma m16n8k4"
    assert dmma.label(dmma.SHAPE) == "64x64 tile, 2x2 warps, K=16, FP64 mma"


def test_not_nvidia_says_why(fp64_env):
    device, ctx, queue = fp64_env
    from gpubook import tensor
    if tensor.available(device)[0]:
        pytest.skip("this device has the tensor cores")
    with pytest.raises(tensor.TensorCoreError, match="not NVIDIA"):
        dmma.get_kernel(ctx, device, SMALL)


@pytest.mark.parametrize("tile", [SMALL, {**HOPPER, "TN": 32, "WARPS_N": 2}])
def test_cholesky_qr2_with_its_products_on_the_tensor_core_kernel(fp64_env, tile):
    _, ctx, queue = fp64_env
    rng = np.random.default_rng(5)
    a = rng.standard_normal((203, 21))
    cq = cholqr.CholeskyQR2(ctx, queue, 21, block=8, band=16, mma=True, emulate=EMULATE,
                            gram_shape=tile, product_shape=tile, update_shape=tile)
    r = cq.r_factor(a)
    assert cq.method == "CholeskyQR2"
    assert tsqr.gram_error(r, a) < 1e-12
    ref = np.linalg.qr(a, mode="r")
    assert np.max(np.abs(np.abs(r) - np.abs(ref))) <= 1e-10 * np.max(np.abs(ref))


@pytest.mark.parametrize("tile, launches", [(SMALL, 1), (HOPPER, 6)])
def test_cholesky_qr2_takes_r2_r1_in_one_launch_on_square_tensor_core_tiles(fp64_env, tile, launches):
    """R = R2 R1 of 70 columns: one launch of dmma.product's upper in square tiles;
    band by band (bands of 32: 1 + 2 + 3 launches) in tiles of 32 x 16. R'R
    matches A'A within 1e-12 of its largest term either way."""
    _, ctx, queue = fp64_env
    a = np.random.default_rng(11).standard_normal((300, 70))
    cq = cholqr.CholeskyQR2(ctx, queue, 70, block=16, band=32, mma=True,
                            emulate=EMULATE, gram_shape=SMALL, product_shape=tile, update_shape=SMALL)
    trace = []
    cq.enqueue(cq.upload(a), len(a), trace)
    assert cq.settle(None, len(a)) == "CholeskyQR2"
    r = cq.r()
    assert [n for n, _ in trace].count("tiles: R = R2 R1") == launches
    g = a.T @ a
    assert np.max(np.abs(r.T @ r - g)) <= 1e-12 * np.max(np.abs(g))
    assert tsqr.gram_error(r, a) < 1e-13


def test_the_wide_gram_tile_gives_the_triangle_at_sizes_off_its_tiles(fp64_env):
    """cholqr.GRAM_WIDE (128 x 128, warps of 64 x 32, one stage) in Hopper's shape,
    on a Gram matrix of 131 columns (one tile and 3 columns of the next) from 37 rows."""
    _, ctx, queue = fp64_env
    rng = np.random.default_rng(7)
    n, rows = 131, 37
    x = rng.standard_normal((rows, n))
    out = run(ctx, queue, x, x, np.zeros(n * n), a_off=0, lda=n, b_off=0, ldb=n, c_off=0, ldc=n, m=n, n=n,
              k_begin=0, k_end=rows, triangle=True,
              shape={**cholqr.GRAM_WIDE, "MMA": "m16n8k4"}).reshape(n, n)
    g, low = x.T @ x, np.tril_indices(n)
    assert np.max(np.abs(out[low] - g[low])) <= 1e-13 * np.max(np.abs(g))


def test_the_gram_tile_is_chosen_by_width_and_by_what_the_device_holds(fp64_env, monkeypatch):
    _, ctx, queue = fp64_env
    cq = cholqr.CholeskyQR2.__new__(cholqr.CholeskyQR2)
    cq.products = cholqr.Products(emulate=True)
    cq.C = cholqr.WIDE_FROM - 1
    assert cq._mma_gram(ctx, queue.device) == dmma.SHAPE and "fewer than" in cq.gram_note
    cq.C = cholqr.WIDE_FROM
    assert cq._mma_gram(ctx, queue.device) == cholqr.GRAM_WIDE and "128x128" in cq.gram_note

    def refuse(*args, **kw):
        raise cholqr.launch.LaunchError("69,640 bytes of local memory requested")
    monkeypatch.setattr(cq.products, "check", refuse)
    assert cq._mma_gram(ctx, queue.device) == dmma.SHAPE and "does not fit" in cq.gram_note


@pytest.mark.parametrize("whole", [True, False])
def test_cholesky_qr2_computes_the_edges_apart_and_gets_the_same_r(fp64_env, monkeypatch, whole):
    """65 columns in tiles of 32: the Gram matrix's last row runs in cholqr.EDGE_ROWS,
    and Q1 in one tile as wide as the matrix (cholqr.Q1_WHOLE, 80 columns), or, where
    that is off, its last column in EDGE_COLS; R matches the run without edges."""
    _, ctx, queue = fp64_env
    if not whole:
        monkeypatch.setattr(cholqr, "Q1_WHOLE_MAX", 0)
    tile = {**HOPPER, "TN": 32, "WARPS_N": 2}
    a = np.random.default_rng(9).standard_normal((301, 65))
    rs, names = [], []
    for edges in (True, False):
        cq = cholqr.CholeskyQR2(ctx, queue, 65, block=16, mma=True, emulate=EMULATE, gram_shape=tile,
                                product_shape=tile, update_shape=tile, edges=edges)
        assert (cq.gram_edge, cq.col_edge(65)) == ((1, 0 if whole else 1) if edges else (0, 0))
        assert cq.q1_shape["TN"] == (80 if whole and edges else 32)
        trace = []
        cq.enqueue(cq.upload(a), len(a), trace)
        cq.settle(None, len(a))
        rs.append(cq.r())
        names.append([n for n, _ in trace])
    assert names[0].count("tiles: Gram") == names[1].count("tiles: Gram") + 2
    assert names[0].count("tiles: Q1 = A R1^-1") == names[1].count("tiles: Q1 = A R1^-1") + (0 if whole else 1)
    assert np.max(np.abs(rs[0] - rs[1])) <= 1e-12 * np.max(np.abs(rs[1]))
    assert tsqr.gram_error(rs[0], a) < 1e-13


def test_the_passes_over_the_matrix_are_counted_as_enqueue_makes_them(fp64_env, monkeypatch):
    """6 with the transposed copy and whole tiles; on the tensor cores at 129 columns in
    tiles of 64, 6 again: each Gram product reads its matrix twice (the last row apart),
    Q1's product reads A as stored in one tile as wide as A, and writes Q1; 7 where Q1
    runs in tiles of 64 and reads A again for its last column."""
    _, ctx, queue = fp64_env
    plain = cholqr.CholeskyQR2(ctx, queue, 129)
    assert plain.passes() == (6, "the first Gram product reads A, the transpose reads A and writes it, "
                                 "Q₁'s product reads that and writes Q₁ and the second Gram product reads Q₁")
    tile = {**dmma.SHAPE, "MMA": "m8n8k4"}
    cq = cholqr.CholeskyQR2(ctx, queue, 129, mma=True, emulate=True, gram_shape=tile, product_shape=tile,
                            update_shape=tile, inverse_shape=tile)
    count, words = cq.passes()
    assert count == 6 and "twice (its last row apart)" in words and "as it is stored" in words
    assert "again" not in words and "$" not in words
    monkeypatch.setattr(cholqr, "Q1_WHOLE_MAX", 0)               # Q1 in tiles of 64 and its last column
    cq = cholqr.CholeskyQR2(ctx, queue, 129, mma=True, emulate=True, gram_shape=tile, product_shape=tile,
                            update_shape=tile, inverse_shape=tile)
    count, words = cq.passes()
    assert count == 7 and "(and again for its last columns)" in words
