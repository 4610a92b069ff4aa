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


SLOW_NOTE_S = 15.0  # after this long, a test says what it is doing


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """A test or notebook cell still running after SLOW_NOTE_S says so on the
    terminal (stderr, which pytest-xdist's workers share): on a first run most of
    that time is PoCL compiling the kernels, which it caches for later runs."""
    import threading

    done = threading.Event()

    def note():
        if not done.wait(SLOW_NOTE_S):
            capture = item.config.pluginmanager.getplugin("capturemanager")
            with capture.global_and_fixture_disabled():
                os.write(2, (f"\n  ... {item.nodeid}: still running after {SLOW_NOTE_S:.0f} s "
                             "(a first run compiles its kernels; PoCL caches them)\n").encode())

    threading.Thread(target=note, daemon=True).start()
    try:
        yield
    finally:
        done.set()


@pytest.fixture(autouse=True)
def _claims_stay_with_their_test():
    """Claims made in one test do not reach another test's records (gpubook.claims
    keeps the claims of a run for its chapter's record)."""
    yield
    from gpubook import claims

    claims.forget()
