"""Chapter 0's kernels (kernels/device/) at tiny sizes: they compute what they say,
and tools/check_kernels.py runs this test under Oclgrind."""
import numpy as np
import pyopencl as cl

import gpubook as gb


def test_copy_touch_and_fma_chains_at_tiny_sizes():
    device, ctx, queue, _, _ = gb.open_device()
    mf = cl.mem_flags
    x = np.arange(64, dtype=np.float32)
    src = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    for typ, width in (("float", 1), ("float4", 4)):
        dst = cl.Buffer(ctx, mf.READ_WRITE, x.nbytes)
        gb.kernel(ctx, "device/copy.cl", "copy", {"TYPE": typ})(queue, (x.size // width,), None, src, dst)
        out = np.empty_like(x)
        cl.enqueue_copy(queue, out, dst)
        assert np.array_equal(out, x), typ
    one = cl.Buffer(ctx, mf.READ_WRITE, 4)
    gb.kernel(ctx, "device/empty.cl", "touch")(queue, (8,), None, one)
    got = np.zeros(1, np.float32)
    cl.enqueue_copy(queue, got, one)
    assert got[0] == 1.0
    iters, items, a, b = 4, 64, 0.999, 0.001
    x0 = (np.arange(items) & 1023) * float(np.float32(1e-3))   # the kernel's 1e-3f
    chains = x0[:, None] + 0.125 * np.arange(8)
    for _ in range(iters):
        chains = chains * a + b
    ref = chains.sum(axis=1)
    types = [(np.float32, {"ITERS": iters})]
    if device.double_fp_config:
        types.append((np.float64, {"ITERS": iters, "TYPE": "double", "FP64": 1}))
    for dtype, defines in types:
        out = np.empty(items, dtype)
        buf = cl.Buffer(ctx, mf.WRITE_ONLY, out.nbytes)
        gb.kernel(ctx, "device/fma.cl", "fma_chains", defines)(queue, (items,), None, buf, dtype(a), dtype(b))
        cl.enqueue_copy(queue, out, buf)
        assert np.allclose(out, ref, rtol=1e-5 if dtype == np.float32 else 1e-12), dtype
