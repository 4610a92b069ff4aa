"""Chapter 8's CholeskyQR2 with its first Gram matrix on the TF32 tensor cores
(part 6.3's wgmma product, gpubook.wgmma.Gram) and everything else in float64
on the FP64 tensor cores (gpubook.chapters.lsq.cholqr).

The first pass only has to bring A close to orthonormal: R1 can be the Cholesky
factor of any matrix near A'A, because Q1 = A R1^-1 is formed in float64 from A
itself and the second pass, in float64, factors what Q1 really is. A Gram matrix
off by a relative eps leaves Q1 with a condition number of about
sqrt((1 + eps k^2) / (1 - eps k^2)) for k = cond(A): close to 1 while eps k^2 is
small. TF32 keeps 10 bits of each float (eps about 1e-4 on the Gram matrix), so
this pays while cond(A), as the columns' scales leave it, stays in the tens. Two
checks guard it, both from pivots the factorisations give anyway: the first
factor's diagonal ratio (an estimate of that condition number) at most
`mixed_limit`, and the second's (a lower estimate of cond(Q1)) at most `q1_limit`.
Where either fails, or either Cholesky factorisation does, the whole factorisation
runs again with a float64 first pass (and from there falls back as CholeskyQR2
does). `first` says which first pass
gave R, `first_reason` why it was not TF32 ('' when it was).

The narrowing, the product and the widening are three more passes over A in
float32 (kernels/lsq/8_mixed.cl): the product reads A once in half the bytes, at
the TF32 rate instead of the FP64 one.
"""
import numpy as np
import pyopencl as cl

from ... import launch, wgmma
from ...kernels import kernel
from . import cholqr

PATH = "lsq/8_mixed.cl"
# The first factor's diagonal ratio above which the TF32 first pass is not trusted:
# eps k^2 = 1.2e-4 x 30^2 = 0.1, with the Gram matrix's relative error (Frobenius)
# that TF32 rounding of A gives chapter 8's 25,000 x 5,001 regression (NumPy,
# 2026-11-28: its ratio is 11.3, cond(A) 111, and cond(Q1) came out 1.004, with
# ||QᵀQ − I||_F 4.1e-14 after the second pass against 3.0e-14 all in float64)
MIXED_LIMIT = 30.0
# The second factor's diagonal ratio above which Q1 is not near enough orthonormal
Q1_LIMIT = 2.0
# The names of the first Gram matrix's launches in a trace (gpubook.chapters.lsq.measure)
LAUNCHES = ("narrow_rows", "clear the Gram matrix", "tf32_transpose", "wgmma_gram", "widen_lower")


def available(ctx, queue):
    """(True, '') where the TF32 first pass runs on this device's tensor cores, else
    (False, why not in a few words)."""
    if "NVIDIA" not in queue.device.platform.name:
        return False, "wgmma is Hopper's, reached through NVIDIA's driver"
    try:
        wgmma.Gram(ctx, queue, "tf32")
    except (cl.Error, RuntimeError, ValueError) as err:
        return False, f"part 6.3's wgmma Gram product does not build here ({str(err).splitlines()[0]})"
    return True, ""


class MixedCholeskyQR2(cholqr.CholeskyQR2):
    """CholeskyQR2 of an m x `cols` float64 matrix (as cholqr.CholeskyQR2 with
    mma=True) whose first Gram matrix is computed in TF32 by wgmma (mode: a
    gpubook.wgmma.GRAM_MODES mode, "tf32" rounds each float to TF32). emulate=True:
    both tensor-core kernels computed by the work-items themselves, on any device
    (for tests). Other options go to CholeskyQR2."""

    def __init__(self, ctx, queue, cols, mode="tf32", mixed_limit=MIXED_LIMIT, q1_limit=Q1_LIMIT, emulate=False,
                 **options):
        super().__init__(ctx, queue, cols, mma=True, emulate=emulate, **options)
        self.gram32 = wgmma.Gram(ctx, queue, mode=mode, emulate=emulate)
        self.mixed_limit, self.q1_limit = float(mixed_limit), float(q1_limit)
        self.k32 = {name: kernel(ctx, PATH, name) for name in ("narrow_rows", "widen_lower", "add_to_diagonal")}
        self._tf32, self._floats = True, {}
        self.first, self.first_reason = None, ""

    def _float_buffers(self, mp, np_):
        if (mp, np_) not in self._floats:
            mf = cl.mem_flags
            self._floats = {(mp, np_): (cl.Buffer(self.ctx, mf.READ_WRITE, 4 * mp * np_),
                                        cl.Buffer(self.ctx, mf.READ_WRITE, 4 * np_ * np_))}
        return self._floats[(mp, np_)]

    def enqueue_gram(self, buf, m, g, trace):
        """g = A'A's lower triangle; the first one (G1) in TF32 unless this run is
        the float64 one."""
        if g is not self.G1 or not self._tf32:
            return super().enqueue_gram(buf, m, g, trace)
        c, q, i32 = self.C, self.queue, np.int32
        mp, np_ = self.gram32.padded(m, c)
        xf, cf = self._float_buffers(mp, np_)
        events = [launch.enqueue(q, self.k32["narrow_rows"], (np_, mp), (64, 4), buf, i32(m), i32(c), i32(c),
                                 xf, i32(mp), i32(np_), bound=self.products.bound),
                  cl.enqueue_fill_buffer(q, cf, np.float32(0), 0, 4 * np_ * np_)]
        events += self.gram32.enqueue(xf, mp, np_, cf)
        events.append(launch.enqueue(q, self.k32["widen_lower"], (c, c), (64, 4), cf, i32(np_), i32(c), g,
                                     bound=self.products.bound))
        trace.extend(zip(LAUNCHES, events))

    def _triangular_product(self, name, low, up, out, trace):
        """R = R1 + (R2 - I) R1 (low: R2' below its diagonal, up: R1): after a TF32
        first pass R2 is I plus terms of about 1e-2, not 1e-13, and R2 R1 as one
        product would carry rounding errors of the size of R2 R1's terms; the
        product of R2 - I carries errors a hundred times smaller, and only the
        addition rounds at R's own size."""
        q, c = self.queue, self.C
        trace.append(("add_to_diagonal", launch.enqueue(q, self.k32["add_to_diagonal"], (c,), (64,), low,
                                                        np.int32(c), np.float64(-1.0),
                                                        bound=self.products.bound)))
        trace.append(("R = R1", cl.enqueue_copy(q, out, up)))
        super()._triangular_product(name, low, up, out, trace, accumulate=True)

    def enqueue(self, buf, m, trace=None):
        self.first = "TF32" if self._tf32 else "float64"
        return super().enqueue(buf, m, trace)

    def settle(self, buf, m, trace=None):
        """As CholeskyQR2's, after a TF32 first pass that its pivots do not trust
        has been replaced by a float64 one (enqueued again, the same trace)."""
        if self.first == "TF32":
            (ok1, d1), (ok2, d2) = self.chol.status(0), self.chol.status(1)
            r1, r2 = cholqr.diagonal_ratio(ok1, d1), cholqr.diagonal_ratio(ok2, d2)
            why = ("the TF32 Gram matrix is not numerically positive definite" if not ok1 else
                   f"cond(A) is about {r1:.1e}, above the TF32 limit {self.mixed_limit:g}"
                   if not r1 <= self.mixed_limit else
                   "the second Cholesky factorisation failed" if not ok2 else
                   f"cond(Q1) is at least {r2:.2g}, above {self.q1_limit:g}" if not r2 <= self.q1_limit else "")
            if why:
                self.first_reason = why
                self._tf32 = False
                try:
                    self.enqueue(buf, m, trace)
                finally:
                    self._tf32 = True
            else:
                self.first_reason = ""
        return super().settle(buf, m, trace)
