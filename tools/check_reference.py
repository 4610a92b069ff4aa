"""Name every notebook whose stored outputs no longer match its code or kernels."""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gpubook.reference import stale_reasons  # noqa: E402

notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
behind = {nb.name: stale_reasons(nb) for nb in notebooks}
behind = {k: v for k, v in behind.items() if v}
for name, reasons in behind.items():
    print(f"STALE {name}: {'; '.join(reasons)}")
if not behind:
    print(f"all {len(notebooks)} notebooks match their last reference run")
sys.exit(1 if behind and "--strict" in sys.argv else 0)
