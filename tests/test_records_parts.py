"""A chapter split over several pages keeps one record: each part lays its keys over
what the other parts recorded at the same scale (gpubook.records.record, part=)."""
import json
from types import SimpleNamespace

from gpubook import claims, records

DEVICE = SimpleNamespace(name="Test GPU", vendor="V", driver_version="1", platform=SimpleNamespace(name="P"))


def read(tmp_path):
    return json.loads((tmp_path / "test-gpu" / "06_covariance.json").read_text())


def test_parts_share_one_record_and_replace_only_their_keys(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "recorded_resources", lambda device: {})
    claims.forget()
    records.record("06_covariance", DEVICE, "full", {"m": 1, "steps": {"naive": 2.0}},
                   root=tmp_path, force=True, part="6.1")
    claims.claim("part2_claim", "a > b", "held", "failed", glue=False, a=2, b=1)
    records.record("06_covariance", DEVICE, "full", {"stream": {"seconds": 3.0}, "steps": {"tc": 1.0}},
                   root=tmp_path, force=True, part="6.2")
    claims.forget()
    data = read(tmp_path)["data"]
    assert data["m"] == 1 and data["stream"] == {"seconds": 3.0}
    assert data["steps"] == {"naive": 2.0, "tc": 1.0}
    assert data["claims"]["part2_claim"]["held"] is True
    assert set(data["parts"]) == {"6.1", "6.2"}
    records.record("06_covariance", DEVICE, "full", {"m": 5}, root=tmp_path, force=True, part="6.1")
    assert read(tmp_path)["data"]["m"] == 5 and read(tmp_path)["data"]["stream"] == {"seconds": 3.0}


def test_a_part_at_another_scale_starts_the_record_afresh(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "recorded_resources", lambda device: {})
    claims.forget()
    records.record("06_covariance", DEVICE, "full", {"m": 1}, root=tmp_path, force=True, part="6.1")
    records.record("06_covariance", DEVICE, "small", {"stream": 1}, root=tmp_path, force=True, part="6.2")
    data = read(tmp_path)["data"]
    assert "m" not in data and data["stream"] == 1 and set(data["parts"]) == {"6.2"}


def test_without_a_part_the_record_is_written_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "recorded_resources", lambda device: {})
    claims.forget()
    records.record("06_covariance", DEVICE, "full", {"m": 1}, root=tmp_path, force=True)
    records.record("06_covariance", DEVICE, "full", {"n": 2}, root=tmp_path, force=True)
    assert read(tmp_path)["data"] == {"n": 2}


def test_a_part_run_again_replaces_all_of_its_claims(tmp_path, monkeypatch):
    """A claim that a part's code no longer makes must not outlive the part's next run;
    the other parts' claims stay."""
    monkeypatch.setattr(records, "recorded_resources", lambda device: {})
    claims.forget()
    claims.claim("from_8_1", "a > b", "held", "failed", glue=False, a=2, b=1)
    records.record("08_lsq", DEVICE, "full", {"m": 1}, root=tmp_path, force=True, part="8.1")
    claims.forget()
    claims.claim("kept", "a > b", "held", "failed", glue=False, a=2, b=1)
    claims.claim("dropped", "a > b", "held", "failed", glue=False, a=1, b=2)
    records.record("08_lsq", DEVICE, "full", {"n": 1}, root=tmp_path, force=True, part="8.3")
    claims.forget()
    claims.claim("kept", "a > b", "held", "failed", glue=False, a=3, b=1)
    records.record("08_lsq", DEVICE, "full", {"n": 2}, root=tmp_path, force=True, part="8.3")
    claims.forget()
    made = json.loads((tmp_path / "test-gpu" / "08_lsq.json").read_text())["data"]["claims"]
    assert set(made) == {"from_8_1", "kept"} and made["kept"]["values"]["a"] == 3
    assert made["kept"]["part"] == "8.3" and made["from_8_1"]["part"] == "8.1"


def test_a_new_run_keeps_the_counters_a_profiling_run_wrote(tmp_path, monkeypatch):
    """tools/counters.py writes a top-level `counters` section; the chapter's next
    reference run rewrites the record and must not drop it."""
    monkeypatch.setattr(records, "recorded_resources", lambda device: {})
    claims.forget()
    records.record("06_covariance", DEVICE, "full", {"m": 1}, root=tmp_path, force=True)
    path = tmp_path / "test-gpu" / "06_covariance.json"
    entry = json.loads(path.read_text())
    entry["counters"] = {"k.cl:k": {"opencl_s": 1.0, "date": "2026-11-27"}}
    path.write_text(json.dumps(entry))
    records.record("06_covariance", DEVICE, "full", {"n": 2}, root=tmp_path, force=True)
    assert read(tmp_path)["data"] == {"n": 2}
    assert read(tmp_path)["counters"] == entry["counters"]


def test_importing_the_book_silences_pyopencls_empty_build_log_warning():
    """PyOpenCL's 'Non-empty compiler output encountered' carries no detail; it stood in
    two stored pages (NVIDIA's compiler logs on success). Other compiler warnings pass."""
    import warnings

    import pyopencl as cl

    import gpubook  # noqa: F401

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        import importlib
        importlib.reload(gpubook)   # its filter goes in front of "always"
        warnings.warn("Non-empty compiler output encountered. Set the environment variable "
                      "PYOPENCL_COMPILER_OUTPUT=1 to see more.", cl.CompilerWarning)
        warnings.warn("From-source build succeeded, but resulted in non-empty logs", cl.CompilerWarning)
    assert [str(w.message)[:11] for w in seen if w.category is cl.CompilerWarning] == ["From-source"]


def _write_part(args):
    root, part, times = args
    from gpubook import records as r
    r.recorded_resources = lambda device: {}
    for i in range(times):
        r.record("06_covariance", DEVICE, "full", {f"key_{part}": i, "steps": {part: i}},
                 root=root, force=True, part=part)
    return part


def test_parts_running_at_once_on_two_gpus_lose_nothing(tmp_path):
    """Two pages of one chapter in two lanes of a reference pass (tools/lanes.py) write
    the record at once: under the lock each read-modify-write sees the other's last."""
    import multiprocessing

    import pytest

    if records.fcntl is None:
        pytest.skip("no fcntl on this system: pages there record one after another")
    with multiprocessing.get_context("fork").Pool(2) as pool:
        assert sorted(pool.map(_write_part, [(tmp_path, "6.1", 60), (tmp_path, "6.2", 60)])) == ["6.1", "6.2"]
    data = read(tmp_path)["data"]
    assert data["key_6.1"] == 59 and data["key_6.2"] == 59
    assert data["steps"] == {"6.1": 59, "6.2": 59} and set(data["parts"]) == {"6.1", "6.2"}
    left = {p.name for p in (tmp_path / "test-gpu").iterdir()}   # no half-written copy stays
    assert left == {".06_covariance.json.lock", "06_covariance.json"}


def test_a_claim_made_after_the_record_goes_into_it(tmp_path, monkeypatch):
    """Chapters 1, 2, 3, 6.1, 7 and 8.1 make their counters' claims in cells after
    their record() call: on the H200 (2026-11-28) 21 cause claims were lost that way."""
    monkeypatch.setattr(records, "recorded_resources", lambda device: {})
    monkeypatch.setenv("GPUBOOK_RECORD", "1")
    claims.forget()
    records._last.clear()
    claims.claim("before", "a > b", "held", "failed", glue=False, a=2, b=1)
    records.record("06_covariance", DEVICE, "full", {"m": 1}, root=tmp_path, part="6.1")
    claims.claim("after", "a > b", "held", "failed", glue=False, kind="cause", a=1, b=2)
    made = read(tmp_path)["data"]["claims"]
    assert made["before"]["held"] is True and made["after"]["held"] is False
    assert made["after"]["kind"] == "cause" and made["after"]["part"] == "6.1"
    monkeypatch.delenv("GPUBOOK_RECORD")
    records.record("06_covariance", DEVICE, "full", {"m": 2}, root=tmp_path, force=True, part="6.1")
    claims.claim("not_recording", "a > b", "held", "failed", glue=False, a=2, b=1)
    assert "not_recording" not in read(tmp_path)["data"]["claims"]
    claims.forget()


def test_the_vendor_record_holds_no_kernel_resources(tmp_path, monkeypatch):
    """The vendor libraries' record is not a page's: the OpenCL kernels its process
    happened to build (a chapter's, when a page measures the libraries) stay out."""
    from gpubook import vendor
    built = {"scan/4_single_pass.cl:scan_single_pass[WG=512]": {"registers": 40}}
    monkeypatch.setattr(records, "recorded_resources", lambda device: built)
    records.record("07_scan", DEVICE, "full", {"m": 1}, root=tmp_path, force=True)
    assert json.loads((tmp_path / "test-gpu" / "07_scan.json").read_text())["resources"] == built
    monkeypatch.setenv("GPUBOOK_RECORD", "1")
    vendor.save(DEVICE, "full", {"cub_scan": {"median_s": 1e-3}}, root=tmp_path)
    entry = json.loads((tmp_path / "test-gpu" / "vendor.json").read_text())
    assert entry["data"]["cub_scan"] == {"median_s": 1e-3} and "resources" not in entry
