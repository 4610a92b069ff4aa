"""Tensor cores through inline PTX (gpubook.tensor): the gate says why not on a
device that cannot run them, and the kernels' portable parts (tiling, bounds,
the lower triangle, the 3xTF32 split, the roofs' bookkeeping) run on any
device through the emulated warp product. The PTX itself is checked on the
NVIDIA host by tools/check_tensor.py."""
import numpy as np
import pytest
import pyopencl as cl

import gpubook as gb
from gpubook import tensor, tf32
from gpubook.chapters import covariance as cv

TINY = {"T": 16, "WARPS_M": 1, "WARPS_N": 1, "KC": 8}
# four warps, two mma steps per chunk, and fragments above the diagonal to skip
SMALL = {"T": 32, "WARPS_M": 2, "WARPS_N": 2, "KC": 16}


@pytest.fixture(scope="module")
def cl_env():
    device, ctx, queue, _, _ = gb.open_device()
    return device, ctx, queue


def test_the_gate_says_why_in_one_line(cl_env):
    device, ctx, queue = cl_env
    ok, reason = tensor.available(device)
    if "nvidia" in device.platform.name.lower():
        pytest.skip("an NVIDIA platform: tools/check_tensor.py checks the tensor cores there")
    assert ok is False and "\n" not in reason and "NVIDIA" in reason
    with pytest.raises(tensor.TensorCoreError, match="not NVIDIA's OpenCL"):
        tf32.XtX(ctx, queue, "3xtf32")
    with pytest.raises(tensor.TensorCoreError):
        tensor.mma_check(ctx, queue, "tf32")


def test_tf32_rounding_and_split():
    x = np.array([1.0, 1.0 + 2**-11, 1.0 + 2**-10 + 2**-11, -3.0000002, 1e-30, 0.0], np.float32)
    hi, lo = tf32.split_tf32(x)
    assert np.all(hi.view(np.uint32) & 0x1FFF == 0) and np.all(lo.view(np.uint32) & 0x1FFF == 0)
    assert hi[1] == np.float32(1.0 + 2**-10)            # a tie rounds away from zero
    assert tensor.tf32_truncate(x)[1] == 1.0
    x = np.random.default_rng(0).standard_normal(10_000).astype(np.float32)
    hi, lo = tf32.split_tf32(x)
    assert np.max(np.abs((hi.astype(np.float64) - x) / x)) <= 2**-11
    assert np.max(np.abs((hi.astype(np.float64) + lo - x) / x)) <= 2**-21


def test_plain_tf32_misses_the_chapter_tolerance_and_the_split_meets_it():
    """The rounding of the operands alone, summed exactly, on chapter 6's data."""
    d = cv.make_data(4096, 96)
    xc = (d.x - d.x.mean(axis=0)).astype(np.float32)
    ref = cv.reference(d.x) * len(xc)
    raw = cv.error(tf32.xtx_model(xc, "tf32-raw"), ref)
    split = cv.error(tf32.xtx_model(xc, "3xtf32"), ref)
    assert raw > 1e-4 > 1e-6 > split
    assert cv.error(tf32.xtx_model(xc, "tf32"), ref) < raw  # rounding first is better than truncating


@pytest.mark.parametrize("kind, shape", [("tf32", None), ("f64", None)] +
                         [("f64", shape) for shape in tensor.F64_SHAPES])
def test_one_warp_check_emulated(cl_env, kind, shape):
    _, ctx, queue = cl_env
    out = tensor.mma_check(ctx, queue, kind, ksteps=3, emulate=True, shape=shape)
    assert out["ok"], out["summary"]
    assert "(emulated)" in out["summary"]
    if kind == "f64":  # a device without FP64 tensor cores emulates m8n8k4 unless told
        assert out["shape"] == (shape or "m8n8k4") and out["summary"].startswith(out["shape"])


class _Platform:
    def __init__(self, name):
        self.name = name


class StubDevice:
    """What f64_shape reads of a device: its name, platform and compute capability."""

    def __init__(self, platform="NVIDIA CUDA", cc=None, name="Stub GPU"):
        self.name, self.platform, self.int_ptr = name, _Platform(platform), id(self)
        if cc is not None:
            self.compute_capability_major_nv, self.compute_capability_minor_nv = cc


@pytest.mark.parametrize("platform, cc, shape, why", [
    ("Portable Computing Language", None, None, "not NVIDIA's OpenCL"),
    ("NVIDIA CUDA", (7, 5), None, "sm_75: FP64 mma.sync needs sm_80"),
    ("NVIDIA CUDA", (8, 0), "m8n8k4", "sm_80: Ampere's"),
    ("NVIDIA CUDA", (8, 6), "m8n8k4", "sm_86"),
    ("NVIDIA CUDA", (9, 0), tensor.F64_HOPPER, "sm_90: Hopper's"),
    ("NVIDIA CUDA", (10, 0), tensor.F64_HOPPER, "sm_100"),
    ("NVIDIA CUDA", None, "m8n8k4", "does not report its compute capability"),
])
def test_the_fp64_shape_follows_the_compute_capability(platform, cc, shape, why):
    got, reason = tensor.f64_shape(StubDevice(platform, cc))
    assert got == shape
    assert why in reason and "\n" not in reason
    if cc is not None:
        assert tensor.shape_for_capability(*cc) == shape


def test_a_refused_hopper_shape_falls_back_to_m8n8k4():
    device = StubDevice(cc=(9, 0))
    tensor._f64_rejected[device.int_ptr] = "ptxas: unknown shape"
    try:
        shape, why = tensor.f64_shape(device)
    finally:
        del tensor._f64_rejected[device.int_ptr]
    assert shape == "m8n8k4" and "refuses" in why and "ptxas: unknown shape" in why


def test_fp64_shapes_flops_and_defines():
    assert tensor.f64_flops("m8n8k4") == tensor.FLOPS_PER_MMA["f64"] == 512
    assert tensor.f64_flops("m16n8k4") == 1024 and tensor.f64_flops("m16n8k16") == 4096
    assert tensor.f64_defines("m16n8k8") == {"F64_M": 16, "F64_K": 8}
    with pytest.raises(ValueError, match="unknown FP64 mma shape 'm8n8k8'"):
        tensor.f64_defines("m8n8k8")


def test_the_roofs_refuse_where_there_are_no_tensor_cores(cl_env):
    device, ctx, queue = cl_env
    if tensor.available(device)[0]:
        pytest.skip("this device has the tensor cores")
    with pytest.raises(tensor.TensorCoreError):
        tensor.mma_roofs(ctx, queue)


@pytest.mark.parametrize("shape", list(tensor.F64_SHAPES))
def test_fp64_peak_loop_sums_what_the_layout_says(cl_env, shape):
    """As the TF32 loop below, in each FP64 shape: A's values then B's, 32 at a time, placed
    as the shape's fragment layout says."""
    _, ctx, queue = cl_env
    chains, iters = 2, 3
    _, flops, sums = tensor.mma_peak(ctx, queue, "f64", iters=iters, chains=chains, groups=2, repeats=1,
                                     emulate=True, shape=shape)
    warps = len(sums) // tensor.WARP
    assert flops == warps * iters * chains * tensor.f64_flops(shape)
    m, k = tensor.F64_SHAPES[shape]
    src = np.random.default_rng(0).standard_normal(384) * 1e-3
    a, b, r, na = np.zeros((m, k)), np.zeros((k, 8)), m // 8, m * k // 32
    for lane in range(32):
        g, t = divmod(lane, 4)
        for i in range(na):
            a[g + 8 * (i % r), t + 4 * (i // r)] = src[lane + 32 * i]
        for i in range(k // 4):
            b[t + 4 * i, g] = src[lane + 32 * (na + i)]
    per_warp = sums.reshape(warps, tensor.WARP).sum(axis=1)
    assert np.allclose(per_warp, chains * iters * np.sum(a @ b), rtol=1e-12)


def test_peak_loop_sums_what_the_layout_says(cl_env):
    """Every warp's written sums add up to chains x iters x the sum of A B, with A and B placed
    from the input as the m16n8k8 fragment layout says."""
    _, ctx, queue = cl_env
    chains, iters = 2, 3
    _, flops, sums = tensor.mma_peak(ctx, queue, "tf32", iters=iters, chains=chains, groups=2, repeats=1,
                                     emulate=True)
    warps = len(sums) // tensor.WARP
    assert flops == warps * iters * chains * 2048
    src = (np.random.default_rng(0).standard_normal(192) * 1e-3).astype(np.float32)
    a, b = np.zeros((16, 8)), np.zeros((8, 8))
    for lane in range(32):
        g, t = divmod(lane, 4)
        a[g, t], a[g + 8, t], a[g, t + 4], a[g + 8, t + 4] = src[[lane, lane + 32, lane + 64, lane + 96]]
        b[t, g], b[t + 4, g] = src[[lane + 128, lane + 160]]
    a, b = (tensor.tf32_truncate(m.astype(np.float32)).astype(np.float64) for m in (a, b))
    per_warp = sums.reshape(warps, tensor.WARP).sum(axis=1)
    assert np.allclose(per_warp, chains * iters * np.sum(a @ b), rtol=1e-4)


@pytest.mark.parametrize("m, n", [(203, 45), (8, 16), (1, 3)])
def test_xtx_emulated_on_odd_sizes(cl_env, m, n):
    """Sizes that no tile or MMA shape divides: the lower triangle right, nothing written above it."""
    _, ctx, queue = cl_env
    x = np.random.default_rng(m).standard_normal((m, n)).astype(np.float32)
    ref = x.astype(np.float64).T @ x.astype(np.float64)
    for mode in tf32.MODES:
        s = tf32.XtX(ctx, queue, mode, shape=TINY, emulate=True).product(x)
        assert not np.any(np.triu(s, 1))
        # the kernel adds in float32 what the model adds exactly
        assert tf32.lower_error(s, tf32.xtx_model(x, mode)) < 1e-5
    assert tf32.lower_error(s, ref) < 1e-5  # 3xtf32 keeps float32's accuracy


def _padded(ctx, x, ldx):
    """X in a buffer of stride ldx, with NaN in its columns past n and in 16 rows past m:
    a row read past m would show in every entry of S."""
    m, n = x.shape
    host = np.full((m + 16, ldx), np.nan, np.float32)
    host[:m, :n] = x
    return cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)


def _run(prod, xb, m, n, ldx):
    queue = prod.queue
    sb = cl.Buffer(prod.ctx, cl.mem_flags.READ_WRITE, 4 * n * n)
    cl.enqueue_fill_buffer(queue, sb, np.float32(0), 0, 4 * n * n)
    cl.wait_for_events(prod.enqueue(xb, m, n, sb, ldx=ldx))
    s = np.empty((n, n), np.float32)
    cl.enqueue_copy(queue, s, sb)
    return s


def test_xtx_wide_loads_sum_what_the_checked_loads_sum(cl_env):
    """16-byte loads (n and the stride multiples of 4) and one float per load give the same
    sums, bit for bit (every shape adds the rows k in the same order), with m not a multiple
    of KC, n not one of T, and NaN around X in its buffer; SMALL's diagonal tiles have fragments to
    skip (poisoned when emulated: none may reach S)."""
    _, ctx, queue = cl_env
    m, n, ldx = 45, 36, 40
    x = np.random.default_rng(1).standard_normal((m, n)).astype(np.float32)
    wide = tf32.XtX(ctx, queue, "3xtf32", shape=SMALL, emulate=True)
    checked = tf32.XtX(ctx, queue, "3xtf32", shape=TINY, emulate=True, wide_loads=False)
    assert (wide.loads(n, ldx), wide.loads(n, 38), wide.loads(34, 40), checked.loads(n, ldx)) == (4, 1, 1, 1)
    xb = _padded(ctx, x, ldx)
    s_wide, s_checked = _run(wide, xb, m, n, ldx), _run(checked, xb, m, n, ldx)
    assert np.all(np.isfinite(s_wide)) and np.all(np.isfinite(s_checked))
    assert np.array_equal(s_wide, s_checked)
    assert not np.any(np.triu(s_wide, 1))
    assert tf32.lower_error(s_wide, tf32.xtx_model(x, "3xtf32")) < 1e-5


def test_xtx_slabs_of_rows_sum_what_one_launch_sums(cl_env):
    """slab_rows: a launch per slab of rows, each adding into S (only the first stores):
    slabs that the flush interval, KC and m do not divide sum the rows as one launch does,
    within float32's rounding of the extra additions, and refuse a slab of no rows."""
    _, ctx, queue = cl_env
    m, n, ldx = 203, 36, 40
    x = np.random.default_rng(6).standard_normal((m, n)).astype(np.float32)
    xb = _padded(ctx, x, ldx)
    whole = _run(tf32.XtX(ctx, queue, "3xtf32", shape=SMALL, emulate=True, flush_rows=32), xb, m, n, ldx)
    for slab in (1, 50, 64, 202, 203, 10_000):
        prod = tf32.XtX(ctx, queue, "3xtf32", shape=SMALL, emulate=True, flush_rows=32, slab_rows=slab)
        assert prod.slab % 32 == 0 and prod.slab >= slab
        s = _run(prod, xb, m, n, ldx)
        assert np.all(np.isfinite(s)) and not np.any(np.triu(s, 1))
        assert tf32.lower_error(s, whole.astype(np.float64)) < 1e-6
        assert tf32.lower_error(s, tf32.xtx_model(x, "3xtf32")) < 1e-5
    for bad in (0, -5, True):
        with pytest.raises(ValueError, match="slab_rows"):
            tf32.XtX(ctx, queue, "3xtf32", shape=SMALL, emulate=True, slab_rows=bad)


def test_xtx_split_late_sums_what_the_early_split_sums(cl_env):
    """LATE: local memory keeps the raw floats and each lane splits its operands as it
    loads them: the same hi and lo, so the same sums, bit for bit, in half the local
    memory; the other modes ignore LATE (they keep one part per float anyway)."""
    _, ctx, queue = cl_env
    m, n, ldx = 45, 36, 40
    x = np.random.default_rng(4).standard_normal((m, n)).astype(np.float32)
    xb = _padded(ctx, x, ldx)
    late = {**SMALL, "LATE": 1}
    for gv in (True, False):
        early = tf32.XtX(ctx, queue, "3xtf32", shape=SMALL, emulate=True, wide_loads=gv)
        split = tf32.XtX(ctx, queue, "3xtf32", shape=late, emulate=True, wide_loads=gv)
        assert np.array_equal(_run(early, xb, m, n, ldx), _run(split, xb, m, n, ldx))
    assert tf32.xtx_local_bytes(late, "3xtf32") == tf32.xtx_local_bytes(SMALL, "tf32")
    assert tf32.xtx_local_bytes(late, "3xtf32") < tf32.xtx_local_bytes(SMALL, "3xtf32")
    plain = tf32.XtX(ctx, queue, "tf32", shape=late, emulate=True).product(x)
    assert np.array_equal(plain, tf32.XtX(ctx, queue, "tf32", shape=SMALL, emulate=True).product(x))
    with pytest.raises(ValueError, match="LATE is 0 or 1"):
        tf32.xtx_shape_checked({**SMALL, "LATE": 2})


# Every mode on one warp shape, and the other shapes in 3xTF32 alone: each build of an
# emulated tensor-core kernel costs PoCL seconds to compile, and the modes share the feed.
FEED_CASES = [((2, 2), mode) for mode in tf32.MODES] + [(w, "3xtf32") for w in ((1, 2), (2, 1), (1, 1))]


@pytest.mark.parametrize("warps, mode", FEED_CASES)
def test_xtx_fed_by_copies_sums_what_the_late_split_sums(cl_env, warps, mode):
    """FEED: copies into local memory (cp.async on the GPU), float4 fragment loads from a
    permuted layout, a whole warp skipped above the diagonal, and (16-byte loads, 4 or more
    fragments across a warp: warps (2, 1) and (1, 1)) flushes of four neighbouring sums at
    a time off the diagonal: the same mma in the same order, so the same sums, bit for bit,
    in every mode, with 16-byte copies and with one float per load; m not a multiple of KC,
    n not one of T, NaN around X (a skipped warp's values are poisoned when emulated: none
    may reach S)."""
    _, ctx, queue = cl_env
    m, n, ldx = 45, 36, 40
    x = np.random.default_rng(6).standard_normal((m, n)).astype(np.float32)
    xb = _padded(ctx, x, ldx)
    late = {**SMALL, "WARPS_M": warps[0], "WARPS_N": warps[1], "LATE": 1}
    fed = {**late, "FEED": 1}
    for wide in (True, False):
        got = _run(tf32.XtX(ctx, queue, mode, shape=fed, emulate=True, wide_loads=wide, flush_rows=16),
                   xb, m, n, ldx)
        assert np.all(np.isfinite(got)) and not np.any(np.triu(got, 1))
        assert tf32.lower_error(got, tf32.xtx_model(x, mode)) < 1e-5
        flushed = _run(tf32.XtX(ctx, queue, mode, shape=late, emulate=True, wide_loads=wide,
                                  flush_rows=16), xb, m, n, ldx)
        assert np.array_equal(got, flushed), (mode, wide)
    assert tf32.xtx_local_bytes(fed, "3xtf32") == tf32.xtx_local_bytes(late, "3xtf32")
    prod = tf32.XtX(ctx, queue, "3xtf32", shape=fed, emulate=True)
    assert prod.loads(n, ldx) == 4 and prod.loads(n, ldx, lds=n + 2) == 1  # 16-byte flushes need lds % 4 == 0
    with pytest.raises(ValueError, match="it needs LATE 1"):
        tf32.xtx_shape_checked({**SMALL, "FEED": 1})
    with pytest.raises(ValueError, match="multiple of 4"):  # 48 / 8 = 6 values of B's row per lane
        tf32.xtx_shape_checked({"T": 48, "WARPS_M": 1, "WARPS_N": 1, "KC": 8, "LATE": 1, "FEED": 1})


def test_xtx_without_the_diagonal_skip_sums_the_same(cl_env):
    _, ctx, queue = cl_env
    x = np.random.default_rng(2).standard_normal((19, 64)).astype(np.float32)
    kept = tf32.XtX(ctx, queue, "tf32-raw", shape=SMALL, emulate=True, diag_skip=False).product(x)
    tiny = tf32.XtX(ctx, queue, "tf32-raw", shape=TINY, emulate=True).product(x)  # no fragment to skip
    assert np.array_equal(kept, tiny)
    assert tf32.lower_error(kept, tf32.xtx_model(x, "tf32-raw")) < 1e-5


def test_xtx_shapes_are_valid_and_within_local_memory():
    assert 3 <= len(tf32.XTX_SHAPES) <= 5 and tf32.XTX_SHAPE == tf32.XTX_SHAPES[0]
    for shape in tf32.XTX_SHAPES:
        for mode in tf32.MODES:
            assert tf32.xtx_shape_checked(shape, mode) == shape
            assert tf32.xtx_local_bytes(shape, mode) <= 48 * 1024
    # the header's arithmetic: T = 128, KC = 8, (hi, lo) pairs of T + 4 floats
    t128 = {"T": 128, "WARPS_M": 2, "WARPS_N": 2, "KC": 8}
    assert tf32.xtx_local_bytes(t128, "3xtf32") == 2 * 2 * 8 * 132 * 2 * 4 == 33_792
    assert tf32.xtx_local_bytes(t128, "tf32") == 2 * 2 * 8 * 136 * 4


def test_bad_input_is_refused(cl_env):
    _, ctx, queue = cl_env
    with pytest.raises(ValueError, match="unknown mode"):
        tf32.XtX(ctx, queue, "fp8", emulate=True)
    with pytest.raises(ValueError, match="T must be a multiple"):
        tf32.XtX(ctx, queue, "tf32", shape={"T": 24, "WARPS_M": 1, "WARPS_N": 1, "KC": 8}, emulate=True)
    with pytest.raises(ValueError, match="whole 16-byte loads"):
        tf32.XtX(ctx, queue, "tf32", shape={"T": 16, "WARPS_M": 1, "WARPS_N": 2, "KC": 8}, emulate=True)
    big = {"T": 128, "WARPS_M": 2, "WARPS_N": 2, "KC": 16}
    with pytest.raises(ValueError, match="67,584 bytes of local memory"):
        tf32.XtX(ctx, queue, "3xtf32", shape=big, emulate=True)
    assert tf32.xtx_shape_checked(big, "tf32") == big  # one part per float: half of it
    with pytest.raises(ValueError, match="give exactly"):
        tf32.XtX(ctx, queue, "tf32", shape={"T": 16, "WARPS_M": 1, "WARPS_N": 1}, emulate=True)
    with pytest.raises(ValueError, match="positive integers"):
        tf32.XtX(ctx, queue, "tf32", shape={**TINY, "KC": 8.0}, emulate=True)
    with pytest.raises(ValueError, match="NaN or infinite"):
        tf32.XtX(ctx, queue, "tf32", shape=TINY, emulate=True).product(np.full((4, 4), np.inf))
    with pytest.raises(ValueError, match="unknown kind"):
        tensor.mma_check(ctx, queue, "bf16", emulate=True)


def test_flushing_the_sums_every_few_rows_changes_only_rounding(cl_env):
    """XtX with flush_rows: the warps' sums go into S every so many rows (stored, then added)."""
    _, ctx, queue = cl_env
    x = np.random.default_rng(11).standard_normal((45, 20)).astype(np.float32)
    ref = tf32.xtx_model(x, "3xtf32")
    for rows in (8, 16, 40, 45, 1000):
        s = tf32.XtX(ctx, queue, "3xtf32", SMALL, emulate=True, flush_rows=rows).product(x)
        assert tf32.lower_error(s, ref) < 1e-5, rows
    with pytest.raises(ValueError, match="flush_rows"):
        tf32.XtX(ctx, queue, "3xtf32", SMALL, emulate=True, flush_rows=0)
