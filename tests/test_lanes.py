"""tools/lanes.py: a reference pass split over the GPUs of one host."""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tools"))
import lanes  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
WEIGHTS = {"00_device": 15, "01_a": 140, "02_b": 110, "06_1_x": 70, "06_2_y": 35, "06_3_z": 45,
           "07_s": 120, "08_1_q": 70, "08_3_c": 130}


def weight(path):
    return WEIGHTS[pathlib.Path(path).stem]


def test_every_notebook_runs_once_in_its_order():
    """The pages of one chapter may share a lane or not (gpubook.records locks the
    record they share); each lane keeps the notebooks' order."""
    paths = [f"notebooks/{k}.ipynb" for k in WEIGHTS]
    for n in (1, 2, 3, 4):
        got = lanes.lanes(paths, n, weight)
        assert sorted(p for lane in got for p in lane) == sorted(paths)
        assert all(lane == sorted(lane) for lane in got)


def test_measured_seconds_outweigh_the_stamps(tmp_path):
    table = tmp_path / "seconds.csv"
    table.write_text("notebook,seconds,device,host,date\n08_3_c,224,H200,4 GPUs,2026-11-28\n")
    assert lanes.measured(table) == {"08_3_c": 224.0}
    assert lanes.weight_of("notebooks/08_3_c.ipynb", lanes.measured(table)) == 224.0
    assert lanes.measured(tmp_path / "none.csv") == {}


def test_two_lanes_balance_the_time():
    paths = [f"notebooks/{k}.ipynb" for k in WEIGHTS]
    totals = [sum(weight(p) for p in lane) for lane in lanes.lanes(paths, 2, weight)]
    assert max(totals) - min(totals) <= max(WEIGHTS.values())
    assert max(totals) < sum(WEIGHTS.values())


def test_no_gpu_is_an_error():
    with pytest.raises(ValueError, match="at least one GPU"):
        lanes.lanes(["notebooks/00_device.ipynb"], 0, weight)


def test_the_stored_notebooks_carry_their_run_time():
    took = lanes.seconds(ROOT / "notebooks" / "00_device.ipynb")
    assert 0 < took < 3600


def test_calls_put_chapter_0_first_and_chapter_10_last():
    weights = dict(WEIGHTS, **{"10_m": 160, "08_going_further": 130, "04_g": 230})
    paths = [f"notebooks/{k}.ipynb" for k in weights]
    got = lanes.calls(paths, 2, 4, lambda p: weights[pathlib.Path(p).stem])
    assert sorted(p for c in got for p in c) == sorted(paths)
    assert "notebooks/00_device.ipynb" in got[0] and "notebooks/10_m.ipynb" in got[1]
    walls = [sum(weights[pathlib.Path(p).stem] for p in c if pathlib.Path(p).name[:2] in ("00", "10"))
             + sum(weights[pathlib.Path(p).stem] for p in c if pathlib.Path(p).name[:2] not in ("00", "10")) / 4
             for c in got]
    assert max(walls) < 0.6 * sum(walls) + 1   # neither call holds nearly all of it
    with pytest.raises(ValueError, match="at least one call"):
        lanes.calls(paths, 0, 4)
