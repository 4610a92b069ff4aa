"""The machine chapter's microbenchmarks on the local device at tiny sizes: the
pointer chase's chain is one cycle and the walk ends where it says, the read and
local-memory kernels read exactly what NumPy says, and the arithmetic and figures
that read the measurements."""
import math

import matplotlib
import numpy as np
import pyopencl as cl
import pytest

import gpubook as gb
from gpubook import resources
from gpubook.chapters import machine
from gpubook.chapters.machine import figures

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def dev():
    device = gb.choose_device()
    ctx, queue = gb.make_queue(device)
    return device, ctx, queue


@pytest.mark.parametrize("nbytes", [256, 4096, 65536])
def test_chain_is_one_cycle_through_every_line(nbytes):
    chain = machine.make_chain(nbytes, seed=3)
    lines = nbytes // machine.LINE
    assert sorted(chain.order.tolist()) == [k * machine.LINE // 4 for k in range(lines)]
    assert machine.cycle_length(chain.next, int(chain.order[0])) == lines
    assert chain.after(lines) == chain.order[0] and chain.after(1) == chain.next[chain.order[0]]


def test_chain_rejects_bad_sizes():
    for bad in (100, 128, 4096 + 64):
        with pytest.raises(ValueError, match="multiple of 128 bytes"):
            machine.make_chain(bad)


def test_cycle_length_finds_a_chain_that_never_returns():
    nxt = np.array([1, 2, 1], np.uint32)   # 0 -> 1 -> 2 -> 1: 0 is not on the cycle
    with pytest.raises(ValueError, match="never returns"):
        machine.cycle_length(nxt, 0)


def test_a_device_that_stops_loops_early_walks_in_launches_of_its_cap(dev):
    """Mesa's llvmpipe stops loops after 65,535 iterations: the walk goes in launches of
    at most the cap, each going on where the last stopped, and ends where the chain says."""
    device, ctx, queue = dev
    walker = machine.ChainWalker(ctx, queue, machine.make_chain(32 * machine.LINE, seed=5))
    walker.cap = 1000
    events = walker.launch(2500)
    assert len(events) == 3
    assert walker.where() == walker.chain.after(2500)
    assert machine.probes.span_seconds(events) > 0
    walker.cap = None
    assert len(walker.launch(2500)) == 1 and walker.where() == walker.chain.after(5000)


def test_pointer_chase_ends_where_the_chain_says(dev):
    device, ctx, queue = dev
    walker = machine.ChainWalker(ctx, queue, machine.make_chain(32 * machine.LINE, seed=5))
    for steps in (1, 7, 32, 33, 100):
        walker.launch(steps)
        assert walker.where() == walker.chain.after(walker.walked)
    walker.check()
    walker.walked += 1            # a walk that does not stand where the chain says is caught
    with pytest.raises(RuntimeError, match="pointer chase"):
        walker.check()


@pytest.mark.parametrize("blocked", [0, 1])
def test_read_kernel_sums_what_numpy_says(dev, blocked):
    device, ctx, queue = dev
    reader = machine.Reader(ctx, queue, device, 2**14, "small", blocked=blocked)
    assert reader.bytes_per_launch() % 2**14 == 0
    for nbytes in (16, 2**10, 2**14):
        reader.launch(nbytes).wait()
        assert reader.read_sum() == reader.expected_sum(nbytes) > 0
        reader.check(nbytes)
    with pytest.raises(RuntimeError, match="read kernel"):
        reader.check(2**10)       # the last launch read 16 KiB, not 1 KiB


@pytest.mark.parametrize("rotate", [False, True])
def test_each_work_item_reads_the_elements_its_index_arithmetic_says(dev, rotate):
    """The GPU order, wrapped (each work-item meets its own few elements every pass) and
    rotated (ROTATE=1: each pass hands the indices one work-group on); per work-item
    sums against NumPy's sums over the same index arithmetic."""
    device, ctx, queue = dev
    reader = machine.Reader(ctx, queue, device, 2**18, "small", blocked=0, rotate=rotate)
    assert reader.rotate == int(rotate) and reader.reads > 1
    G, L, reads, nbytes = reader.total, reader.local, reader.reads, 2**16
    reader.launch(nbytes).wait()
    got = np.empty(G, np.float32)
    cl.enqueue_copy(queue, got, reader.partial)
    gid, k = np.arange(G)[:, None], np.arange(reads)[None, :]
    who = (gid + k * L) % G if rotate else gid
    want = reader.host.reshape(-1, 4).sum(axis=1)[(who + k * G) % (nbytes // 16)].sum(axis=1)
    assert np.array_equal(got, want.astype(np.float32))
    assert reader.read_sum() == reader.expected_sum(nbytes)  # the same elements in all
    if G > L:  # wrapped, work-item 0 meets only elements 0 + m G; rotated, others too
        own = {int(i) % G for i in ((who + k * G) % (nbytes // 16))[0]}
        assert (own == {0}) != rotate


def test_the_rotated_sweep_is_for_the_gpu_order_only(dev):
    device, ctx, queue = dev
    blocked = machine.Reader(ctx, queue, device, 2**14, "small", blocked=1, rotate=True)
    assert blocked.rotate == 0


def test_local_stride_kernel_reads_what_numpy_says(dev):
    device, ctx, queue = dev
    bench = machine.LocalStride(ctx, queue, device, "small")
    for stride in (1, 3, 32):
        bench.launch(stride).wait()
        bench.check(stride)
    assert not np.array_equal(bench.reference(1), bench.reference(32))


def test_bank_ways_is_gcd_with_32():
    assert [machine.bank_ways(s) for s in (1, 2, 3, 4, 8, 12, 16, 31, 32)] == [1, 2, 1, 4, 8, 4, 16, 1, 32]


def test_littles_law():
    got = machine.bytes_in_flight(500.0, 4000.0, 100, resident_items=2048)
    assert got["device_bytes"] == pytest.approx(2e6)
    assert got["per_cu_bytes"] == pytest.approx(2e4)
    assert got["per_item_bytes"] == pytest.approx(2e4 / 2048)
    assert "per_item_bytes" not in machine.bytes_in_flight(100.0, 10.0, 2)


def test_edge_finds_where_a_curve_crosses():
    sizes = [2**k for k in range(12, 24)]
    falling = [{"bytes": n, "rate": 100.0 if n <= 2**16 else 10.0} for n in sizes]
    rising = [{"bytes": n, "ns": 2.0 if n < 2**20 else 500.0} for n in sizes]
    assert machine.edge(falling, "rate") == 2**17
    assert machine.edge(rising, "ns") == 2**20


def test_working_sets_and_sizes(dev):
    device, _, _ = dev
    sizes = machine.working_sets(device, "small")
    assert sizes[0] == 4096 and sizes[-1] == machine.largest_working_set(device, "small")
    assert all(b > a and b & (b - 1) == 0 for a, b in zip(sizes, sizes[1:]))
    assert sizes[-1] >= 2**26 or sizes[-1] == machine.pow2_floor(device.max_mem_alloc_size // 4)
    assert machine.human_bytes(4096) == "4 KiB" and machine.human_bytes(3 * 2**29) == "1.5 GiB"


def test_facts_and_figures_draw(dev):
    device, _, _ = dev
    f = machine.facts(device)
    assert f["compute_units"] == device.max_compute_units and f["warp"] >= 1
    fig = figures.execution_model(f, group_size=64)
    lat = [{"bytes": 4096, "ns": 2.0}, {"bytes": 2**20, "ns": 300.0}]
    bw = [{"bytes": 4096, "rate": 50.0}, {"bytes": 2**20, "rate": 10.0}]
    levels = machine.hierarchy_levels(f, lat, bw, 80.0, 5.0, resources.ARCHS[(9, 0)])
    assert levels[0][1] == "256 KiB\nper compute unit" and "300 ns" in levels[3][3]
    rotated = [{"bytes": 2**k, "rate": 7.0 + k} for k in (20, 21, 22, 23, 24)]
    split = machine.hierarchy_levels(f, lat, bw, 80.0, 5.0, resources.ARCHS[(9, 0)], rotated)
    assert [row[0].split(":")[0] for row in split[2:4]] == ["L1s", "L2"] and len(split) == len(levels) + 1
    assert split[3][2].startswith("29 GB/s") and "300 ns" in split[4][3]  # 1-8 MiB: median of 27-30
    fig2 = figures.hierarchy(split, "levels", f["device"])
    fig3 = figures.occupancy_curves(resources.ARCHS[(9, 0)], resources.occupancy, group_size=256)
    stamps = {"queued": 0, "submit": 2000, "start": 9000, "end": 12000, "wall": 30e-6}
    fig4 = figures.event_timeline({"tiny copy": stamps}, "events", f["device"])
    bars = [p.get_width() for p in fig4.axes[0].patches]
    assert bars == pytest.approx([2.0, 7.0, 3.0, 30.0])
    for fg in (fig, fig2, fig3, fig4):
        assert fg.get_facecolor()[:3] == (1.0, 1.0, 1.0)
        matplotlib.pyplot.close(fg)


def test_recorded_reads_this_chapters_record(dev, tmp_path):
    device, _, _ = dev
    assert machine.recorded(device, root=tmp_path) is None
    gb.record("00_machine", device, "small", {"latency_ns": 123.0}, root=tmp_path, force=True)
    assert math.isclose(machine.recorded(device, root=tmp_path)["latency_ns"], 123.0)


def test_a_device_without_local_memory_is_refused_clearly():
    """A device that reports 0 bytes of local memory gets the sweep's reason, not a shift error."""
    from types import SimpleNamespace
    from gpubook.chapters import machine
    ctx, queue = gb.make_queue()
    stub = SimpleNamespace(name="stub", local_mem_size=0, max_compute_units=0)
    with pytest.raises(ValueError, match="stub reports 0 bytes of local memory; the stride sweep needs 4 KiB"):
        machine.LocalStride(ctx, queue, stub, "small")


@pytest.mark.parametrize("n, text", [
    (0, "0 B"), (999, "999 B"), (4096, "4 KiB"), (1.02e3 * 1024, "0.996 MiB"),
    (999 * 1024, "999 KiB"), (1.33 * 2**20, "1.33 MiB"), (4325376, "4.12 MiB"), (2**30, "1 GiB")])
def test_one_unit_formatter_never_writes_an_exponent(n, text):
    assert machine.human_bytes(n) == text


def test_the_plateau_claim_tells_l1_reuse_from_the_l2(monkeypatch):
    from gpubook import show
    from gpubook.chapters.machine import claims as mc
    monkeypatch.setattr(show, "glue", lambda **values: None)
    sizes = [2**k for k in range(12, 31)]
    wrapped = [{"bytes": n, "rate": 24000.0 if n <= 2**25 else 3000.0} for n in sizes]
    l1_reuse = [{"bytes": n, "rate": 23000.0 if n <= 2**17 else 9000.0 if n <= 2**25 else 3000.0}
                for n in sizes]
    facts = {"l2_bytes": 50 * 2**20, "cache_bytes": 132 * 2**15}
    c = mc.plateau_cause(wrapped, l1_reuse, facts)
    assert c.held and "1 MiB to 8 MiB" in c.sentence and "38%" in c.sentence
    c = mc.plateau_cause(wrapped, wrapped, facts)
    assert c.held is False and "the plateau is the L2's" in c.sentence
    c = mc.plateau_cause(wrapped, [], facts)  # a CPU: no rotated sweep
    assert c.held is None and "GPU order only" in c.sentence and "nan" not in c.sentence


def test_the_bank_line_reads_the_stride_curve(monkeypatch):
    from gpubook import show
    from gpubook.chapters.machine import claims as mc
    monkeypatch.setattr(show, "glue", lambda **values: None)
    line = {1: 1.0, **{w: 0.1 + 0.6 * w for w in (2, 4, 8, 16, 32)}}
    c = mc.banks_line(line)
    assert c.held and "0.60 of stride 1's" in c.sentence and "gives 0.70 of it" in c.sentence
    flat = {1: 1.0, **{w: 1.0 for w in (2, 4, 8, 16, 32)}}  # no banks (a CPU)
    assert mc.banks_line(flat).held is False
    assert mc.banks_line({1: 1.0, 2: 1.4}).held is None


@pytest.mark.parametrize("vec", [1, 2, 4, 8, 16])
def test_the_fma_chains_in_vectors_match_the_closed_form(dev, vec):
    """Chapter 0's FMA kernel with VEC lanes per chain (the width a CPU fills its SIMD
    lanes with) against gpubook.limits.fma_reference, in float and, where the device has
    it, in double; and the width probe picks one of the widths it may."""
    from gpubook import limits
    device, ctx, queue = dev
    iters, items = 64, 512
    types = [(np.float32, 1e-5)] + ([(np.float64, 1e-12)] if device.double_fp_config else [])
    for dtype, tol in types:
        out = np.empty(items * vec, dtype)
        buf = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, out.nbytes)
        limits.fma_kernel(ctx, iters, dtype, vec)(queue, (items,), (64,), buf, dtype(0.999), dtype(0.001))
        cl.enqueue_copy(queue, out, buf)
        ref = limits.fma_reference(items, iters, 0.999, 0.001, vec)
        assert np.max(np.abs(out - ref) / np.abs(ref)) < tol, dtype
    assert limits.fma_width(ctx, queue, device) in limits.FMA_WIDTHS


def test_a_device_that_prefers_scalars_is_never_probed():
    from types import SimpleNamespace
    from gpubook import limits
    gpu = SimpleNamespace(preferred_vector_width_float=1, preferred_vector_width_double=1)
    assert limits.fma_width(None, None, gpu) == 1 == limits.fma_width(None, None, gpu, np.float64)
