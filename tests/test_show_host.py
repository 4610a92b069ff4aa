"""gb.show_code (the package's host code shown in the page) and gb.host_baseline
(the NumPy baseline's BLAS and threads in one line)."""
import inspect
import re
import textwrap

import pytest

import gpubook as gb
from gpubook import host, launch
from gpubook.chapters import scan


def test_show_code_names_where_it_lives_and_shows_the_source():
    md = gb.show_code(scan.DeviceScan.enqueue).data
    head, _, rest = md.partition("\n\n")
    assert head == "`gpubook/chapters/scan/steps.py`, `DeviceScan.enqueue`"
    assert rest.startswith("```python\ndef enqueue(self,") and rest.endswith("\n```")
    body = rest[len("```python\n"):-len("\n```")]
    assert body == textwrap.dedent(inspect.getsource(scan.DeviceScan.enqueue)).rstrip()


def test_show_code_picks_lines_like_show_kernel():
    md = gb.show_code(launch.enqueue, "def enqueue", "local_size(").data
    body = md.split("```python\n")[1].rsplit("\n```", 1)[0].split("\n")
    assert body[0].startswith("def enqueue(") and "local_size(" in body[-1]
    assert md.startswith("`gpubook/launch.py`, `enqueue`")
    rest = gb.show_code(launch.enqueue, "local = local_size(").data.split("```python\n")[1]
    assert rest.startswith("    local = local_size(")     # the function dedented as a whole, then cut
    assert rest.split("\n")[-2].lstrip().startswith("return kern(")  # from there to the function's end


@pytest.mark.parametrize("args, message", [(("no such line",), "no line of enqueue contains"),
                                           (("def enqueue", "no such end"), "contains 'no such end'"),
                                           ((None, "local"), "end needs a start")])
def test_show_code_bad_lines_say_so(args, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        gb.show_code(launch.enqueue, *args)


def test_show_code_refuses_what_has_no_source():
    with pytest.raises(TypeError, match="shows a function, method, class or module"):
        gb.show_code(42)
    with pytest.raises(ValueError, match="no Python source"):
        gb.show_code(len)


def test_host_baseline_names_numpy_blas_threads_and_cores():
    import numpy as np

    line = gb.host_baseline()
    assert line.startswith(f"NumPy {np.__version__} with ")
    info = host.blas_info()
    assert f"{info['threads']} thread" in line and f"on {info['cores']} cores" in line
    assert info["cores"] == host.host_cores() >= 1


def test_host_baseline_without_threadpoolctl(monkeypatch):
    monkeypatch.setattr(host, "_blas_pools", lambda: None)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    line = gb.host_baseline()
    assert "3 threads" in line and "(OPENBLAS_NUM_THREADS; numpy.show_config)" in line
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    for var in ("MKL_NUM_THREADS", "BLIS_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    cores = host.host_cores()
    assert f"{cores} thread" in gb.host_baseline() and "the BLAS's default" in gb.host_baseline()


def test_host_baseline_never_raises(monkeypatch):
    def broken():
        raise RuntimeError("no BLAS here")
    monkeypatch.setattr(host, "blas_info", broken)
    assert "BLAS not known (RuntimeError)" in gb.host_baseline()


def test_short_versions():
    assert host._short_version("0.3.31.188.0") == "0.3.31"
    assert host._short_version("2024.1") == "2024.1"


@pytest.mark.parametrize("n, noun, plural, text", [
    (1, "device", None, "1 device"),
    (2, "device", None, "2 devices"),
    (0, "task", None, "0 tasks"),
    (1_024, "block", None, "1,024 blocks"),
    (2, "worker process", "worker processes", "2 worker processes"),
    (1, "worker process", "worker processes", "1 worker process"),
])
def test_counted_says_one_or_many(n, noun, plural, text):
    assert gb.counted(n, noun, plural) == text


# Pages whose stored outputs come from a host not lent since: their cells keep "(s)"
# until that host runs them again (chapter 10's Going further, from a host of several
# GPUs; the change waits on the ch10-plurals branch).
WAITING = {"10_going_further.ipynb"}


def test_no_shown_count_hedges_its_plural():
    """A count in a code cell's text names its noun for that count, not "device(s)"."""
    import nbformat

    from gpubook.paths import ROOT

    hedged = re.compile(r"\{[^}]+\}[^\"'{]{0,20}?\w\((?:s|es)\)")
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        code = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        if path.name in WAITING:          # a page that no longer hedges leaves the list
            assert any(hedged.search(c) for c in code), f"{path.name}: take it out of WAITING"
            continue
        for source in code:
            assert not hedged.search(source), (path.name, hedged.search(source)[0])
