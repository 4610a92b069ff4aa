"""The float64 products of chapter 8's step 6 (gpubook.chapters.lsq.cholqr), on
the register tiles or the FP64 tensor cores, launched with their arguments set
once (gpubook.launch.Bound)."""
import numpy as np

from ... import dmma, launch, tiles


class Products:
    """The float64 products C (+)= alpha A'B of this step, as gpubook.tiles.launch
    takes them. A shape picks the kernel: one with WM, WN (register tiles,
    FMA) runs everywhere; one with WARPS_M, WARPS_N runs on the FP64 tensor
    cores (gpubook.dmma; emulate=True runs that kernel anywhere, for tests).
    bind: CholeskyQR2's launches repeat run after run, so each one's arguments
    are set once (`bound`, a launch.Bound); bind=False sets them at every
    launch, as a plain kernel call does (to measure what binding saves)."""

    def __init__(self, emulate=False, bind=True):
        self.emulate = bool(emulate)
        self.bound = launch.Bound() if bind else None

    def launch(self, queue, kern, global_size, local_size, *args, wait_for=None):
        """One launch of any kernel of the step, with `bound` where there is one."""
        if self.bound is None:
            return launch.call(queue, kern, global_size, local_size, *args, wait_for=wait_for)
        return self.bound.reuse(("launch", queue, kern, global_size, local_size, args), wait_for,
                                lambda: self.bound(queue, kern, global_size, local_size, *args, wait_for=wait_for))

    @staticmethod
    def on_tensor_cores(shape):
        return "WARPS_M" in shape

    @classmethod
    def upper_in_one(cls, shape):
        """True where a product of two triangular factors over an upper triangle runs as
        one launch (dmma.product's upper: the FP64 tensor cores, square tiles); where
        False it runs band by band."""
        return cls.on_tensor_cores(shape) and shape["TM"] == shape["TN"]

    def check(self, ctx, device, shape, triangle=False, upper=False):
        """Build the kernel a shape runs, or raise a clear error. upper: the FP64
        tensor-core kernel's single launch over an upper triangle (dmma.product's upper;
        the register tiles have none)."""
        if self.on_tensor_cores(shape):
            dmma.get_kernel(ctx, device, shape, triangle, self.emulate, upper=upper)
        elif upper:
            raise ValueError("upper (one launch over an upper triangle) runs on the FP64 tensor cores only")
        else:
            tiles.launch_kernel(ctx, device, shape, np.float64, triangle=triangle)

    def __call__(self, queue, shape, *args, wait_for=None, **kw):
        def make():
            if self.on_tensor_cores(shape):
                return dmma.product(queue, shape, *args, emulate=self.emulate, bound=self.bound,
                                    wait_for=wait_for, **kw)
            return tiles.launch(queue, shape, np.float64, *args, bound=self.bound, wait_for=wait_for, **kw)
        if self.bound is None:
            return make()
        # the shape's items in their order: equal tuples are equal shapes
        return self.bound.reuse(("product", queue, tuple(shape.items()), args, tuple(kw.items())), wait_for,
                                make)

    @staticmethod
    def rows_step(shape):
        """The rows of one pass through local memory."""
        return shape.get("K", shape.get("KC", 1))
