"""gpubook.trace: a kernel built with -DTRACE=1 records, per access, the
work-item and work-group that made it; the size cap refuses large launches."""
import numpy as np
import pytest

import gpubook as gb
from gpubook import trace


@pytest.fixture(scope="module")
def ctx_queue():
    return gb.make_queue()


def test_records_ids_of_every_work_item(ctx_queue):
    # 2_sequential with WG = 8 over two work-groups: in round s, work-items
    # lid < s read words lid and lid + s.
    ctx, queue = ctx_queue
    t = trace.run(ctx, queue, "reduction/2_sequential.cl", "reduce", 16, 8,
                  [np.ones(16, np.float32), np.zeros(2, np.float32), np.uint32(16)], {"WG": 8}, events=6)
    assert not t.truncated
    assert np.array_equal(t.group, t.item // 8)
    assert np.array_equal(t.local, t.item % 8)
    # work-item 0 of each group works in all 3 rounds (2 reads each), 1 in two, 2-3 in one
    assert t.counts.tolist() == [6, 4, 2, 2, 0, 0, 0, 0] * 2
    first = t.select(item=0)
    assert first.step.tolist() == [4, 4, 2, 2, 1, 1] and first.index.tolist() == [0, 4, 0, 2, 0, 1]
    assert first.seq.tolist() == list(range(6))


def test_cut_trace_is_flagged(ctx_queue):
    ctx, queue = ctx_queue
    t = trace.run(ctx, queue, "reduction/1_interleaved.cl", "reduce", 8, 8,
                  [np.ones(8, np.float32), np.zeros(1, np.float32), np.uint32(8)], {"WG": 8}, events=2)
    assert t.truncated and t.counts[0] == 6 and len(t.select(item=0)) == 2


def test_size_cap_gives_a_clear_error(ctx_queue):
    ctx, queue = ctx_queue
    with pytest.raises(trace.TraceSizeError, match="tracing runs only at small sizes"):
        trace.run(ctx, queue, "reduction/1_interleaved.cl", "reduce", trace.MAX_ITEMS * 2, 64,
                  [np.ones(1, np.float32)], {"WG": 64})
    with pytest.raises(trace.TraceSizeError, match="accesses per work-item"):
        trace.check_size(64, 64, trace.MAX_EVENTS + 1)
    with pytest.raises(ValueError, match="divide"):
        trace.check_size(60, 64, 1)
    with pytest.raises(ValueError, match="no field"):
        trace.Trace(*(np.zeros(0, int),) * 7, (1,), (1,), 1).select(lane=0)


def test_untraced_build_is_unchanged(ctx_queue):
    # The default build has no trace argument: the chapter's sum still runs.
    from gpubook.chapters.reduction import DeviceSum
    import pyopencl as cl
    ctx, queue = ctx_queue
    x = np.arange(1000, dtype=np.float32)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=x)
    assert DeviceSum(ctx, queue, "1_interleaved", work_group=64).sum(buf, 1000, np.float32) == x.sum()
    assert DeviceSum(ctx, queue, "1_interleaved", work_group=64).kernel.num_args == 3
