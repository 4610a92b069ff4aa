"""The runs that chapter 10's main line and its Going-further page both make: the
data and the several-device covariance, the choice of how to sum the partials, the
timed runs against the float64 reference, and the subset search. Each page calls
them, so neither copies the other's cells."""
from types import SimpleNamespace

import numpy as np

from ... import stream as oc, xtx as cv
from ...device import pinned_empty
from ...show import counted
from ...tiles import label as tile_label
from ...timing import stats
from . import sums
from .covariance import Covariance, best_tile, fill_repeated
from .subsets import Subsets, subset_problem

TOL = 1e-4      # the covariance against its float64 reference
WAY = {False: "one pass after the last device", True: "each partial as its device finishes"}


def covariance_setup(ctx, queue, device, lanes, scale):
    """The chapter's data (chapter 6's rows, repeated) in pinned host memory, its float64
    reference and the several-device covariance at chapter 6's fastest tile; `line` says
    what was set up."""
    m0, n = cv.sizes(scale)
    repeat = 8 if scale == "full" else 4
    M = repeat * m0
    base = cv.make_data(m0, n)
    x = pinned_empty(ctx, queue, (M, n))
    fill_repeated(x, base.x)
    tile = best_tile(ctx, device)
    block = 16_384 if scale == "full" else 512
    budget = oc.stream_bytes(n, block)
    mcov = Covariance(lanes, n, budget, tile, m=M)
    size = f"{x.nbytes / 1e9:.1f} GB" if x.nbytes >= 1e9 else f"{x.nbytes / 1e6:.0f} MB"
    line = (f"m = {M:,} rows x n = {n:,} float32 = {size} in pinned host memory; "
            f"blocks of {mcov.rows:,} rows ({len(oc.blocks(M, mcov.rows))} blocks), "
            f"{budget / 1e9:.2f} GB of device memory per device; tile {tile_label(tile)}")
    return SimpleNamespace(m0=m0, n=n, REPEAT=repeat, M=M, base=base, ref=cv.reference(base.x),
                           x=x, tile=tile, BLOCK=block, budget=budget, mcov=mcov, SIZE=size,
                           line=line)


def choose_sum(mcov, lanes, n, M, G):
    """Time each way of summing G partials of n x n (gpubook.chapters.multi.sums), give
    `mcov` the fastest, and return {(threads, triangle): seconds} and the table's rows."""
    rng = np.random.default_rng(10)
    trial = [(rng.standard_normal((n, n), dtype=np.float32), np.zeros(n)) for _ in range(G)]
    sum_s = sums.time_options(trial, M, lanes=lanes)
    mcov.threads, mcov.triangle = min(sum_s, key=sum_s.get)
    what = f"the float64 sum of {counted(G, 'partial')} of {n:,} × {n:,}, one pass"
    rows = [[what, "time (ms)"]] + [
        ["on the first device, in double precision" if t == "device"
         else counted(t, 'thread') + ", lower triangle" * tri, f"{s * 1e3:,.1f}"]
        for (t, tri), s in sum_s.items()]
    return sum_s, rows


def covariance_runs(mcov, x, ref, G, repeats=3):
    """The covariance on 1..G devices, both ways of summing, each checked against
    `ref` within TOL; `mcov` keeps the faster way. Returns (ways, lines, runs, other):
    {overlap: {g: seconds, error, blocks, host_s}}, each way's last timeline, and the
    chosen and the other way's runs."""
    ways, lines = {False: {}, True: {}}, {}
    for g in range(1, G + 1):
        for overlap in WAY:
            times, host = [], []
            for _ in range(repeats):
                c = mcov.run(x, g, overlap=overlap)
                times.append(mcov.seconds)
                host.append(mcov.host_seconds)
            assert not mcov.failed, mcov.failed
            ways[overlap][g] = {"seconds": stats(times).median, "error": cv.check(c, ref, TOL),
                                "blocks": mcov.shares(), "host_s": stats(host).median}
            lines[overlap] = mcov.timeline()
    mcov.overlap = ways[True][G]["seconds"] < ways[False][G]["seconds"]
    return ways, lines, ways[mcov.overlap], ways[not mcov.overlap]


def subset_runs(lanes, scale, G, repeats=3):
    """Chapter 8's subset search over 1..G devices, on a problem with planted
    regressors; the problem, the search, each g's best subsets and its median seconds."""
    P, k_max, planted = ((80, 7, (3, 11, 20, 31, 42, 50, 71)) if scale == "full"
                         else (16, 4, (1, 5, 9, 12)))
    xtx, xty, yty, xs, ys = subset_problem(20_000 if scale == "full" else 2_000, P, planted)
    search = Subsets(lanes, P, k_max, xtx, xty, yty, chunk=2**24 if scale == "full" else 2**10)
    found, sub_s = {}, {}
    for g in range(1, G + 1):
        times = []
        for _ in range(repeats):
            found[g] = search.run(g)
            times.append(search.seconds)
        sub_s[g] = stats(times).median
    line = (f"{search.count:,} subsets of 1 to {k_max} of {P} candidates in"
            f" {len(search.items())} chunks; one device: {sub_s[1]:.3f} s"
            f" ({search.count / sub_s[1] / 1e9:.2f} billion subsets/s)")
    return SimpleNamespace(P=P, K_MAX=k_max, PLANTED=planted, xtx=xtx, xty=xty, yty=yty,
                           xs=xs, ys=ys, search=search, found=found, sub_s=sub_s, line=line)
