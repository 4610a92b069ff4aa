"""A notebook downloaded alone from the site says, in its first cell, how to get the helper package."""
import pathlib

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_first_cell_says_how_to_install_the_helper_package(path):
    first = nbformat.read(str(path), as_version=4).cells[0]
    assert first.cell_type == "markdown"
    for needed in ("Running this page yourself", "gpubook", "pip install -e .", "make lab", f"notebooks/{path.name}"):
        assert needed in first.source, f"{path.name}'s first cell does not say {needed!r}"
