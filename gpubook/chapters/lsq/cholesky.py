"""Chapter 8's blocked Cholesky factorisation on the device (kernels/lsq/7_cholesky.cl),
float64, as CholeskyQR2 (gpubook.chapters.lsq.cholqr) runs it twice: the diagonal
blocks in one work-group each, the rows below them one work-item each, and the
trailing updates as register-tiled (or FP64 tensor-core) products, with L^-1
alongside when asked. That explicit inverse lets Q1 = A R1^-1 run as a product, at a
price in accuracy: Q1 R1 = A then holds to about u κ(R1), not u as with a triangular
solve (on a 200 x 13 matrix with a column 1e-6 from another, CholeskyQR2's Q R = A to
1.1e-11 of ||A||, where its Gram check and ||Q'Q - I|| hold to rounding)."""
import numpy as np
import pyopencl as cl

from ... import launch
from ...device import require_fp64
from ...kernels import kernel
from .products import Products
from . import inputs

PATH = "lsq/7_cholesky.cl"
UPDATE_SHAPE = {"TM": 64, "TN": 64, "WM": 4, "WN": 4, "K": 8, "STAGES": 2}
PRODUCT_SHAPE = {"TM": 128, "TN": 64, "WM": 8, "WN": 4, "K": 8, "STAGES": 2}
# Blocks of a panel: the blocks of one panel update only the panel's own
# columns, and the rest of the matrix takes the whole panel in one product
# (PANEL blocks deep instead of one). On an H100 (2026-11-26, 25,000 x 5,001,
# tools/check_qr.py with CHOLQR_SET=cholesky) the updates took 12.7 + 7.0 ms of
# device time with one block, 8.8 + 5.0 ms with 8 on the register tiles, and
# 6.5 + 3.7 ms with 8 on the FP64 tensor cores.
PANEL = 8
# chol_diag's work-items at most (fewer where the device or the kernel cannot hold them).
# On an H200 (2026-11-28, tools/time_cholesky.py, k = 5,001 with R^-1) 512 took
# chol_diag from 70.3 to 54.4 us a block, and the factorisation from 16.2 to 15.2 ms;
# 1,024 gave 54.1 us.
DIAG_WORK_ITEMS = 512
# L^-1's launches run on a second queue of the same device, each after the launch of
# the factorisation it needs: the factorisation's chain of small launches leaves most
# compute units idle, and the inverse's launches are not on that chain (the next
# block waits for the trailing update, never for the inverse).
OVERLAP = True


def diagonal_ratio(ok, diag):
    """A Cholesky factor's largest diagonal entry over its smallest (a lower estimate of
    its condition number); inf where the factorisation failed or a pivot is zero."""
    d = np.abs(diag)
    return float(d.max() / d.min()) if ok and d.min() > 0 else np.inf


def _check_slot(slot):
    """slot, where it names one of a DeviceCholesky's two (0 or 1), else a clear error."""
    if slot not in (0, 1):
        raise ValueError(f"slot must be 0 or 1, got {slot!r}")
    return slot


class DeviceCholesky:
    """G = L L' in place for a k x k float64 matrix on the device (its lower
    triangle is read): L in the lower triangle, R = L' in the upper, by
    blocks of `block` columns; with a buffer `inverse`, L^-1 into it too.
    update_shape: the tiles of the trailing lower triangle (square);
    product_shape: those of the inverse's update (either kind: Products)."""

    def __init__(self, ctx, queue, k, block=64, update_shape=None, product_shape=None, products=None,
                 panel=PANEL, overlap=OVERLAP):
        device = queue.device
        if int(panel) < 1:
            raise ValueError("a panel holds at least one block")
        self.panel = int(panel)
        require_fp64(device)
        self.ctx, self.queue, self.k = ctx, queue, inputs.count("k", k, 1)
        inputs.count("block", block, 1)
        self.products = products or Products()
        self.update_shape = dict(update_shape or UPDATE_SHAPE)
        self.product_shape = dict(product_shape or PRODUCT_SHAPE)
        if self.update_shape["TM"] != self.update_shape["TN"]:
            raise ValueError("the trailing update needs square tiles (TM = TN)")
        self.products.check(ctx, device, self.update_shape, triangle=True)
        self.products.check(ctx, device, self.product_shape)
        # the block's columns: the largest power of two up to `block` whose L11 fits local memory
        self.CB = 1 << (min(int(block), self.k).bit_length() - 1)
        while self.CB > 1 and launch.why_not(device, 1, 8 * self.CB * (self.CB + 1)):
            self.CB //= 2
        wg = launch.largest(device, DIAG_WORK_ITEMS, lambda s: 8 * self.CB * (self.CB + 1))
        while True:
            self.kern = {name: kernel(ctx, PATH, name, {"CB": self.CB, "WG": wg})
                         for name in ("chol_diag", "chol_rows", "chol_cols", "take_triangle", "identity")}
            if launch.why_not(device, wg, kern=self.kern["chol_diag"]) is None or wg == 1:
                break
            wg //= 2
        launch.check(device, wg, kern=self.kern["chol_diag"])
        self.wg = wg
        mf = cl.mem_flags
        # the pivots and the failure flag of two factorisations (slots 0 and 1)
        self.diag = [cl.Buffer(ctx, mf.READ_WRITE, 8 * self.k) for _ in range(2)]
        self.flag = [cl.Buffer(ctx, mf.READ_WRITE, 4) for _ in range(2)]
        # each block's M apart, so that the inverse's launches may lag the factorisation's
        blocks, align = -(-self.k // self.CB), max(8, int(device.mem_base_addr_align) // 8)
        stride = -(-8 * self.CB * self.CB // align) * align
        self._m = cl.Buffer(ctx, mf.READ_WRITE, stride * blocks)
        self.linv = [self._m.get_sub_region(b * stride, 8 * self.CB * self.CB) for b in range(blocks)]
        self.side = cl.CommandQueue(ctx, device, properties=queue.properties) if overlap else queue

    def enqueue(self, g, slot=0, inverse=None, trace=None, fresh=True):
        """Factor g (k x k, stride k) in place; L^-1 into `inverse` when given.
        `status(slot)` reads the pivots afterwards: with fresh=False, the slot's
        failure flag is not cleared first, so it reports this factorisation and
        the slot's earlier ones since the last fresh one."""
        q, i32, k, cb = self.queue, np.int32, self.k, self.CB
        _check_slot(slot)
        for name, buf in (("g", g), ("inverse", inverse)):
            if buf is not None:
                inputs.buffer(name, buf, 8 * k * k)
        trace = [] if trace is None else trace
        diag, flag = self.diag[slot], self.flag[slot]
        self._side = []                          # the inverse's last launch on the side queue
        if inverse is not None:
            # after everything the queue holds so far (an earlier run may still read `inverse`)
            after = [cl.enqueue_marker(q)] if self.side is not q else None
            self._side = [launch.enqueue(self.side, self.kern["identity"], (k, k), (64, 4), inverse, i32(k),
                                         i32(k), wait_for=after, bound=self.products.bound)]
        pb = cb * self.panel
        for p0 in range(0, k, pb):
            pend = min(k, p0 + pb)
            for j0 in range(p0, pend, cb):
                self._block(j0, min(cb, k - j0), pend, g, diag, flag, fresh and j0 == 0, inverse, trace)
            if pend < k:                         # the panel's columns, all at once, on the rest
                rest, r12 = k - pend, p0 * k + pend
                if inverse is not None:          # L21 is final: later launches write below the panel
                    self._inverse(trace, ("tiles: inverse -= L21 X", self.products(
                        self.side, self.product_shape, g, r12, k, inverse, p0 * k, k, inverse, pend * k,
                        k, rest, pend, 0, pend - p0, alpha=-1.0, accumulate=True, wait_for=self._solved)))
                trace.append(("tiles: trailing -= L21 L21'", self.products(
                    q, self.update_shape, g, r12, k, g, r12, k, g, pend * k + pend, k,
                    rest, rest, 0, pend - p0, alpha=-1.0, accumulate=True, triangle=True)))
        if inverse is not None and self.side is not q:   # the queue's next launch reads L^-1
            cl.enqueue_barrier(q, wait_for=self._side[-1:])

    def _inverse(self, trace, launched):
        """One launch of the inverse's (name, event): into the trace and the side's chain."""
        trace.append(launched)
        self._side = [launched[1]]

    def _block(self, j0, w, pend, g, diag, flag, reset, inverse, trace):
        """Factor the block of columns [j0, j0 + w) of a panel that ends at pend:
        its diagonal block, the rows below it, and the update of the panel's
        columns after it (the rest of the matrix waits for the panel's end).
        reset: chol_diag clears the failure flag first."""
        q, i32, k, bound = self.queue, np.int32, self.k, self.products.bound
        rest, linv = k - j0 - w, self.linv[j0 // self.CB]
        trace.append(("chol_diag", self.products.launch(q, self.kern["chol_diag"], (self.wg,), (self.wg,), g,
                                                        i32(k), i32(j0), i32(w), diag, flag, i32(reset), linv)))
        if rest:
            trace.append(("chol_rows", launch.enqueue(q, self.kern["chol_rows"], (rest,), (64,), g, i32(k),
                                                      i32(j0), i32(k), linv, bound=bound)))
        solved = self._solved = [trace[-1][1]]   # L11's M and the rows below: what the inverse reads
        if inverse is not None:
            self._inverse(trace, ("chol_cols", launch.enqueue(
                self.side, self.kern["chol_cols"], (j0 + w,), (64,), inverse, i32(k), i32(j0), i32(w), linv,
                bound=bound, wait_for=solved + self._side)))
        inside = pend - j0 - w                   # the panel's columns after this block
        if rest and inside:
            r12 = j0 * k + j0 + w                # R12: the block's rows, the columns after it
            if inverse is not None:
                self._inverse(trace, ("tiles: inverse -= L21 X", self.products(
                    self.side, self.product_shape, g, r12, k, inverse, j0 * k, k, inverse, (j0 + w) * k,
                    k, inside, j0 + w, 0, w, alpha=-1.0, accumulate=True, wait_for=solved)))
            trace.append(("tiles: trailing -= L21 L21'", self.products(
                q, self.update_shape, g, r12, k, g, r12, k, g, (j0 + w) * k + j0 + w, k,
                rest, inside, 0, w, alpha=-1.0, accumulate=True)))

    def ok(self, slot=0):
        """True when every pivot of the slot's factorisation was positive and finite:
        its failure flag alone, one read (chol_diag flags a NaN or infinite pivot too)."""
        flag = np.zeros(1, np.int32)
        cl.enqueue_copy(self.queue, flag, self.flag[_check_slot(slot)])
        return not flag[0]

    def status(self, slot=0):
        """(True when every pivot was positive and finite, R's diagonal)."""
        ok, diag = self.ok(slot), np.empty(self.k)
        cl.enqueue_copy(self.queue, diag, self.diag[slot])
        return ok and bool(np.all(np.isfinite(diag))), diag

    def triangle(self, src, dst, upper, trace=None):
        """dst = the upper (or lower) triangle of src, zeros elsewhere."""
        ev = launch.enqueue(self.queue, self.kern["take_triangle"], (self.k, self.k), (16, 16), src, dst,
                            np.int32(self.k), np.int32(self.k), np.int32(int(upper)), bound=self.products.bound)
        if trace is not None:
            trace.append(("take_triangle", ev))
        return ev
