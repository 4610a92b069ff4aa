"""Claims: every sentence that judges a measurement is checked by the run that
measured it.

A claim is a name, the measured values it compares, the relation it asserts,
and two sentences, one for each outcome. The page shows the sentence that is
true for this run (glued by name, as a number is); the chapter's record stores
every claim with its values and whether it held, and a test fails when a
reference record holds a claim that did not hold. On a reader's device, a claim
that fails shows its other sentence, with the numbers: never a wrong one.

    gb.claim("tiles_cut_traffic", "t4 / t16 < traffic4 / traffic16",
             t4=..., t16=..., traffic4=4.0, traffic16=1.0,
             held="the time grows less than the traffic ({t4 / t16:.2f}× for 4×)",
             failed="the time grows as much as the traffic or more ({t4 / t16:.2f}× for 4×)")

A claim about why a step is faster, or what limits it, is of kind "cause"
(`kind="cause"`): its relation tests the mechanism (launch cost scaled out, bank
conflicts counted, a phase timed with the SM's clock), not only the speed-up,
so that it could fail if the cause were another. The record keeps the kind.

The relation is a Python expression over the values' names. A value that is
None (a step skipped on a small device, a library that is absent) leaves the
claim unsettled: its sentence says which inputs are missing, and it neither
raises nor shows NaN.
"""
import math
from dataclasses import dataclass, field

_made = {}  # name -> Claim, the claims this process has made (one notebook's run)


@dataclass
class Claim:
    name: str
    relation: str
    values: dict = field(default_factory=dict)
    held: object = None  # True, False, or None where an input is missing
    sentence: str = ""
    kind: str = None     # "cause" for a claim whose relation tests a mechanism

    def as_record(self):
        out = {"relation": self.relation, "values": self.values, "held": self.held}
        if self.kind:
            out["kind"] = self.kind
        return out


def _missing(values):
    return sorted(k for k, v in values.items()
                  if v is None or (isinstance(v, float) and not math.isfinite(v)))


def _number(v):
    try:
        return float(v) if not isinstance(v, bool) else v
    except (TypeError, ValueError):
        return v


KINDS = (None, "cause")
listeners = []   # called with (name, its record) for every claim made (gpubook.records adds one)


def evaluate(name, relation, held, failed, missing=None, kind=None, **values):
    """The Claim for these values: the relation evaluated over them (names only,
    no builtins beyond abs, min, max), and the sentence for its outcome."""
    if kind not in KINDS:
        raise ValueError(f"claim {name}: kind must be one of {KINDS}, not {kind!r}")
    values = {k: _number(v) for k, v in values.items()}
    gone = _missing(values)
    if gone:
        text = missing or "not measured on this device ({names} missing)"
        return Claim(name, relation, values, None, text.format(names=", ".join(gone)), kind)
    scope = {"abs": abs, "min": min, "max": max}
    ok = bool(eval(compile(relation, f"<claim {name}>", "eval"), {"__builtins__": scope}, dict(values)))
    return Claim(name, relation, values, ok, (held if ok else failed).format(**values), kind)


def claim(name, relation, held, failed, missing=None, glue=True, kind=None, **values):
    """Evaluate a claim, remember it for `recorded()`, glue its sentence under
    `name` (for {glue:text}`name` in the page's prose) and return the Claim.
    kind="cause": the relation tests why, not only how much (the module's note)."""
    c = evaluate(name, relation, held, failed, missing, kind, **values)
    _made[name] = c
    for tell in listeners:   # gpubook.records: made after the page recorded, into its record too
        tell(name, c.as_record())
    if glue:
        from .show import glue as _glue
        _glue(**{name: c.sentence})
    return c


def recorded():
    """{name: {relation, values, held}} of every claim made so far, for the chapter's record."""
    return {name: c.as_record() for name, c in _made.items()}


def forget():
    _made.clear()


def failed_in(entry):
    """The names of the claims in a record entry that did not hold (None: unsettled
    is not failed)."""
    return sorted(n for n, c in entry.get("data", {}).get("claims", {}).items() if c.get("held") is False)


def causes_in(entry):
    """{name: held} of the claims of kind "cause" in a record entry."""
    return {n: c.get("held") for n, c in entry.get("data", {}).get("claims", {}).items()
            if c.get("kind") == "cause"}


def shown(*names, sep="; ", end="."):
    """The sentences of claims made in this run, joined, as Markdown for the page:
    for a claim shown by a cell's output rather than glued into the prose."""
    from IPython.display import Markdown

    return Markdown(sep.join(_made[n].sentence for n in names) + end)
