"""What the claims tests read: a reference record's data, and what a notebook's
stored outputs glued and printed (its reference run)."""
import json

from gpubook.paths import RESULTS, ROOT


def record(slug, chapter):
    return json.loads((RESULTS / slug / f"{chapter}.json").read_text())["data"]


def outputs(notebook):
    nb = json.loads((ROOT / "notebooks" / f"{notebook}.ipynb").read_text())
    return [out for cell in nb["cells"] for out in cell.get("outputs", [])]


def stored(notebook):
    """(glued values, printed text) of a notebook's stored outputs."""
    glued, text = {}, []
    for out in outputs(notebook):
        name = out.get("metadata", {}).get("scrapbook", {}).get("name")
        if name:
            value = next(iter(out["data"].values()))
            try:
                glued[name] = float(value)
            except ValueError:
                glued[name] = value
        elif "text" in out:
            text.append("".join(out["text"]))
    return glued, "\n".join(text)


def printed(notebook):
    """Everything a notebook's stored outputs printed or displayed as text."""
    found = []
    for out in outputs(notebook):
        if "text" in out:
            found.append("".join(out["text"]))
        for kind in ("text/markdown", "text/plain"):
            if kind in out.get("data", {}) and "scrapbook" not in out.get("metadata", {}):
                found.append("".join(out["data"][kind]))
    return "\n".join(found)


def all_held(*made):
    """The claims among `made` (other values are skipped), each checked to hold."""
    flat = [c for c in made if hasattr(c, "held")]
    for c in flat:
        assert c.held is True, (c.name, c.values, c.sentence)
    return flat
