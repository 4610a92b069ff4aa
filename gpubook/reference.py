"""Which stored notebook outputs still match the code that made them.

The reference run records, per notebook, a digest of its code cells and of
every kernel file it loaded. A notebook whose digest no longer matches has
stale outputs: the site would show numbers that the current code did not make.
"""
import hashlib
import json

import nbformat

from .paths import KERNELS, ROOT

DIGESTS = ROOT / "results" / "reference"


def _sha(text):
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def code_digest(notebook_path):
    nb = nbformat.read(str(notebook_path), as_version=4)
    code = "\n# ---\n".join(c.source for c in nb.cells if c.cell_type == "code")
    return _sha(code)


def kernel_digests(paths):
    return {p: _sha((KERNELS / p).read_text()) if (KERNELS / p).exists() else "missing"
            for p in sorted(set(paths))}


def _digest_file(notebook_path, folder):
    return folder / (notebook_path.stem + ".json")


def save_digest(notebook_path, kernels, device, folder=DIGESTS):
    """Record the digest of a notebook just executed by the reference run."""
    folder.mkdir(parents=True, exist_ok=True)
    import datetime

    entry = {"code": code_digest(notebook_path), "kernels": kernel_digests(kernels),
             "device": device, "date": datetime.date.today().isoformat()}
    _digest_file(notebook_path, folder).write_text(json.dumps(entry, indent=1, sort_keys=True) + "\n")


def stale_reasons(notebook_path, folder=DIGESTS):
    """Why a notebook's stored outputs no longer match its code ([] when they do)."""
    path = _digest_file(notebook_path, folder)
    entry = json.loads(path.read_text()) if path.exists() else None
    if entry is None:
        return ["never run by `make reference`"]
    reasons = []
    if entry["code"] != code_digest(notebook_path):
        reasons.append("code cells changed")
    now = kernel_digests(entry["kernels"])
    reasons += [f"kernels/{p} changed" for p, d in entry["kernels"].items() if now[p] != d]
    return reasons
