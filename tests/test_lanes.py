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


def test_parts_of_a_chapter_share_a_lane_in_order():
    paths = [f"notebooks/{k}.ipynb" for k in WEIGHTS]
    for n in (1, 2, 3, 4):
        got = lanes.lanes(paths, n, weight)
        assert sorted(p for lane in got for p in lane) == sorted(paths)
        for lane in got:
            parts = [p for p in lane if "/06_" in p]
            assert parts in ([], sorted(parts)) and len(parts) in (0, 3)


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
