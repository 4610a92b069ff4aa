"""The property tests' Hypothesis profiles (selected by HYPOTHESIS_PROFILE: "ci"
by default, "fuzz" for `make fuzz`) and the count of inputs they tried, appended
to the file GPUBOOK_FUZZ_COUNT names (one line per test process: the total, then each
entry point's inputs/those compared with NumPy). The
repository's conftest.py (one folder up) still applies to every test."""
import contextlib
import os

import pyopencl as cl
import pytest

import property_inputs
from gpubook import show


@pytest.fixture
def no_glue(monkeypatch):
    """Claims evaluated on stored records, outside a notebook, glue nothing."""
    monkeypatch.setattr(show, "glue", lambda **values: None)


@pytest.fixture
def plain_calls(monkeypatch):
    """A context manager: inside it, the names of the kernels launched by a plain
    call (arguments set at the launch, not kept by a launch.Bound) go to its list."""
    @contextlib.contextmanager
    def watch():
        names, call = [], cl.Kernel.__call__

        def spy(kern, *args, **kw):
            names.append(kern.function_name)
            return call(kern, *args, **kw)
        with monkeypatch.context() as patch:
            patch.setattr(cl.Kernel, "__call__", spy)
            yield names
    return watch


def pytest_sessionfinish(session):
    path, total = os.environ.get("GPUBOOK_FUZZ_COUNT"), sum(property_inputs.TRIED.values())
    if path and total:
        with open(path, "a") as f:
            f.write(f"{total} " + " ".join(f"{k}={v}/{property_inputs.COMPARED[k]}"
                                           for k, v in sorted(property_inputs.TRIED.items())) + "\n")
