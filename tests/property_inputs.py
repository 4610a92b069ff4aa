"""What the property tests (tests/test_properties*.py) share: the Hypothesis
profiles, the count of inputs tried, and the strategies that make awkward data.

Profiles (HYPOTHESIS_PROFILE, registered by tests/conftest.py): "ci", the default,
a fixed seed and each test's own bounded number of examples (`make test`);
"fuzz", GPUBOOK_FUZZ_FACTOR (default 25) times as many, random seeds, no deadline
(`make fuzz`). Each example calls `tried(name)`; with GPUBOOK_FUZZ_COUNT naming a
file, every test process appends its count there at the end of the session.
"""
import os
from collections import Counter

import numpy as np
from hypothesis import HealthCheck, settings, strategies as st

FACTOR = int(os.environ.get("GPUBOOK_FUZZ_FACTOR", "25"))
_health = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
           HealthCheck.function_scoped_fixture]
settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True,
                          suppress_health_check=_health)
settings.register_profile("fuzz", derandomize=False, database=None, deadline=None, print_blob=True,
                          suppress_health_check=_health)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
settings.load_profile(PROFILE)

TRIED = Counter()
COMPARED = Counter()    # of those, the inputs whose answer was compared with NumPy's (the rest: refused)


def examples(n):
    """Examples of one test: n in the ci profile, FACTOR * n when fuzzing."""
    return n * FACTOR if PROFILE == "fuzz" else n


def bounded(n):
    return settings(max_examples=examples(n))


def tried(name):
    TRIED[name] += 1


def compared(name):
    COMPARED[name] += 1


# Sizes: 0, 1, primes, the tiles' multiples and one either side, and anything small.
AWKWARD = [0, 1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 31, 32, 33, 37, 61, 63, 64, 65, 127, 128, 129]


def sizes(low=0, high=150):
    return st.one_of(st.sampled_from([s for s in AWKWARD if low <= s <= high]), st.integers(low, high))


DTYPES = ["float32"] * 5 + ["float64", "int32", "int64", "bool", "complex64", "float16"]
ORDERS = ["C", "F", "slice"]
SPECIALS = [None, None, None, "nan", "inf", "-inf", "spike"]
STRUCTURES = [None, None, "zero", "repeat", "ill"]


@st.composite
def matrices(draw, m, n, dtypes=DTYPES, exps=(-12, 12), specials=SPECIALS, structures=STRUCTURES,
             offsets=(0.0, 1.0, 10.0, 100.0), orders=ORDERS):
    """(x, how): an m x n array of a drawn dtype, memory order, magnitude 10**e,
    offset (in the same units), a NaN/Inf/spike somewhere, and a zero, repeated or
    nearly repeated column; `how` says which, for the checks."""
    how = dict(seed=draw(st.integers(0, 2**32 - 1)), dtype=draw(st.sampled_from(dtypes)),
               order=draw(st.sampled_from(orders)), e=draw(st.integers(*exps)),
               offset=draw(st.sampled_from(offsets)), special=draw(st.sampled_from(specials)),
               structure=draw(st.sampled_from(structures)))
    if how["dtype"].startswith("int"):
        how["e"] = min(max(how["e"], 0), 3)    # integers of up to 1e3 standard deviations, not int64's ends
        how["special"] = how["special"] and "spike"   # an integer holds no NaN or Inf
    rng = np.random.default_rng(how["seed"])
    base = rng.standard_normal((m, n)) + how["offset"]
    if n >= 2 and m:
        j, k = rng.choice(n, 2, replace=False)
        if how["structure"] == "zero":
            base[:, j] = 0.0
        elif how["structure"] == "repeat":
            base[:, j] = base[:, k]
        elif how["structure"] == "ill":
            base[:, j] = base[:, k] + 1e-7 * rng.standard_normal(m)
    scale = 10.0 ** how["e"]
    x = base * scale
    if m * n and how["special"]:
        i, j = rng.integers(m), rng.integers(n)
        x[i, j] = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf, "spike": 1e9 * scale}[how["special"]]
    x = convert(x, how["dtype"])
    return arrange(x, how["order"]), how


def convert(x, dtype):
    if dtype == "bool":
        return np.nan_to_num(x) > 0
    if dtype.startswith("int"):
        info = np.iinfo(dtype)
        return np.clip(np.nan_to_num(np.round(x)), info.min, info.max).astype(dtype)
    with np.errstate(over="ignore"):
        return x.astype(dtype)


def arrange(x, order):
    """x in C order, Fortran order, or as a strided view of a larger array (same values)."""
    if order == "F":
        return np.asfortranarray(x)
    if order == "slice" and x.ndim == 2:
        big = np.zeros((x.shape[0], 2 * x.shape[1]), x.dtype)
        big[:, ::2] = x
        return big[:, ::2]
    if order == "slice":
        big = np.zeros(2 * x.shape[0], x.dtype)
        big[::2] = x
        return big[::2]
    return np.ascontiguousarray(x)


def vectors(n, **kw):
    """(v, how): as `matrices`, one column, returned 1-D."""
    return matrices(n, 1, **kw).map(lambda c: (arrange(c[0][:, 0].copy(), c[1]["order"]), c[1]))


def finite_real(x):
    """True for real (not complex) data with no NaN or Inf."""
    return np.asarray(x).dtype.kind in "biuf" and bool(np.all(np.isfinite(np.asarray(x, np.float64))))


def same_specials(got, ref):
    """got has NaN exactly where ref has, and ref's infinities where ref has them."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(ref)), "NaN in other places than NumPy's"
    inf = np.isinf(ref)
    assert np.array_equal(got[inf], ref[inf]), "an infinity differs from NumPy's"
    return np.isfinite(ref)
