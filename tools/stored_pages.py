"""Write book/data/stored_pages.csv: for every chapter, the device and the date of
the run whose outputs the site shows, read from the reference run's digests
(results/reference/<notebook>.json, written by `make reference`). Where a digest is
older than its date field, the date is that of the device's record of the chapter.

    python tools/stored_pages.py          (make reference runs it; the intro shows the table)
    python tools/stored_pages.py --check  exit 1 when the file is not what the digests say
"""
import csv
import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpubook.records import device_slug, display_name  # noqa: E402

OUT = ROOT / "book" / "data" / "stored_pages.csv"


def rows():
    found = []
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        digest = ROOT / "results" / "reference" / f"{nb.stem}.json"
        if not digest.exists():
            found.append([nb.stem, "not yet run", ""])
            continue
        entry = json.loads(digest.read_text())
        device, date = entry.get("device", ""), entry.get("date", "")
        # the record of the run: its device group (several devices as one) or the device's own
        record = ROOT / "results" / (entry.get("group") or device_slug(device)) / f"{nb.stem}.json"
        if record.exists():
            recorded = json.loads(record.read_text())
            device, date = recorded["device"], date or recorded.get("date", "")
        found.append([nb.stem, display_name(device), date or "not recorded"])
    return found


def text():
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["page", "outputs stored from", "on"])
    writer.writerows(rows())
    return out.getvalue()


if __name__ == "__main__":
    if "--check" in sys.argv[1:]:
        sys.exit(0 if OUT.exists() and OUT.read_text() == text() else 1)
    written = text()
    OUT.write_text(written)
    print(f"{OUT.relative_to(ROOT)}: {len(written.splitlines()) - 1} pages")
