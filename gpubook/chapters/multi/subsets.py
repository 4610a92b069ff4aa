"""Chapter 10's second job: chapter 8's best-subset search (gpubook.subsets) with
its subset ranks shared between devices; each device keeps the best of its ranks.
"""
import time
from math import comb

import numpy as np
import pyopencl as cl

from ... import launch
from ...device import require_fp64
from ...kernels import kernel
from ...subsets import unrank
from .lanes import Work, in_threads


def subset_problem(m, p, planted, noise=1.0, seed=10):
    """Observations of p candidate regressors and a response built from the
    `planted` candidates: (X'X, X'y, y'y) of [1 X] in float64, and X, y."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, p))
    x[:, 1::2] += 0.5 * x[:, 0::2][:, :p // 2]  # some correlation between neighbours
    y = 2.0 + x[:, list(planted)] @ (1.0 + np.arange(len(planted))) + noise * rng.standard_normal(m)
    xi = np.column_stack([np.ones(m), x])
    return xi.T @ xi, xi.T @ y, float(y @ y), x, y


def _subset_kernel(ctx, device, k, p):
    """subset_best for k of p with the largest work-group (256 down to 1, a power
    of two) that the built kernel can run on this device. Below 32 work-items a
    device returns more partial results, but the search still runs."""
    for wg in (256, 128, 64, 32, 16, 8, 4, 2, 1):
        if launch.why_not(device, wg, 16 * wg):
            continue
        knl = kernel(ctx, "lsq/4_subsets.cl", "subset_best", {"K": k, "P": p, "WG": wg})
        if launch.why_not(device, wg, kern=knl) is None:
            return knl, wg
    raise ValueError(f"{device.name.strip()} cannot run subset_best for k = {k} with any work-group")


class Subsets:
    """Chapter 8's subset search over several devices: every subset of 1 to
    k_max of p candidates, cut into chunks of ranks that the device threads
    take from a shared queue. Each work-group keeps its best subset, each
    thread the best of its chunks; the host keeps the best of the threads'
    (the smaller rank on a tie, so any split gives the same answer)."""

    def __init__(self, lanes, p, k_max, xtx, xty, yty, chunk=2**24):
        if not 1 <= k_max <= min(p, 8):
            raise ValueError(f"k_max = {k_max} must be 1 to min(p, 8) = {min(p, 8)}")
        if xtx.shape != (p + 1, p + 1) or xty.shape != (p + 1,):
            raise ValueError(f"expected X'X of {p + 1} x {p + 1} and X'y of {p + 1}")
        self.lanes, self.p, self.k_max, self.yty, self.chunk = lanes, p, k_max, float(yty), chunk
        self.count = sum(comb(p, k) for k in range(1, k_max + 1))
        mf = cl.mem_flags
        self.state = []
        for lane in lanes:
            require_fp64(lane.device)
            kernels = {k: _subset_kernel(lane.ctx, lane.device, k, p) for k in range(1, k_max + 1)}
            groups = -(-chunk // min(wg for _, wg in kernels.values()))
            bufs = [cl.Buffer(lane.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(v, np.float64))
                    for v in (xtx, xty)]
            bufs.append({k: cl.Buffer(lane.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.array(  # C(c, i)
                [[comb(c, i) for i in range(k + 1)] for c in range(p + 1)], np.uint64))
                for k in range(1, k_max + 1)})
            out = (cl.Buffer(lane.ctx, mf.READ_WRITE, 8 * groups), cl.Buffer(lane.ctx, mf.READ_WRITE, 8 * groups))
            self.state.append((kernels, bufs, out))

    def items(self):
        """(k, first rank, count) of every chunk."""
        return [(k, first, min(self.chunk, comb(self.p, k) - first))
                for k in range(1, self.k_max + 1) for first in range(0, comb(self.p, k), self.chunk)]

    def _chunk(self, lane, state, item):
        (kernels, (a, b, binom), (rss_buf, rank_buf)), (k, first, count) = state, item
        knl, wg = kernels[k]
        groups = -(-count // wg)
        knl(lane.queue, (groups * wg,), (wg,), a, b, np.float64(self.yty), np.uint64(first), np.uint64(count),
            binom[k], rss_buf, rank_buf)
        rss, rank = np.empty(groups), np.empty(groups, np.uint64)
        cl.enqueue_copy(lane.queue, rss, rss_buf)
        cl.enqueue_copy(lane.queue, rank, rank_buf)
        best = rss.min()
        return best, int(rank[rss == best].min())

    def run(self, count=None):
        """{k: (smallest RSS, its subset of candidate indices)} on the first
        `count` devices; `seconds` and `taken` (chunks per device) afterwards."""
        count = len(self.lanes) if count is None else count
        if not 1 <= count <= len(self.lanes):
            raise ValueError(f"count must be 1 to {len(self.lanes)}, not {count}")
        work = Work(self.items())

        def drive(d):
            best = {}
            while (item := work.take(d)) is not None:
                rss, rank = self._chunk(self.lanes[d], self.state[d], item)
                best[item[0]] = min(best.get(item[0], (np.inf, rank)), (rss, rank))
            return best

        t0 = time.perf_counter()
        found = in_threads(drive, count)
        self.seconds = time.perf_counter() - t0
        self.taken = work.by_worker(count)
        covered = [(k, first, n) for chunks in self.taken for k, first, n in chunks]
        if sorted(covered) != self.items():
            raise AssertionError("the chunks taken are not every chunk exactly once")
        best = {}
        for part in found:
            for k, pair in part.items():
                best[k] = min(best.get(k, pair), pair)
        return {k: (rss, unrank(rank, k, self.p)) for k, (rss, rank) in sorted(best.items())}
