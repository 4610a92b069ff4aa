import os
import pathlib

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")


def pytest_collection_modifyitems(config, items):
    """A chapter that computes in double precision ends after one message on a
    device without fp64 (gb.chapter_needs_fp64); nbval then skips its cells, with
    that reason, instead of comparing outputs the chapter never made."""
    paths = {pathlib.Path(str(item.fspath)) for item in items if str(item.fspath).endswith(".ipynb")}
    needing = {p for p in paths if "chapter_needs_fp64(" in p.read_text(encoding="utf-8")}
    if not needing:
        return
    from gpubook.device import choose_device, fp64_missing, has_fp64

    try:
        device = choose_device()
    except Exception:    # no device at all: the notebooks' first cells say so themselves
        return
    if has_fp64(device):
        return
    skip = pytest.mark.skip(reason=fp64_missing(device))
    for item in items:
        if pathlib.Path(str(item.fspath)) in needing:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def fp64_env():
    """(device, context, queue) of the chosen OpenCL device; the module's tests
    are skipped where it has no double precision."""
    import gpubook as gb

    device, ctx, queue, _, _ = gb.open_device()
    if not gb.has_fp64(device):
        pytest.skip("this OpenCL device has no fp64")
    return device, ctx, queue
