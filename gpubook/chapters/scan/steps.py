"""Chapter 7: prefix sums, and the ROC fitness they compute.

The fitness of a model's scores on n examples with known classes: sort by
score, high to low, ties to the lower example index; walking down the list,
F = mean over k of (TPR_k - FPR_k), the true- and false-positive rates among
the first k examples. It equals AUC - 1/2 for that order. The NumPy float64
reference and the launches of kernels/scan/ (the input checks and the
work-group choice are in checks.py).
"""
import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ... import launch
from ...kernels import KernelBuildError, kernel
from .checks import check_labels, check_inputs, work_group, count, device_buffer  # noqa: F401

LIST_STEPS = ("1_hillis_steele", "2_work_efficient")
DEVICE_STEPS = ("3_reduce_then_scan", "4_single_pass")
WG_SCAN = "scan/wg_scan.cl"
TILE_IO = "scan/tile_io.cl"
SINGLE_PASS_ATOMICS = "cl_khr_int64_base_atomics"


def order(scores):
    """Positions sorted by score, high to low, ties to the lower index (rows of a 2-D array)."""
    return np.argsort(-np.asarray(scores, np.float64), axis=-1, kind="stable")


def fitness_reference(scores, labels):
    """The seed's fitness in float64 for one model (1-D scores) or each row of a 2-D array."""
    positives = check_inputs(scores, labels)
    y = np.asarray(labels, np.float64)[order(scores)]
    n = y.shape[-1]
    tp = np.cumsum(y, axis=-1)
    fp = np.arange(1, n + 1) - tp
    return np.mean(tp / positives - fp / (n - positives), axis=-1)


def roc(scores, labels):
    """(FPR, TPR) after each example in fitness order, starting at (0, 0)."""
    positives = check_inputs(scores, labels)
    y = np.asarray(labels, np.float64)[order(scores)]
    tp = np.concatenate([[0.0], np.cumsum(y)])
    fp = np.arange(len(tp)) - tp
    return fp / (len(y) - positives), tp / positives


def auc(scores, labels):
    """Area under the ROC curve of that order (trapezoids)."""
    fpr, tpr = roc(scores, labels)
    return float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))


def fitness_from_sum(sum_tp, positives, n):
    """F from sum_k TP_k, in float64 (the list kernels return that exact integer)."""
    sum_fp = n * (n + 1) / 2 - sum_tp
    return (sum_tp / positives - sum_fp / (n - positives)) / n


def make_population(models, n, seed=7, levels=64):
    """Labels (about 40% positive) and `models` rows of scores: each model has a
    skill (a different separation of the classes) plus noise, and scores are
    rounded to `levels` steps so that ties are common."""
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.4).astype(np.uint8)
    labels[:2] = (1, 0)  # both classes, whatever n
    skill = rng.uniform(-0.5, 2.0, size=(models, 1))
    raw = skill * (2.0 * labels - 1.0) + rng.standard_normal((models, n))
    scores = np.round(np.clip(raw, -4, 4) * (levels / 8)) / (levels / 8)
    return scores.astype(np.float32), labels


class ShuffleUnavailable(ValueError):
    """The warp-shuffle work-group scan cannot run here; the message says why."""


def shuffle_unavailable(device, wg):
    """Why the warp-shuffle scan (WARP_SHUFFLE=1: inline PTX shfl.sync) cannot run on this
    device with work-groups of wg, or None. Only NVIDIA's OpenCL compiles PTX."""
    platform = device.platform.name.strip()
    if "NVIDIA" not in platform.upper():
        return f"the warp-shuffle scan is inline NVIDIA PTX; the platform here is {platform}"
    if wg % 32 or wg > 1024:
        return f"the warp-shuffle scan needs a multiple of 32 work-items, at most 1024, not {wg}"
    return None


def build(ctx, device, sources, names, defines, shuffle):
    """The kernels `names` of the joined sources; with shuffle, the WARP_SHUFFLE=1 build of the
    work-group scan (ShuffleUnavailable, with the reason, where it cannot run or build)."""
    if not shuffle:
        return [kernel(ctx, sources, name, defines) for name in names]
    why = shuffle_unavailable(device, defines["WG"])
    if why:
        raise ShuffleUnavailable(why)
    try:
        return [kernel(ctx, sources, name, {**defines, "WARP_SHUFFLE": 1}) for name in names]
    except KernelBuildError as err:
        raise ShuffleUnavailable(f"the warp-shuffle scan does not build on {device.name.strip()}: "
                                 f"{str(err).splitlines()[0]}") from None


def list_local_bytes(step, wg, items=8):
    """Local memory of steps 1-2: the work-group scan, the 64-bit partial sums, the staged labels."""
    return 4 * (2 * wg + 1) + 8 * wg + (4 * items * wg if step == "2_work_efficient" else 0)


class ListFitness:
    """Steps 1-2: one work-group computes the fitness of one sorted list of labels."""

    def __init__(self, ctx, queue, step, wg=None, items=8, shuffle=False):
        """wg: work-items, by default the most (a power of two, up to 256) that the
        device and the built kernel allow."""
        if step not in LIST_STEPS:
            raise ValueError(f"unknown step {step!r}; use one of {', '.join(LIST_STEPS)}")
        if count(items, "items") < 1:
            raise ValueError("items: expected at least 1 label per work-item, got 0")
        name = "fitness_hs" if step == "1_hillis_steele" else "fitness_we"
        src = (WG_SCAN, f"scan/{step}.cl")
        extra = {"ITEMS": items} if step == "2_work_efficient" else {}
        self.wg, (self.kernel,) = work_group(
            queue.device, wg, 256, lambda w: list_local_bytes(step, w, items),
            lambda w: build(ctx, queue.device, src, [name], {"WG": w, "T": "uint", **extra}, shuffle))
        self.ctx, self.queue = ctx, queue
        self.out = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 16)

    def _on_device(self, sorted_labels, n, dtype=None):
        """A device buffer of the first n labels (n >= 2): a buffer (or pyopencl array of
        int32) as it is, a NumPy array of integer labels, checked, copied to a new one."""
        if count(n) < 2:
            raise ValueError(f"n = {n}: fewer than 2 examples are one class at most, "
                             "so the fitness is undefined")
        if isinstance(sorted_labels, np.ndarray):
            a = sorted_labels
            if a.ndim != 1 or len(a) < n or not np.issubdtype(a.dtype, np.integer):
                raise ValueError(f"expected at least n = {n:,} integer labels in one dimension, "
                                 f"got {a.dtype} of shape {a.shape}")
            check_labels(a[:n], "sorted_labels")
            return cl.Buffer(self.ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                             hostbuf=np.ascontiguousarray(a[:n], np.int32))
        if not isinstance(sorted_labels, (cl.Buffer, cla.Array)):
            raise TypeError("expected the sorted labels as a device buffer or a NumPy array of int32, "
                            f"got {type(sorted_labels).__name__}")
        return device_buffer(sorted_labels, "sorted_labels", n, np.int32, dtype)

    def enqueue(self, sorted_labels, n, dtype=None):
        """sorted_labels: n int32 labels in fitness order, a pyopencl array (a bare
        cl.Buffer with dtype=np.int32; a NumPy array is copied to the device first)."""
        buf = self._on_device(sorted_labels, n, dtype)
        return self.kernel(self.queue, (self.wg,), (self.wg,), buf, np.int32(n), self.out)

    def fitness(self, sorted_labels, n, dtype=None):
        """The fitness of the first n labels (0 or 1) in fitness order (as for
        `enqueue`); labels on the device are read back once to check that they are 0 or 1."""
        buf = self._on_device(sorted_labels, n, dtype)
        if not isinstance(sorted_labels, np.ndarray):
            host = np.empty(n, np.int32)
            cl.enqueue_copy(self.queue, host, buf)
            check_labels(host, "sorted_labels")
        self.enqueue(buf, n, np.int32)
        out = np.empty(2, np.uint64)
        cl.enqueue_copy(self.queue, out, self.out)
        positives = int(out[1])
        if positives in (0, n):
            raise ValueError("all examples are of one class: the fitness is undefined")
        return fitness_from_sum(float(out[0]), positives, n)


def list_sizes(device, candidates=(32, 64, 128, 256, 512, 1024)):
    """The work-group sizes steps 1-2 try: the candidates, and where the device
    runs none of them, the largest power of two below them that it does."""
    if any(launch.why_not(device, wg) is None for wg in candidates):
        return tuple(candidates)
    return (*candidates, launch.largest(device, min(candidates) // 2))


def scan_local_bytes(wg, items, look=32, stage=True):
    """Local memory of a DeviceScan: the work-group scan, the look-back window,
    and the staged tile (padded against bank conflicts)."""
    return 4 * (2 * wg + 1) + 8 * look + 16 + (4 * items * wg * 33 // 32 if stage else 16)


def scan_shapes(device, candidates, look=32):
    """(the (WG, ITEMS) tile shapes of `candidates` that this device can run: a
    work-group it allows and a tile that fits its local memory, [(shape, reason)]
    for the others). When none fits, the largest work-group that does, with
    the first candidate's ITEMS, stands in for them."""
    ok, skipped = [], []
    for wg, items in candidates:
        reason = launch.why_not(device, wg, scan_local_bytes(wg, items, min(look, wg)))
        (skipped.append(((wg, items), reason)) if reason else ok.append((wg, items)))
    if not ok:
        items = candidates[0][1]
        ok.append((launch.largest(device, max(w for w, _ in candidates),
                                  lambda w: scan_local_bytes(w, items, min(look, w)), smallest=4), items))
    return ok, skipped


def tile_shapes(device, sizes=(128, 256, 512, 1024), items=(32, 16, 8), look=32):
    """The device-wide scans' tile shapes from the device's own limits, as scan_shapes
    gives them: at each work-group size of `sizes`, the most items per work-item of
    `items` whose staged tile fits its local memory (the largest tile it holds at that
    size). On an H200 (48 KiB) they are 128 x 32, 256 x 32, 512 x 16 and 1,024 x 8."""
    if not (sizes and items and min(*sizes, *items) >= 1):
        raise ValueError(f"tile_shapes needs work-group sizes and items of at least 1, got {sizes!r}, {items!r}")

    def most(wg):             # local memory alone (scan_shapes says where wg is too many)
        fits = [it for it in items if launch.why_not(device, 1, scan_local_bytes(wg, it, min(look, wg))) is None]
        return fits[0] if fits else items[-1]
    return scan_shapes(device, [(wg, most(wg)) for wg in sizes], look)


def single_pass_unavailable(device):
    """Why the single pass cannot run on this device, in one line, or None: its
    status words need 64-bit atomics (cl_khr_int64_base_atomics)."""
    if SINGLE_PASS_ATOMICS in str(getattr(device, "extensions", "")).split():
        return None
    name = str(getattr(device, "name", "this device")).strip()
    return (f"{name} has no {SINGLE_PASS_ATOMICS} (64-bit atomics), which the single pass's "
            "look-back needs: the reduce-then-scan runs in its place")


class DeviceScan:
    """Step 3: an inclusive float32 scan of a whole buffer, in three launches
    (reduce, then scan) or in one (decoupled look-back). Where the device has no
    64-bit atomics, the single pass is built as the reduce-then-scan, and
    `fallback` says why (None otherwise)."""

    def __init__(self, ctx, queue, step, wg=None, items=16, look=None, stage=True, shuffle=False,
                 loads_first=True, warp_look=None, phases=False):
        """wg: work-items, by default the most (a power of two, up to 256) that the
        device and the built kernels allow; look: tiles looked back at once, by default
        32 (or all the work-group's work-items, when it has fewer); stage: the tile
        through local memory; shuffle: the warp-shuffle work-group scan (NVIDIA only,
        ShuffleUnavailable elsewhere); loads_first: with stage, each work-item asks
        for all its floats before it stores any into local memory (False: each as it
        comes, the experiment of gpubook.chapters.scan.phases); warp_look (single
        pass, with shuffle and a window of 32): the first warp looks back alone, with
        a ballot and shuffles (WARP_LOOK in 4_single_pass.cl), by default wherever
        shuffle and such a window are given; phases (single pass,
        NVIDIA only): the build that marks each tile's phases with the SM's cycle
        counter, into self.marks."""
        if step not in DEVICE_STEPS:
            raise ValueError(f"unknown step {step!r}; use one of {', '.join(DEVICE_STEPS)}")
        if count(items, "items") < 4 or items % 4:
            raise ValueError(f"items: expected a multiple of 4 (4 or more), got {items}")
        self.fallback = single_pass_unavailable(queue.device) if step == DEVICE_STEPS[1] else None
        step = DEVICE_STEPS[0] if self.fallback else step
        src = (WG_SCAN, TILE_IO, f"scan/{step}.cl")
        if phases:
            if step != DEVICE_STEPS[1]:
                raise ValueError(f"phases: only the single pass marks its phases, not {step}")
            src = ("device/nv_clock.cl",) + src
        names = ("tile_sums", "scan_sums", "scan_tiles") if step == DEVICE_STEPS[0] else ("scan_single_pass",)
        window = (lambda w: min(32, w)) if look is None else (lambda w: look)

        def kernels(w):
            if not 1 <= window(w) <= w:
                raise ValueError(f"look: the look-back window ({window(w)}) must be 1 to the work-group size ({w})")
            defines = {"WG": w, "ITEMS": items, "T": "float", "STAGE": int(bool(stage)),
                       "LOADS_FIRST": int(bool(loads_first))}
            if step == DEVICE_STEPS[1]:
                defines["LOOK"] = window(w)
            if phases:
                defines.update(PHASES=1, NV_PTX=1)
            fits = step == DEVICE_STEPS[1] and shuffle and window(w) == 32
            if warp_look or (warp_look is None and fits):
                if not fits:
                    raise ValueError("warp_look: the single pass's warp look-back needs "
                                     f"shuffle=True and a window of 32, not {window(w)}")
                defines["WARP_LOOK"] = 1
            return build(ctx, queue.device, src, names, defines, shuffle)

        self.wg, self.kernels = work_group(queue.device, wg, 256,
                                           lambda w: scan_local_bytes(w, items, window(w), stage), kernels)
        self.ctx, self.queue, self.step, self.tile = ctx, queue, step, items * self.wg
        self.phases, self.marks = bool(phases), None
        self.options = dict(wg=self.wg, items=items, look=look, stage=stage, shuffle=shuffle,
                            loads_first=loads_first, warp_look=warp_look)  # to build it again
        self._scratch = {}

    def _buffers(self, tiles):
        """(partial sums or status words, counter) for `tiles` tiles, and which
        scan of them this is (the single pass needs no reset between scans)."""
        entry = self._scratch.get(tiles)
        if entry is None or (entry[2] + 1) * tiles >= 2**32:
            mf = cl.mem_flags
            size = 8 * tiles if self.step == DEVICE_STEPS[1] else 4 * tiles
            aux, counter = cl.Buffer(self.ctx, mf.READ_WRITE, size), cl.Buffer(self.ctx, mf.READ_WRITE, 4)
            zero = np.zeros(1, np.uint32)
            cl.enqueue_fill_buffer(self.queue, aux, zero, 0, size)
            cl.enqueue_fill_buffer(self.queue, counter, zero, 0, 4)
            entry = [aux, counter, 0]
            self._scratch[tiles] = entry
        entry[2] += 1
        return entry

    def enqueue(self, src, dst, n, dtype=None):
        """Scan the first n floats of `src` into `dst` (each a float32 pyopencl array,
        or a bare cl.Buffer with dtype=np.float32, of at least n floats); returns every
        event of the scan (none for n = 0). With phases, self.marks then holds the
        tiles' marks (6 ulongs a tile)."""
        n = count(n, "n", 2**32 - 1)
        src = device_buffer(src, "src", n, np.float32, dtype)
        dst = device_buffer(dst, "dst", n, np.float32, dtype)
        if n == 0:
            return []
        tiles = -(-n // self.tile)
        aux, counter, epoch = self._buffers(tiles)
        q, wg, n32 = self.queue, self.wg, np.uint32(n)
        if self.step == DEVICE_STEPS[0]:
            sums, scan_sums, scan_tiles = self.kernels
            return [sums(q, (tiles * wg,), (wg,), src, n32, aux),
                    scan_sums(q, (wg,), (wg,), aux, np.uint32(tiles)),
                    scan_tiles(q, (tiles * wg,), (wg,), src, dst, n32, aux)]
        marks = ()
        if self.phases:
            if self.marks is None or self.marks.size < 48 * tiles:
                self.marks = cl.Buffer(self.ctx, cl.mem_flags.WRITE_ONLY, 48 * tiles)
            marks = (self.marks,)
        return [self.kernels[0](q, (tiles * wg,), (wg,), src, dst, n32, aux, counter,
                                np.uint32(epoch), *marks)]


class Population:
    """Step 4: the fitness of P models on the same n examples, one work-group per model."""

    def __init__(self, ctx, queue, n, shortcut, wg=None):
        """wg: work-items per model, by default the largest power of two up to 256
        that the device and the built kernel allow with the n keys in local memory."""
        if count(n) < 2:
            raise ValueError(f"n = {n}: fewer than 2 examples are one class at most, "
                             "so the fitness is undefined")
        np2 = 1 << (n - 1).bit_length()
        defines = {"NP": np2, "T": "uint", "SHORTCUT": int(bool(shortcut))}
        self.wg, (self.kernel,) = work_group(
            queue.device, wg, 256, lambda w: 8 * np2 + 4 * (2 * w + 1),
            lambda w: [kernel(ctx, (WG_SCAN, "scan/5_population.cl"), "population", {"WG": w, **defines})])
        self.ctx, self.queue, self.n, self.np2 = ctx, queue, n, np2

    def work(self):
        """What one work-group does for its model, counted from the kernel's loops:
        the bitonic sort's rounds over NP = 2**k keys (k(k + 1)/2, each ending at a
        barrier), the most key pairs one work-item compare-exchanges in a round, and
        the blocks of WG labels the scan (SHORTCUT = 0) walks."""
        k = self.np2.bit_length() - 1
        return {"n": self.n, "wg": self.wg, "keys": self.np2,
                "sort_rounds": k * (k + 1) // 2,
                "pairs_per_item": -(-(self.np2 // 2) // self.wg),
                "scan_blocks": -(-self.n // self.wg)}

    def upload(self, scores, labels):
        """Device copies of a models x n float32 score array (at least one model) and
        the labels, after the checks."""
        scores = self._checked(scores)
        positives = check_inputs(scores, labels)
        if not scores.shape[0]:
            raise ValueError("scores: expected at least one model (row), got none")
        mf = cl.mem_flags
        s = cl.Buffer(self.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(scores, np.float32))
        y = cl.Buffer(self.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.asarray(labels, np.uint8))
        out = cl.Buffer(self.ctx, mf.READ_WRITE, 4 * scores.shape[0])
        return s, y, out, positives, scores.shape[0]

    def enqueue(self, scores, labels, out, positives, models):
        return self.kernel(self.queue, (models * self.wg,), (self.wg,), scores, labels,
                           np.int32(self.n), np.int32(positives), out)

    def _checked(self, scores):
        """The scores, refused unless a models x n array of float32: a wider type
        would be rounded, and rounding can tie scores that were not tied."""
        if not isinstance(scores, np.ndarray) or scores.dtype != np.float32:
            raise TypeError(f"scores: expected a NumPy array of float32, got "
                            f"{getattr(scores, 'dtype', type(scores).__name__)}")
        if scores.ndim != 2 or scores.shape[1] != self.n:
            raise ValueError(f"scores: built for n = {self.n}, expected models x {self.n}, "
                             f"got shape {scores.shape}")
        return scores

    def fitness(self, scores, labels):
        """Each model's fitness (float32); no models give an empty array."""
        if not self._checked(scores).shape[0]:
            check_inputs(scores, labels)
            return np.empty(0, np.float32)
        bufs = self.upload(scores, labels)
        self.enqueue(*bufs)
        got = np.empty(bufs[-1], np.float32)
        cl.enqueue_copy(self.queue, got, bufs[2])
        return got


def check_prefix(got, ref, rtol):
    """The largest error of float32 prefix sums against float64 ones, relative to the
    total; AssertionError, with the error, beyond rtol."""
    got = np.asarray(got)
    err = float(np.max(np.abs(got - ref[:got.size]))) / float(ref[got.size - 1])
    if not err < rtol:
        raise AssertionError(f"prefix sums differ from float64 by {err:.1e} of the total (tolerance {rtol:.0e})")
    return err
