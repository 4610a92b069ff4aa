"""Chapter 5's host side: X padded for the device in two layouts, the launches of
the chapter's kernels (kernels/transpose/), and the NumPy baseline.

Layouts on the device (float32):
    x   row-major, `stride` rows of `kp` features      x[j * kp + k]
    xt  transposed, `kp` rows of `stride` examples     xt[k * stride + j]
`kp` is K rounded up to a multiple of FEATURE_MULTIPLE and `stride` is J rounded
up to a multiple of EXAMPLE_MULTIPLE; the padding holds zeros, so padded features
keep a zero weight and padded examples add nothing to the gradient.

One training iteration is  o = sigmoid(X theta) - y,  theta -= rate * X^T o,
which is gpubook.logreg.train's step (it writes  w += rate * X^T (y - sigmoid(X w))).
"""
import time

import numpy as np
import pyopencl as cl

from ... import launch
from ...device import check_work_group, compute_units, default_work_group
from ...kernels import kernel
from ...logistic import check_data, log_likelihood_terms, real_array
from ...timing import stats

FEATURE_MULTIPLE = 8    # float4 rows, and blocks of 8 features in grad_blocks
EXAMPLE_MULTIPLE = 64   # rows of xt start on 256-byte boundaries; a multiple of the tile

SCORES = ("rows", "rows4", "cols")
TRANSPOSES = ("naive", "tiled")
GRADIENTS = ("feature", "groups", "blocks")
ITERATIONS = ("two kernels", "fused")


def padded(n, multiple):
    """n rounded up to a multiple of `multiple`."""
    return -(-int(n) // multiple) * multiple


def pad(X, labels, stride=None, kp=None):
    """X (J, K) and labels (J,) as zero-padded float32 arrays (stride, kp) and (stride,),
    after gpubook.logistic.check_data: real and finite in float32, labels 0 or 1
    (a TypeError or ValueError naming the argument otherwise)."""
    X = real_array(X, "X", np.float32, (None, None))
    J, K = X.shape
    if np.shape(labels) != (J,):
        raise ValueError(f"labels have shape {np.shape(labels)}; X has {J} examples")
    X, labels = check_data(X, labels)
    stride = padded(J, EXAMPLE_MULTIPLE) if stride is None else stride
    kp = padded(K, FEATURE_MULTIPLE) if kp is None else kp
    if stride < J or kp < K or stride % EXAMPLE_MULTIPLE or kp % FEATURE_MULTIPLE:
        raise ValueError(f"cannot pad ({J}, {K}) to ({stride}, {kp}): need sizes at least as "
                         f"large, multiples of {EXAMPLE_MULTIPLE} and {FEATURE_MULTIPLE}")
    Xp = np.zeros((stride, kp), np.float32)
    Xp[:J, :K] = X
    yp = np.zeros(stride, np.float32)
    yp[:J] = labels
    return Xp, yp


def examples_that_fit(device, kp, want, copies=2, share=0.8):
    """The largest power of two J <= want whose X (J x kp floats) fits one allocation
    and whose `copies` layouts fit in `share` of the device's memory."""
    J = 1 << (int(want).bit_length() - 1)
    while J > EXAMPLE_MULTIPLE:
        nbytes = 4 * J * kp
        if nbytes <= device.max_mem_alloc_size and copies * nbytes <= share * device.global_mem_size:
            return J
        J //= 2
    raise ValueError(f"{device.name.strip()} cannot hold even {J} examples of {kp} features")


class _Lazy(dict):
    """Kernels built on first use (a chapter that needs three of them builds three)."""

    def __init__(self, build):
        super().__init__()
        self._make = build

    def __missing__(self, name):
        self[name] = self._make(name)
        return self[name]


class Buffers:
    """X in both layouts, labels, scores, weights and partial sums on the device."""

    def __init__(self, ctx, stride, kp, parts):
        mf = cl.mem_flags
        self.stride, self.kp, self.parts = stride, kp, parts
        self.n = 0              # examples holding data; rows n..stride are zero
        self.k = kp             # features holding data (K of the last upload); columns k..kp are zero
        self.x = cl.Buffer(ctx, mf.READ_WRITE, 4 * stride * kp)
        self.xt = cl.Buffer(ctx, mf.READ_WRITE, 4 * stride * kp)
        self.y = cl.Buffer(ctx, mf.READ_WRITE, 4 * stride)
        self.o = cl.Buffer(ctx, mf.READ_WRITE, 4 * stride)
        self.theta = cl.Buffer(ctx, mf.READ_WRITE, 4 * kp)
        self.partial = cl.Buffer(ctx, mf.READ_WRITE, 4 * kp * parts)

    def release(self):
        for b in (self.x, self.xt, self.y, self.o, self.theta, self.partial):
            b.release()


class Logreg:
    """The chapter's kernels for one device and one padded feature count `kp`.

    local: work-group size of the 1-D kernels (a power of two; default the largest
    up to 256 that the device allows). kb, m: features per group and float4s of
    examples per work-item in grad_blocks. tj: examples per tile in the fused kernel
    (default: the largest power of two up to 32 whose tile fits local memory).
    groups_per_cu: work-groups per compute unit for the fused kernel.
    """

    def __init__(self, ctx, queue, device, kp, local=None, kb=8, m=4, tj=None, groups_per_cu=8):
        if kp % FEATURE_MULTIPLE:
            raise ValueError(f"kp={kp} must be a multiple of {FEATURE_MULTIPLE} (use padded())")
        self.ctx, self.queue, self.device, self.kp = ctx, queue, device, kp
        self.local = default_work_group(device) if local is None else local
        if self.local & (self.local - 1):
            raise ValueError(f"work-group size {self.local} is not a power of two")
        check_work_group(device, self.local)
        if kp % kb:
            raise ValueError(f"kb={kb} does not divide kp={kp}")
        self.kb, self.m = kb, m
        # the tiled transpose: TILE x ROWS work-items, 64 x 8 where the device allows them
        self.tile = launch.largest(device, 64, lambda t: 4 * t * (t + 1))
        self.rows = max(1, min(8, launch.device_max(device) // self.tile))
        self.tj = self._fit_tile() if tj is None else tj
        if self.tj < 4 or self.tj > self.local or self.local % self.tj or self.tj & (self.tj - 1):
            raise ValueError(f"tile of {self.tj} examples must be a power of two from 4 up, "
                             f"dividing the work-group size {self.local}")
        check_work_group(device, self.local, self.fused_local_bytes())
        self.groups = compute_units(device) * groups_per_cu
        self.k = _Lazy(self._build)

    def _build(self, name):
        kp, L = self.kp, self.local
        path, entry, defines = {
            "fill_rows": ("fill.cl", "fill_rows", {}),
            "fill_labels": ("fill.cl", "fill_labels", {}),
            "rows": ("scores_rows.cl", "scores_rows", {}),
            "rows4": ("scores_rows4.cl", "scores_rows4", {}),
            "cols": ("scores_cols.cl", "scores_cols", {}),
            "naive": ("transpose_naive.cl", "transpose_naive", {}),
            "tiled": ("transpose_tiled.cl", "transpose_tiled", {"TILE": self.tile, "ROWS": self.rows}),
            "feature": ("grad_feature.cl", "grad_feature", {}),
            "groups": ("grad_groups.cl", "grad_groups", {"LOCAL": L}),
            "blocks": ("grad_blocks.cl", "grad_blocks", {"LOCAL": L, "KB": self.kb, "M": self.m}),
            "reduce": ("reduce_update.cl", "reduce_update", {"LOCAL": L}),
            "fused": ("fused.cl", "fused", {"LOCAL": L, "TJ": self.tj}),
        }[name]
        return kernel(self.ctx, f"transpose/{path}", entry, {"KP": kp, **defines})

    # ---- sizes -------------------------------------------------------------
    def fused_local_bytes(self, tj=None):
        tj = self.tj if tj is None else tj
        return 4 * (self.kp * (tj + 4) + self.kp + self.local + tj)

    def _fit_tile(self):
        tj = min(32, self.local)
        while tj >= 4 and self.fused_local_bytes(tj) > self.device.local_mem_size:
            tj //= 2
        if tj < 4:
            raise ValueError(f"{self.kp} features do not fit the fused kernel's tile in "
                             f"{self.device.local_mem_size} bytes of local memory")
        return tj

    def chunks(self, n):
        """Example chunks (work-groups along examples) of grad_blocks for n examples."""
        return -(-padded(n, 4) // 4 // (self.local * self.m))

    def fused_groups(self, n):
        return max(1, min(-(-n // self.tj), self.groups))

    def parts(self, stride):
        """Partial sums per feature that the buffers must hold for `stride` examples."""
        return max(self.chunks(stride), self.fused_groups(stride))

    def alloc(self, stride):
        if stride % EXAMPLE_MULTIPLE:
            raise ValueError(f"stride {stride} is not a multiple of {EXAMPLE_MULTIPLE}")
        return Buffers(self.ctx, stride, self.kp, self.parts(stride))

    def _check(self, buf, n):
        if not 0 < n <= buf.n:
            raise ValueError(f"n={n} examples requested; the buffers hold {buf.n}")
        if n % 4 and n != buf.n:
            raise ValueError(f"a prefix of n={n} examples must be a multiple of 4 "
                             "(float4 kernels read whole groups of four)")

    # ---- data --------------------------------------------------------------
    def upload(self, buf, X, labels):
        """Copy X and labels (zero-padded to the buffers' size), make XT on the device."""
        Xp, yp = pad(X, labels, buf.stride, buf.kp)
        cl.enqueue_copy(self.queue, buf.x, Xp)
        cl.enqueue_copy(self.queue, buf.y, yp)
        buf.n, buf.k = len(labels), np.shape(X)[1]
        self.transpose("tiled", buf, buf.stride).wait()

    def synthetic(self, buf, n, k, seed=1):
        """Fill the buffers on the device with n examples of k features (timing data:
        uniform noise with a class shift, not gpubook.logreg.two_classes)."""
        if n > buf.stride or k > buf.kp:
            raise ValueError(f"({n}, {k}) does not fit buffers of ({buf.stride}, {buf.kp})")
        items = buf.stride * buf.kp // 4
        self.k["fill_rows"](self.queue, (padded(items, self.local),), (self.local,), buf.x,
                            np.int32(buf.stride), np.int32(n), np.int32(k), np.uint32(seed))
        self.k["fill_labels"](self.queue, (padded(buf.stride, self.local),), (self.local,),
                              buf.y, np.int32(buf.stride), np.int32(n))
        buf.n, buf.k = n, k
        self.transpose("tiled", buf, buf.stride).wait()

    def set_theta(self, buf, theta):
        """theta: the weights of the data's K features, or of all kp (padded with zeros on the device)."""
        theta = real_array(theta, "theta", np.float32, (None,))
        if len(theta) not in (buf.k, buf.kp):
            raise ValueError(f"theta must hold {buf.k} weights (one per feature) or {buf.kp} (padded), "
                             f"not {len(theta)}")
        t = np.zeros(buf.kp, np.float32)
        t[:len(theta)] = theta
        cl.enqueue_copy(self.queue, buf.theta, t).wait()

    def get(self, buffer, count):
        out = np.empty(count, np.float32)
        cl.enqueue_copy(self.queue, out, buffer)
        return out

    # ---- launch shapes ------------------------------------------------------
    def sizes(self, variant, n, stride=None):
        """(global size, local size) of one kernel's launch over n examples (n rows for
        the transposes; `stride`, the buffers' examples, only matters to grad_blocks'
        second dimension): the shapes the methods below enqueue."""
        L = self.local
        if variant in ("rows", "rows4"):
            return (padded(n, L),), (L,)
        if variant == "cols":
            return (padded(-(-n // 4), L),), (L,)
        if variant == "naive":
            return (padded(min(n * self.kp, 2**30), L),), (L,)
        if variant == "tiled":
            return (-(-self.kp // self.tile) * (n // self.tile) * self.tile, self.rows), (self.tile, self.rows)
        if variant == "feature":
            w = min(32, L)
            return (padded(self.kp, w),), (w,)
        if variant in ("groups", "reduce"):
            return (self.kp * L,), (L,)
        if variant == "blocks":
            return (self.kp // self.kb * L, self.chunks(n)), (L, 1)
        if variant == "fused":
            return (self.fused_groups(n) * L,), (L,)
        raise ValueError(f"unknown kernel {variant!r}; use one of rows, rows4, cols, naive, tiled, "
                         "feature, groups, blocks, reduce, fused")

    def resource_rows(self, variants):
        """(label, kernel, work-group size) rows for gpubook.resource_table, at the
        work-group sizes this object launches them with."""
        return [(v, self.k[v], int(np.prod(self.sizes(v, self.tile)[1]))) for v in variants]

    # ---- kernels -------------------------------------------------------------
    def transpose(self, variant, buf, rows):
        """x (first `rows` rows) -> xt; rows is a multiple of the tile (64)."""
        if rows % self.tile or rows > buf.stride:
            raise ValueError(f"rows={rows} must be a multiple of {self.tile} and at most {buf.stride}")
        args = (buf.x, buf.xt, np.int32(rows), np.int32(buf.stride))
        if variant == "tiled":
            check_work_group(self.device, self.tile * self.rows, 4 * self.tile * (self.tile + 1))
        return self.k[variant](self.queue, *self.sizes(variant, rows), *args)

    def scores(self, variant, buf, n):
        """o = sigmoid(X theta) - y for the first n examples (one event)."""
        self._check(buf, n)
        if variant == "cols":
            return self.k["cols"](self.queue, *self.sizes("cols", n), buf.xt, buf.y, buf.theta,
                                  buf.o, np.int32(-(-n // 4)), np.int32(buf.stride // 4))
        return self.k[variant](self.queue, *self.sizes(variant, n), buf.x, buf.y, buf.theta, buf.o,
                               np.int32(n))

    def gradient(self, variant, buf, n, rate):
        """theta -= rate * XT o over the first n examples (list of events)."""
        self._check(buf, n)
        n4, s4 = -(-n // 4), buf.stride // 4
        if variant in ("feature", "groups"):
            return [self.k[variant](self.queue, *self.sizes(variant, n), buf.xt, buf.o,
                                    buf.theta, np.int32(n4), np.int32(s4), np.float32(rate))]
        chunks = self.chunks(n)
        if chunks > 65535:
            raise ValueError(f"{chunks} example chunks exceed 65535 work-groups in dimension 1; "
                             "raise m")
        e1 = self.k["blocks"](self.queue, *self.sizes("blocks", n), buf.xt, buf.o,
                              buf.partial, np.int32(n4), np.int32(s4), np.int32(chunks))
        return [e1, self.reduce(buf, chunks, rate)]

    def reduce(self, buf, parts, rate):
        return self.k["reduce"](self.queue, *self.sizes("reduce", parts), buf.partial, buf.theta,
                                np.int32(parts), np.float32(rate))

    def fused(self, buf, n, rate):
        """Scores and gradient in one pass over XT, then the update (list of events)."""
        self._check(buf, n)
        groups = self.fused_groups(n)
        e1 = self.k["fused"](self.queue, *self.sizes("fused", n), buf.xt, buf.y,
                             buf.theta, buf.partial, np.int32(n), np.int32(buf.stride // 4),
                             np.int32(-(-n // self.tj)))
        return [e1, self.reduce(buf, groups, rate)]

    def iteration(self, variant, buf, n, rate):
        """One training iteration (list of events): 'two kernels' = scores over XT, then
        the blocked gradient; 'fused' = the fused pass."""
        if variant == "fused":
            return self.fused(buf, n, rate)
        if variant == "two kernels":
            return [self.scores("cols", buf, n)] + self.gradient("blocks", buf, n, rate)
        raise ValueError(f"unknown iteration {variant!r}; use one of {ITERATIONS}")

    def train(self, variant, buf, n, rate, iterations, theta0=None):
        """Weights after `iterations` iterations from theta0 (default zeros), as float32."""
        if isinstance(iterations, (bool, np.bool_)) or not isinstance(iterations, (int, np.integer)) \
                or iterations < 0:
            raise ValueError(f"iterations must be a count of at least 0, not {iterations!r}")
        if not (isinstance(rate, (int, float, np.integer, np.floating)) and np.isfinite(rate)):
            raise ValueError(f"rate must be a finite step size, not {rate!r}")
        self.set_theta(buf, np.zeros(buf.kp) if theta0 is None else theta0)
        for _ in range(iterations):
            self.iteration(variant, buf, n, rate)
        return self.get(buf.theta, buf.kp)


# ---- the host baseline -----------------------------------------------------------
def numpy_iteration(X, y, theta, rate):
    """One iteration in float32 with NumPy/BLAS, updating theta in place."""
    o = 1.0 / (1.0 + np.exp(-(X @ theta))) - y
    theta -= np.float32(rate) * (X.T @ o)
    return theta


def numpy_seconds(X, y, rate, repeats=5, warmup=1):
    """Wall-clock seconds of numpy_iteration on the host CPU, as a Timing."""
    theta = np.zeros(X.shape[1], np.float32)
    times = []
    for i in range(warmup + repeats):
        t0 = time.perf_counter()
        numpy_iteration(X, y, theta, rate)
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return stats(times)


def host_cpu_name():
    """The host processor's model name (for labelling the NumPy baseline)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or "host CPU"


def mean_log_likelihood(X, labels, theta):
    """Mean log P(label | x, theta) over the examples, X float32 (computed in float32
    for X @ theta, float64 after), for data sets too large to convert to float64."""
    return float(np.mean(log_likelihood_terms(X @ np.asarray(theta, np.float32), labels)))
