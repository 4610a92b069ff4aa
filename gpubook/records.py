"""Recorded measurements: results/<device>/<chapter>.json."""
import contextlib
import datetime
import json
import os
import re

try:
    import fcntl
except ImportError:  # Windows: no other page records at the same time there
    fcntl = None

from . import claims as _claims
from .paths import RESULTS
from .resources import recorded_resources


def device_slug(device):
    """A file-name-safe name for a device, e.g. 'nvidia-h200'."""
    name = device if isinstance(device, str) else device.name
    return re.sub(r"[^a-z0-9]+", "-", name.strip().lower()).strip("-")


def _jsonable(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _merged(old, new):
    """`new` laid over `old`, dictionaries key by key (a part's keys replace its own)."""
    out = dict(old)
    for k, v in new.items():
        out[k] = _merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def record(chapter, device, scale, data, root=None, force=False, claims=True, part=None,
           resources=True):
    """Write results/<device>/<chapter>.json when GPUBOOK_RECORD=1 (or force);
    with `claims`, the claims this run made go into it (a chapter's page), and with
    `resources`, what each kernel the process built uses.
    With `part` (a chapter split over several pages, e.g. "6.2"), the page's keys
    go into the chapter's one record, laid over what the other parts recorded at
    the same scale (data["parts"] says which part wrote when).

    Returns the path written, or None when recording is off.
    """
    if not (force or os.environ.get("GPUBOOK_RECORD") == "1"):
        return None
    root = RESULTS if root is None else root
    path = root / device_slug(device) / f"{chapter}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {
        "device": device.name.strip(),
        "vendor": device.vendor.strip(),
        "driver": device.driver_version.strip(),
        "platform": device.platform.name.strip(),
        "date": datetime.date.today().isoformat(),
        "scale": scale,
        "data": _jsonable(data),
    }
    made = _claims.recorded()  # every claim the page made in this run, with whether it held
    if claims and made and "claims" not in entry["data"]:
        entry["data"]["claims"] = _jsonable(made)
        if part is not None:  # which part made them, so that its next run replaces them all
            for made_claim in entry["data"]["claims"].values():
                made_claim["part"] = str(part)
    used = recorded_resources(device) if resources else None  # where the driver says
    if used:
        entry["resources"] = _jsonable(used)
    with _locked(path):   # the pages of one chapter may run at once, on two GPUs of a host
        old = json.loads(path.read_text()) if path.exists() else {}
        _merge_into(entry, old, part)
        _write(path, entry)
    # a claim the page makes after this call goes into this record too (add_claim)
    _last.clear()
    if claims and os.environ.get("GPUBOOK_RECORD") == "1":
        _last.update(path=path, part=part)
    return path


_last = {}   # the record with claims this process wrote last, while recording: path, part


def add_claim(name, made):
    """Put a claim made after the page's last record() into that record (with the
    page's part), so that a cell after the record loses none; None when this process
    has recorded nothing (GPUBOOK_RECORD unset, or no record yet)."""
    path = _last.get("path")
    if path is None:
        return None
    made = _jsonable(dict(made))
    if _last["part"] is not None:
        made["part"] = str(_last["part"])
    with _locked(path):
        entry = json.loads(path.read_text())
        entry["data"].setdefault("claims", {})[name] = made
        _write(path, entry)
    return path


_claims.listeners.append(add_claim)


def _write(path, entry):
    """Write a record whole: a page reading it never sees it half written."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(entry, indent=1) + "\n")
    os.replace(tmp, path)


@contextlib.contextmanager
def _locked(path):
    """Hold an exclusive lock on `path`'s lock file (where the system has fcntl)."""
    if fcntl is None:
        yield
        return
    with open(path.with_name(f".{path.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _merge_into(entry, old, part):
    """What a new record keeps of the old one: a profiling run's counters, and with
    `part`, the other parts' keys and claims at the same scale."""
    if "counters" in old:  # a profiling run's rows (tools/counters.py), dated each: kept
        entry["counters"] = old["counters"]
    if part is not None:
        if old.get("scale") == entry["scale"]:  # another scale's parts are not this run's
            kept = dict(old.get("data", {}))
            if "claims" in kept:          # this part's earlier claims go: the code may no longer make them
                kept["claims"] = {k: c for k, c in kept["claims"].items() if c.get("part") != str(part)}
            entry["data"] = _merged(kept, entry["data"])
            entry["resources"] = _merged(old.get("resources", {}), entry.get("resources", {}))
        entry["data"].setdefault("parts", {})[str(part)] = entry["date"]


def display_name(name):
    """A device's name as the pages print it: PoCL's CPU names carry LLVM's target
    first ('cpu-skylake-avx512-Intel(R) Xeon(R) Processor' becomes 'Intel Xeon
    Processor (PoCL, skylake-avx512)'), and trademark marks are dropped."""
    name = re.sub(r"\((R|TM|r|tm)\)", "", name.strip())
    found = re.fullmatch(r"(?:cpu|pthread)-(?:([a-z0-9_.]+(?:-(?:avx512|avx2|v[234]))?)-)?([A-Z].+)", name)
    if found:
        target = f", {found.group(1)}" if found.group(1) else ""
        name = f"{found.group(2).strip()} (PoCL{target})"
    return re.sub(r"\s+", " ", name).strip()


def load_results(chapter, root=None):
    """Every recorded run of a chapter: {device slug: entry}, each entry's device
    named as the pages print it (display_name)."""
    root = RESULTS if root is None else root
    found = {}
    for path in sorted(root.glob(f"*/{chapter}.json")):
        if path.parent.name != "reference":  # the reference run's digests, not a device
            entry = found[path.parent.name] = json.loads(path.read_text())
            if "device" in entry:
                entry["device"] = display_name(entry["device"])
    return found


def other_devices(chapter, device, root=None):
    """Recorded runs of a chapter on devices other than this one."""
    mine = device_slug(device)
    return {k: v for k, v in load_results(chapter, root).items() if k != mine}


def recorded_limits(device, root=None):
    """Chapter 0's measured limits for this device, or None when not recorded; with
    `sm_clock_ghz`, the SM clock under load it recorded (None where it read none)."""
    entry = load_results("00_device", root).get(device_slug(device))
    if entry is None:
        return None
    # the SM clock under load (gpubook.clock), where chapter 0 read it; pages that
    # count cycles use it instead of the data sheet's maximum
    clock = entry["data"].get("sm_clock") or {}
    return {**entry["data"]["limits"], "sm_clock_ghz": clock.get("ghz")}
