"""Chapter 8's step 5: step 3's blocked Householder QR with its trailing
update done as register-tiled float64 products (gpubook.tiles).

Columns go in outer panels of `outer` columns. Inside one, step 3's kernels
factor inner panels of `nb` columns and update the rest of the outer panel;
then the outer panel's reflections, in the compact form Q = I - V T V', reach
every later column at once through three matrix products
(kernels/lsq/5_tiled.cl says which). A wide outer panel makes the products
large and efficient, a narrow inner one keeps the per-column launches cheap.
"""
import numpy as np
import pyopencl as cl

from ... import launch, tiles
from . import inputs
from .blocked import BlockedQR
from ...kernels import build

# The fastest shape for the whole factorisation in a probe on the H200
# (chapter 8 sweeps it on the device it runs on).
DEFAULT_SHAPE = {"TM": 128, "TN": 64, "WM": 8, "WN": 4, "K": 8, "STAGES": 2}


class TiledQR(BlockedQR):
    """[R; block of rows] back to triangular form, outer panels updated by
    register-tiled products. nb: inner panel width (step 3's kernels); outer:
    outer panel width, a multiple of nb; shape: the product's tile shape;
    chunk: rows per work-group row in the products over all rows;
    rows_per_item: rows of the block per work-item in step 3's per-column
    launches (two halve their work-groups and partial sums; which pays
    depends on the device)."""

    def __init__(self, ctx, queue, n, nb=16, outer=128, block_rows=32768, shape=None, chunk=2048,
                 rows_per_item=1):
        self.RPI = inputs.count("rows_per_item", rows_per_item, 1)
        super().__init__(ctx, queue, n, nb=nb, block_rows=block_rows)
        self.shape = dict(shape or DEFAULT_SHAPE)
        if outer < nb or outer % nb:
            raise ValueError(f"the outer panel ({outer}) must be a multiple of the inner one ({nb})")
        if chunk % self.shape["K"]:
            raise ValueError(f"row chunks of {chunk} are not a multiple of the tile's K = {self.shape['K']}")
        # the shape must build and run here: a clear error now, not at the first launch
        tiles.get_kernel(ctx, queue.device, self.shape, np.float64)
        self.outer, self.chunk = int(outer), int(chunk)
        # the transpose's square tile: 16 x 16 where the device allows it
        self.TT = launch.square_side(queue.device, (16, 8, 4, 2, 1), lambda t: 8 * t * (t + 1))
        prg = build(ctx, "lsq/5_tiled.cl", {"TT": self.TT})
        self.k.update({name: cl.Kernel(prg, name) for name in ("z_sum", "build_t", "r_update", "transpose")})
        launch.check(queue.device, self.TT ** 2, kern=self.k["transpose"])
        # T's one work-group: as wide as the outer panel (rounded to warps), or what fits
        self.t_group = launch.largest(queue.device, -(-self.outer // 32) * 32, kern=self.k["build_t"])
        mf, ld, o = cl.mem_flags, self.ld, self.outer
        chunks = -(-self.block_rows // self.chunk)
        self.Zq = cl.Buffer(ctx, mf.READ_WRITE, 8 * chunks * o * ld)
        self.Z, self.Wq = (cl.Buffer(ctx, mf.READ_WRITE, 8 * o * ld) for _ in range(2))
        self.Tq = cl.Buffer(ctx, mf.READ_WRITE, 8 * o * o)
        self.Ut = cl.Buffer(ctx, mf.READ_WRITE, 8 * o * self.block_rows)

    def enqueue(self, b, trace=None):
        """Fold the b rows in the block buffer into R (as BlockedQR.enqueue)."""
        events = []
        note = self._recorder(events, self.checked_block(b, trace))
        self._start(b)
        for k_outer in range(0, self.n, self.outer):
            end = min(k_outer + self.outer, self.n)
            for k0 in range(k_outer, end, self.nb):
                pw = min(self.nb, end - k0)
                self._panel(b, k0, pw, note)
                self._trail(b, k0, pw, end, note)
            self._outer_update(b, k_outer, end - k_outer, note)
        self._residual(b, note)
        return [events[0], events[-1]]

    def resource_rows(self):
        """Step 3's kernels, then the products (register tiles in double) and the
        kernels around them, each at the local size it runs with."""
        dev, shape = self.queue.device, self.shape
        product = tiles.launch_kernel(self.ctx, dev, shape, np.float64)
        label = f"{shape['TM']}x{shape['TN']}/{shape['WM']}x{shape['WN']}/K{shape['K']}"
        return super().resource_rows() + [
            (f"register_tiles, double ({label})", product, tiles.work_items(shape)),
            ("z_sum", self.k["z_sum"], launch.local_size(self.k["z_sum"], dev, (64, 1))),
            (f"build_t (n_o = {self.outer})", self.k["build_t"], min(self.t_group, -(-self.outer // 32) * 32)),
            ("r_update", self.k["r_update"], launch.local_size(self.k["r_update"], dev, (64, 1))),
            ("transpose", self.k["transpose"], (self.TT, self.TT))]

    def _product(self, name, note, *args, **kw):
        note(name, tiles.launch(self.queue, self.shape, np.float64, *args, **kw))

    def _outer_update(self, b, k0, pw, note):
        """Columns k0+pw.. of [R; B] -= V T' V' [R; B] for the outer panel's pw reflections."""
        q, i32, ld, o = self.queue, np.int32, self.ld, self.outer
        rest = ld - (k0 + pw)
        chunks = -(-b // self.chunk)
        # 1. U'B for the panel's own columns (G = U'U) and every later one
        self._product("tiles: U'B", note, self.B, k0, ld, self.B, k0, ld, self.Zq, k0, ld, pw, ld - k0, 0, b,
                      k_chunk=self.chunk, c_stride=o * ld)
        note("z_sum", launch.enqueue(q, self.k["z_sum"], (ld - k0, pw), (64, 1), self.Zq, i32(chunks),
                                     i32(o * ld), self.R, self.Z, i32(ld), i32(k0), i32(pw)))
        wg = min(self.t_group, -(-pw // 32) * 32)
        note("build_t", launch.enqueue(q, self.k["build_t"], (wg,), (wg,), self.Z, i32(ld), i32(k0), i32(pw),
                                       self.tau, self.Tq, i32(o), cl.LocalMemory(8 * pw)))
        # 4. W = T'Z for the later columns
        self._product("tiles: T'Z", note, self.Tq, 0, o, self.Z, k0 + pw, ld, self.Wq, k0 + pw, ld, pw, rest, 0, pw)
        note("r_update", launch.enqueue(q, self.k["r_update"], (rest, pw), (64, 1), self.R, self.Wq, i32(ld),
                                        i32(k0), i32(pw)))
        tt = (self.TT, self.TT)
        note("transpose", self.k["transpose"](q, launch.global_size((pw, b), tt), tt, self.B, i32(b),
                                              i32(ld), i32(k0), i32(pw), self.Ut, i32(self.block_rows)))
        # 7. B -= U W
        self._product("tiles: B -= UW", note, self.Ut, 0, self.block_rows, self.Wq, k0 + pw, ld, self.B, k0 + pw,
                      ld, b, rest, 0, pw, alpha=-1.0, accumulate=True)
