"""Least-squares rows folded into a triangular factor on the device by blocked
Householder reflections (chapter 8's step 3, kernels/lsq/3_blocked.cl).

[R; block of rows] is reflected back to triangular form panel by panel: one
launch per column of a panel, then the panel's reflections applied at once to
the trailing columns in the compact form Q = I - V T V'. Launches on an in-order
queue order the work-groups; none ever waits for another.
"""
import numpy as np
import pyopencl as cl

from ... import launch
from ...device import require_fp64
from ...kernels import build
from . import inputs


def checked_rows(x, y, w, n):
    """Rows of n values, their responses and weights as float64, or a clear
    error for a wrong dtype or shape, non-finite data or a negative weight."""
    return inputs.rows(x, y, w, n)


class BlockedQR:
    """Rows in blocks into R by blocked Householder reflections of [R; block],
    over all the device's compute units (kernels/lsq/3_blocked.cl).

    R is kept with its diagonal (n x (n+1), the response as column n), the
    residual sum of squares in sserr. nb: panel width (a panel's work-group has nb
    work-items; by default NB, or the largest power of two below it that the device
    allows); block_rows: rows per block."""

    WGS, RPI, TN, QL, RL, RT, KC = 128, 1, 32, 4, 8, 64, 512
    NB = 32

    def __init__(self, ctx, queue, n, nb=None, block_rows=32768):
        device = queue.device
        require_fp64(device)
        n, block_rows = inputs.count("n", n, 1), inputs.count("block_rows", block_rows, 1)
        nb = launch.largest(device, self.NB) if nb is None else inputs.count("nb", nb, 1)
        self.ctx, self.queue, self.n, self.nb, self.ld = ctx, queue, n, int(nb), n + 1
        self.block_rows = int(min(block_rows, max(1, device.max_mem_alloc_size // (8 * self.ld))))
        prg = self._build(ctx, device, launch.device_max(device))
        self.k = {name: cl.Kernel(prg, name) for name in
                  ("house_dots", "trail_w", "trail_finish", "trail_update", "column_ss")}
        # house_step runs once per column: one kernel object per partial-sums
        # parity, whose arguments change only where the column or panel does
        self.step = [cl.Kernel(prg, "house_step") for _ in range(2)]
        mf, ld = cl.mem_flags, self.ld
        groups = self._groups(self.block_rows)
        self.R = cl.Buffer(ctx, mf.READ_WRITE, 8 * n * ld)
        self.B = cl.Buffer(ctx, mf.READ_WRITE, 8 * self.block_rows * ld)
        self.part = [cl.Buffer(ctx, mf.READ_WRITE, 8 * groups * self.nb) for _ in range(2)]
        self.tau = cl.Buffer(ctx, mf.READ_WRITE, 8 * n)  # the reflections' scalars (step 5 reads them)
        self.T, self.rnew = (cl.Buffer(ctx, mf.READ_WRITE, 8 * self.nb * self.nb) for _ in range(2))
        self.W = cl.Buffer(ctx, mf.READ_WRITE, 8 * self.nb * ld)
        self.Zp = cl.Buffer(ctx, mf.READ_WRITE, 8 * -(-self.block_rows // self.KC) * self.nb * ld)
        self.sspart = cl.Buffer(ctx, mf.READ_WRITE, 8 * groups)
        self.reset()

    def _build(self, ctx, device, limit):
        """The program with work-groups of at most `limit` work-items (the class's
        sizes where the device allows them, halved where it does not), built
        again with a smaller limit when a built kernel allows fewer."""
        pow2 = lambda want: min(want, 1 << (limit.bit_length() - 1))  # noqa: E731
        self.WGS, self.TN = pow2(type(self).WGS), pow2(type(self).TN)
        self.QL = max(1, min(type(self).QL, limit // self.TN))
        self.RL = max(1, min(type(self).RL, limit // self.TN))
        self.FC = max(1, min(256, limit) // self.nb)  # trail_finish: FC columns x nb panel rows
        if self.nb > limit:
            raise launch.LaunchError(f"panels of {self.nb} columns need work-groups of {self.nb} work-items; "
                                     f"{device.name.strip()} allows {limit}")
        sizes = {"house_dots": self.WGS, "house_step": self.WGS, "column_ss": self.WGS,
                 "trail_w": self.TN * self.QL, "trail_finish": self.FC * self.nb, "trail_update": self.TN * self.RL}
        launch.check(device, max(sizes.values()), max(8 * self.WGS * self.nb, 8 * self.QL * self.nb * self.TN))
        defines = {"NB": self.nb, "WGS": self.WGS, "RPI": self.RPI, "TN": self.TN, "QL": self.QL,
                   "RL": self.RL, "RT": self.RT, "KC": self.KC, "FC": self.FC}
        prg = build(ctx, "lsq/3_blocked.cl", defines)
        short = [name for name, size in sizes.items() if launch.why_not(device, size, kern=cl.Kernel(prg, name))]
        if short and limit > 1:
            return self._build(ctx, device, limit // 2)
        return prg

    def _groups(self, b):
        return -(-b // (self.WGS * self.RPI))

    def launch_shapes(self, b=None):
        """{kernel name: (global size, local size)} of the first panel's launches
        for a block of b rows (block_rows by default), for the page to state."""
        b = self.block_rows if b is None else int(b)
        groups, trail = self._groups(b), self.ld - min(self.nb, self.n)
        one = (groups * self.WGS,), (self.WGS,)
        return {"house_dots": one, "house_step": one, "column_ss": one,
                "trail_w": ((-(-trail // self.TN) * self.TN * self.QL, -(-b // self.KC)), (self.TN * self.QL, 1)),
                "trail_finish": ((max(1, -(-trail // self.FC)) * self.FC, self.nb), (self.FC, self.nb)),
                "trail_update": ((-(-trail // self.TN) * self.TN, -(-b // self.RT) * self.RL), (self.TN, self.RL))}

    def resource_rows(self):
        """(label, kernel, local size) of every kernel this factorisation launches,
        for gpubook.resource_table."""
        shapes = self.launch_shapes()
        return [(f"{name} (n_b = {self.nb})", self.step[0] if name == "house_step" else self.k[name],
                 shapes[name][1]) for name in ("house_step", "house_dots", "trail_w", "trail_finish",
                                              "trail_update", "column_ss")]

    def reset(self):
        cl.enqueue_fill_buffer(self.queue, self.R, np.zeros(1), 0, 8 * self.n * self.ld)
        self.sserr = 0.0

    def block(self, x, y, w=None):
        """The rows as step 3 takes them: sqrt(w) * [x, y], float64, row-major."""
        x, y, w = checked_rows(x, y, w, self.n)
        return np.sqrt(w)[:, None] * np.column_stack([x, y])

    def upload(self, rows):
        """Copy a block (from `block`, at most block_rows rows) to the device."""
        rows = inputs.matrix("rows", rows, cols=self.ld)
        if len(rows) > self.block_rows:
            raise ValueError(f"rows: a block holds at most {self.block_rows:,} rows, got {len(rows):,}")
        return cl.enqueue_copy(self.queue, self.B, np.ascontiguousarray(rows))

    def enqueue(self, b, trace=None):
        """Fold the b rows in the device's block buffer into R; returns the
        events of the first and the last launch. With a list as `trace`, every
        launch's (kernel name, event) goes into it."""
        events = []
        note = self._recorder(events, self.checked_block(b, trace))
        self._start(b)
        for k0 in range(0, self.n, self.nb):
            pw = min(self.nb, self.n - k0)
            self._panel(b, k0, pw, note)
            self._trail(b, k0, pw, self.ld, note)
        self._residual(b, note)
        return [events[0], events[-1]]

    def checked_block(self, b, trace):
        """`trace`, once b is known to be 1 .. block_rows (the rows in the block buffer)."""
        inputs.count("b", b, 1)
        if b > self.block_rows:
            raise ValueError(f"b: a block holds at most {self.block_rows:,} rows, got {b:,}")
        return trace

    @staticmethod
    def _recorder(events, trace):
        def note(name, event):
            events.append(event)
            if trace is not None:
                trace.append((name, event))
        return note

    def _start(self, b):
        """house_step's arguments that stay the same for the whole block."""
        i32 = np.int32
        for parity, kern in enumerate(self.step):
            kern.set_args(self.B, self.R, i32(b), i32(self.ld), i32(0), i32(0), i32(0), i32(self._groups(b)),
                          self.part[parity], self.part[1 - parity], self.tau, self.T, self.rnew)

    def _panel(self, b, k0, pw, note):
        """The reflections of columns k0..k0+pw, one launch per column, applied
        to the panel's own columns; T and the panel's new rows of R from them."""
        q, i32, groups = self.queue, np.int32, self._groups(b)
        note("house_dots", self.k["house_dots"](q, (groups * self.WGS,), (self.WGS,), self.B, i32(b),
                                                i32(self.ld), i32(k0), i32(pw), self.part[0]))
        for kern in self.step:
            kern.set_arg(4, i32(k0))
            kern.set_arg(5, i32(pw))
        for jj in range(pw):
            kern = self.step[jj % 2]
            kern.set_arg(6, i32(jj))
            note("house_step", cl.enqueue_nd_range_kernel(q, kern, (groups * self.WGS,), (self.WGS,)))

    def _trail(self, b, k0, pw, cend, note):
        """The panel's reflections applied to columns k0+pw..cend of [R; B]
        (and the panel's rows of R put in place)."""
        q, i32, ld = self.queue, np.int32, self.ld
        trail = cend - (k0 + pw)
        tiles = -(-trail // self.TN)
        chunks = self._column_sums(b, k0, pw, cend, note) if tiles else 1
        note("trail_finish", self.k["trail_finish"](q, (max(1, -(-trail // self.FC)) * self.FC, self.nb),
                                                    (self.FC, self.nb), self.R, i32(ld), i32(k0), i32(pw),
                                                    i32(chunks), self.Zp, self.T, self.rnew, self.W, i32(cend)))
        if tiles:
            rows = -(-b // self.RT)
            note("trail_update", self.k["trail_update"](q, (tiles * self.TN, rows * self.RL), (self.TN, self.RL),
                                                        self.B, i32(b), i32(ld), i32(k0), i32(pw), self.W,
                                                        i32(cend)))

    def _column_sums(self, b, k0, pw, cend, note):
        """U'B for columns k0+pw..cend in chunks of rows (into Zp); returns the number of chunks."""
        i32, trail, chunks = np.int32, cend - (k0 + pw), -(-b // self.KC)
        note("trail_w", self.k["trail_w"](self.queue, (-(-trail // self.TN) * self.TN * self.QL, chunks),
                                          (self.TN * self.QL, 1), self.B, i32(b), i32(self.ld), i32(k0), i32(pw),
                                          self.Zp, i32(cend)))
        return chunks

    def _residual(self, b, note):
        groups = self._groups(b)
        note("column_ss", self.k["column_ss"](self.queue, (groups * self.WGS,), (self.WGS,), self.B, np.int32(b),
                                              np.int32(self.ld), np.int32(self.n), self.sspart))

    def add(self, x, y, w=None):
        """Fold rows into R, block by block."""
        rows = self.block(x, y, w)
        for start in range(0, len(rows), self.block_rows):
            part = rows[start:start + self.block_rows]
            self.upload(part)
            self.enqueue(len(part))
            self.collect(len(part))
        return self

    def collect(self, b):
        """Add the block's residual (what its reflections left of y) to sserr."""
        out = np.empty(self._groups(b))
        cl.enqueue_copy(self.queue, out, self.sspart)
        self.sserr += float(np.sum(out))

    def triangular(self):
        out = np.empty((self.n, self.ld))
        cl.enqueue_copy(self.queue, out, self.R)
        return np.triu(out[:, :self.n]), out[:, self.n].copy()

    def load_triangular(self, rt, z, sserr):
        """Start from an upper-triangular R (n x n), z = Q'y and a residual sum of squares."""
        rt, z = inputs.matrix("rt", rt, cols=self.n), inputs.vector("z", z, self.n)
        if len(rt) != self.n or np.any(np.tril(rt, -1)):
            raise ValueError(f"rt must be upper triangular, {self.n} x {self.n}, got shape {rt.shape}")
        sserr = inputs.scalar("sserr", sserr)
        if sserr < 0:
            raise ValueError(f"sserr (a residual sum of squares) must not be negative, got {sserr}")
        cl.enqueue_copy(self.queue, self.R, np.ascontiguousarray(np.column_stack([rt, z])))
        self.sserr = sserr
        return self
