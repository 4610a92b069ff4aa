"""Where the book's files live, found from this package's own location."""
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
KERNELS = ROOT / "kernels"
RESULTS = ROOT / "results"
