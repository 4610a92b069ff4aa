"""Reading a measured curve against working-set size: where it turns from the
caches to device memory (`edge`), and sizes in words (`human_bytes`). The
machine page draws the curves; chapter 9 tabulates their edges."""


# ---------------------------------------------------------------- reading the curves
def human_bytes(n):
    """4096 -> '4 KiB', 2**30 -> '1 GiB'."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.3g} B"


def edge(records, value):
    """The first working set (bytes) past which `value` has moved more than half-way,
    on a log scale, from its level at the smallest set to its level at the largest:
    where the curve crosses from the caches to device memory."""
    rows = sorted(records, key=lambda r: r["bytes"])
    first, last = rows[0][value], rows[-1][value]
    middle = (first * last) ** 0.5
    for r in rows:
        if (r[value] - middle) * (last - first) > 0:
            return r["bytes"]
    return rows[-1]["bytes"]
