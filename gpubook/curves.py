"""Reading a measured curve against working-set size: where it turns from the
caches to device memory (`edge`), and sizes in words (`human_bytes`). The
machine page draws the curves; chapter 9 tabulates their edges."""


# ---------------------------------------------------------------- reading the curves
def human_bytes(n):
    """4096 -> '4 KiB', 2**30 -> '1 GiB': the largest unit in which the figure, to three
    digits, is at least 0.976 (1,044,480 -> '0.996 MiB', never '1.02e+03 KiB')."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n / size >= 999.5 / 1024:
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


def knee(records, value, high=0.7, low=0.5):
    """Where a bandwidth curve leaves its cache plateau: (the largest working set still
    at `high` or more of the plateau, the smallest at `low` or less of it, the plateau),
    in bytes and in the curve's unit; the plateau is the median of the smaller half of
    the sets. None for a bound the curve never reaches."""
    rows = sorted(records, key=lambda r: r["bytes"])
    head = sorted(r[value] for r in rows[:max(1, len(rows) // 2)])
    plateau = head[len(head) // 2]
    last_high = first_low = None
    for r in rows:
        if first_low is None and r[value] >= high * plateau:
            last_high = r["bytes"]
        if first_low is None and r[value] <= low * plateau:
            first_low = r["bytes"]
    return last_high, first_low, plateau


def middle_level(records, value, tol=0.1):
    """A level of a rising curve (latency) between its smallest set's and its largest
    set's: among the sets whose `value` lies above twice the first set's and below 0.6
    of the last set's, the longest run of neighbouring sets whose values stay within
    `tol` of each other (the largest over the smallest). Returns {'lo', 'hi' (bytes),
    'level' (the run's median), 'sets', 'spread' (largest / smallest - 1), 'after' (the
    next set's bytes, None at the end)}, or None where no set lies between."""
    rows = sorted(records, key=lambda r: r["bytes"])
    first, last = rows[0][value], rows[-1][value]
    inside = [i for i, r in enumerate(rows) if 2 * first < r[value] < 0.6 * last]
    best = None
    for a in range(len(inside)):
        b = a
        while (b + 1 < len(inside) and inside[b + 1] == inside[b] + 1
               and max(rows[i][value] for i in inside[a:b + 2])
               <= (1 + tol) * min(rows[i][value] for i in inside[a:b + 2])):
            b += 1
        if best is None or b - a > best[1] - best[0]:
            best = (a, b)
    if best is None:
        return None
    run = [rows[i] for i in inside[best[0]:best[1] + 1]]
    vals = sorted(r[value] for r in run)
    after = inside[best[1]] + 1
    return {"lo": run[0]["bytes"], "hi": run[-1]["bytes"], "level": vals[len(vals) // 2],
            "sets": len(run), "spread": vals[-1] / vals[0] - 1,
            "after": rows[after]["bytes"] if after < len(rows) else None}
