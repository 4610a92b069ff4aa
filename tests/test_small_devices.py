"""Devices of few work-items per work-group (PoCL's POCL_MAX_WORK_GROUP_SIZE=32
or 16): each step either runs with what fits or says in one line why not.
Stub devices for the choices; PoCL with the variable set, in a subprocess,
for the runs."""
import os
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest

import gpubook as gb
from gpubook.chapters.lsq import measure as lm


def run_small(most, code):
    """Run `code` in a fresh interpreter whose PoCL allows `most` work-items per work-group."""
    env = {**os.environ, "POCL_MAX_WORK_GROUP_SIZE": str(most), "GPUBOOK_SCALE": "small"}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def pocl():
    try:
        device = gb.choose_device()
    except Exception:
        return False
    return "portable computing language" in str(device.platform.name).lower()


needs_pocl = pytest.mark.skipif(not pocl(), reason="runs PoCL with POCL_MAX_WORK_GROUP_SIZE")


@pytest.mark.parametrize("most", [32, 16])
def test_cholqr2_has_register_tiles_for_32_and_16_work_items(most):
    chosen = lm.portable_shapes(SimpleNamespace(max_work_group_size=most, local_mem_size=64 * 1024))
    assert set(chosen) == {"gram_shape", "update_shape", "product_shape", "inverse_shape"}
    for key, shape in chosen.items():
        assert gb.tiles.work_items(shape) <= most
        if key in ("gram_shape", "update_shape"):
            assert shape["TM"] == shape["TN"]


@needs_pocl
@pytest.mark.parametrize("most", [32, 16])
def test_cholqr2_runs_where_the_device_allows_few_work_items(most):
    out = run_small(most, """
        import numpy as np, gpubook as gb
        from gpubook.chapters.lsq import measure, tsqr
        device, ctx, queue, _, _ = gb.open_device()
        if not gb.has_fp64(device):
            print("no fp64"); raise SystemExit
        cq, note = measure.portable(ctx, queue, 21)
        a = np.random.default_rng(0).standard_normal((500, 21))
        r = cq.r_factor(a)
        print(cq.method, tsqr.gram_error(r, a) < 1e-12)
    """)
    assert out.split()[-2:] == ["CholeskyQR2", "True"] or out.strip() == "no fp64"
