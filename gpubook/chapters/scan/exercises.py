"""Chapter 7's exercises: the shapes they run where the question's own do not fit."""
from ... import launch
from ...curves import human_bytes
from .steps import LIST_STEPS, list_local_bytes


def items_plan(device, wgs, want=(2, 8, 32)):
    """(wg, items, note) for exercise 1, step 2 at the ITEMS of `want`: the largest of
    `wgs` (the work-groups step 2 ran in the sweep) whose local memory holds the
    largest ITEMS, so that every ITEMS runs at one work-group size. Where none does:
    the work-group that holds the most ITEMS, with the ITEMS of `want` that fit there
    and, in place of the others, the largest ITEMS that fits. `note` says in one line
    what was chosen and why."""
    step, top, big = LIST_STEPS[1], max(want), max(wgs)
    have = launch.local_memory(device)
    limit = human_bytes(have) if have else "any amount (the device states no limit)"

    def need(wg, items):
        return list_local_bytes(step, wg, items)

    def fits(wg, items):
        return launch.why_not(device, wg, need(wg, items)) is None

    for wg in sorted(wgs, reverse=True):
        if fits(wg, top):
            why = (f"step 2's largest work-group here; ITEMS = {top} needs "
                   f"{human_bytes(need(wg, top))} of local memory there" if wg == big else
                   f"at WG = {big}, step 2's largest, ITEMS = {top} would need "
                   f"{human_bytes(need(big, top))} of local memory; at WG = {wg}, "
                   f"{human_bytes(need(wg, top))}")
            return wg, tuple(want), (f"WG = {wg} for every ITEMS: {why}, and a work-group "
                                     f"may have {limit} here.")
    most = {wg: max((k for k in range(1, top + 1) if fits(wg, k)), default=0) for wg in wgs}
    wg = max(wgs, key=lambda w: (most[w], w))
    if not most[wg]:
        return wg, (), (f"No ITEMS fits at any work-group of step 2 here "
                        f"({human_bytes(need(wg, 1))} of local memory at WG = {wg}, "
                        f"ITEMS = 1, against {limit}).")
    items = tuple(sorted({k for k in want if k <= most[wg]} | {most[wg]}))
    return wg, items, (f"ITEMS = {top} fits at no work-group of step 2 here (at WG = "
                       f"{min(wgs)} it needs {human_bytes(need(min(wgs), top))} of local "
                       f"memory, against {limit}), so WG = {wg} runs ITEMS up to "
                       f"{most[wg]}, the most that fits at any of its work-groups.")
