"""Chapter 4 (vector types): its exercises' claims (gpubook.claims), and its resource
tables with the work-group size each kernel was built for. Chapters 1-3 do not use this
module."""
from ...claims import claim
from ...resources import resource_table


def _said(name, relation, held, failed, missing, **values):
    """A claim whose sentences stand alone in an exercise's answer: each ends with a full stop."""
    return claim(name, relation, held + ".", failed + ".", missing + ".", **values)


def declared_table(rows, device):
    """gb.resource_table of (label, kernel, group_size) rows: its 'declared work-group'
    column gives, for a kernel built with reqd_work_group_size, the size it was built for."""
    return resource_table(rows, device)


def registers_exercise(rates, in_regs):
    """Exercise 1: fast.cl with every example read from global memory (IN_REGS=0) and with
    `in_regs` examples per work-item kept in registers ({label: iterations/s})."""
    slow, fast = rates.get("IN_REGS=0"), rates.get(f"IN_REGS={in_regs}")
    return _said("vt_ex1_registers_pay", "gain > 1.1",
                 "Keeping the {in_regs:.0f} examples per work-item in registers made this run {gain:.2f}× "
                 "faster: {slow_ns:,.0f} ns per iteration without, {fast_ns:,.0f} with, {saved_ns:,.0f} ns "
                 "saved on loads that every iteration must wait for before it can compute a score",
                 "Keeping the {in_regs:.0f} examples per work-item in registers changed this run by "
                 "{gain:.2f}× ({slow_ns:,.0f} ns per iteration without, {fast_ns:,.0f} with): the reloads "
                 "cost little here",
                 "One of the two builds does not run here", in_regs=in_regs,
                 gain=fast / slow if slow and fast else None, slow_ns=1e9 / slow if slow else None,
                 fast_ns=1e9 / fast if fast else None,
                 saved_ns=1e9 / slow - 1e9 / fast if slow and fast else None)


def local_rounds(n, radix):
    """The rounds of fast.cl's local-memory sum (each closed by a barrier) over N values:
    a round adds RADIX neighbours while more than RADIX values are left."""
    rounds = 0
    while n > radix:
        n //= radix
        rounds += 1
    return rounds


def radix_exercise(rates, n):
    """Exercise 2: fast.cl's local rounds of radix 2 and 16 at N work-items ({label: iterations/s})."""
    r2, r16 = rates.get("RADIX=2"), rates.get("RADIX=16")
    rounds = {r: local_rounds(n, r) if n else None for r in (2, 16)}
    return _said("vt_ex2_radix16", "ratio > 1",
                 "At N = {n:.0f}, radix 16 ran {ratio:.2f}× as fast as radix 2 ({ns16:,.0f} against {ns2:,.0f} "
                 "ns per iteration): {rounds16:.0f} rounds, each closed by a barrier, instead of {rounds2:.0f}",
                 "At N = {n:.0f}, radix 16 ran {ratio:.2f}× as fast as radix 2 ({ns16:,.0f} against {ns2:,.0f} "
                 "ns per iteration): fewer rounds ({rounds16:.0f} instead of {rounds2:.0f}) did not pay here",
                 "One of the two radices does not run here", n=n, ratio=r16 / r2 if r2 and r16 else None,
                 ns16=1e9 / r16 if r16 else None, ns2=1e9 / r2 if r2 else None,
                 rounds2=rounds[2], rounds16=rounds[16])


def one_group_limits(j_records, fastest, largest, bound, others):
    """The last section's reading: where the fastest configuration falls below the
    whole-device bound (`bound`: one rate per J of the sweep), whether the same kernel
    with the largest group falls more slowly (`largest` None where it did not fit), and
    whether a recorded CPU run ranks the float4 kernel above the fastest build."""
    by = {}
    for r in j_records:
        by.setdefault(r["variant"], {})[r["examples"]] = r["rate"]
    js = sorted(by.get(fastest, {}))
    beaten = [j for j, b in zip(js, bound) if by[fastest][j] < b]
    below = claim("vt_one_group_below_bound", "crossed > 0",
                  "The fastest configuration goes below the line at $J$ = {j_cross:,.0f}: from there "
                  "one work-group is no longer enough, and the iteration has to be spread over many "
                  "work-groups, paying for a launch (or another way to synchronise them) every iteration",
                  "The fastest configuration stays above the line up to $J$ = {j_big:,.0f}: one "
                  "work-group is still enough at every size measured",
                  crossed=len(beaten), j_cross=beaten[0] if beaten else 0, j_big=js[-1] if js else None)
    top = js[-1] if js else None
    big = by.get(largest, {}).get(top) if largest else None
    slower = claim("vt_larger_group_falls_slower", "big > fast",
                   "At $J$ = {j:,.0f} the same kernel with the largest group, with more work-items to "
                   "keep loads in flight, ran {ratio:.2f} times as fast as the fastest configuration",
                   "At $J$ = {j:,.0f} the same kernel with the largest group ran {ratio:.2f} times as "
                   "fast as the fastest configuration: more work-items did not keep it ahead",
                   missing="The same kernel does not fit this device with the largest group",
                   big=big, fast=by.get(fastest, {}).get(top), j=top,
                   ratio=big / by[fastest][top] if big and top else None)
    cpu = next((e for k, e in others.items() if k.startswith("cpu")), None)
    swap = claim("vt_cpu_swaps", "fast_rate < float4_best",
                 "On the recorded CPU run the float4 kernel ({float4_best:,.0f} iterations/s) beat "
                 "the fastest build ({fast_rate:,.0f}): PoCL runs the whole work-group on one core, one "
                 "work-item after another between barriers, with no warps to exchange registers, and "
                 "registers are not a CPU's scarce resource",
                 "On the recorded CPU run the fastest build ({fast_rate:,.0f} iterations/s) kept ahead of "
                 "the float4 kernel ({float4_best:,.0f})",
                 missing="No CPU run of this chapter is recorded",
                 fast_rate=cpu["data"]["fast_rate"] if cpu else None,
                 float4_best=cpu["data"]["float4_best"] if cpu else None)
    return below, slower, swap


def arithmetic_floor(iteration_ns, cycle_ns, J, K, lanes=None, sfus=None):
    """The fastest build's iteration against the arithmetic one compute unit must do:
    J*K multiply-adds twice over `lanes` FP32 lanes, and J exponentials and reciprocals
    over `sfus` special-function units (data-sheet counts; None where not known). The two
    kinds of unit issue side by side, so the floor is the longer of their two counts,
    not their sum."""
    cycles = iteration_ns / cycle_ns if cycle_ns and cycle_ns == cycle_ns else None
    fma = 2 * J * K / lanes if lanes else None
    sfu = 2 * J / sfus if sfus else None
    floor = max(fma, sfu) if fma and sfu else None
    return claim("vt_arithmetic_floor", "share < 0.5",
                 "On this device a compute unit has {lanes:.0f} FP32 lanes and {sfus:.0f} "
                 "special-function units (NVIDIA's data sheet): the multiply-adds take {fma:.0f} cycles "
                 "on the lanes and the exponentials and reciprocals {sfu:.0f} on the special-function "
                 "units, which run at the same time, so the arithmetic takes at least {floor:.0f} cycles, the longer "
                 "of the two. That is {share:.0%} of the {cycles:.0f} cycles of an iteration: most of "
                 "the iteration is spent on something other than this arithmetic",
                 "On this device a compute unit has {lanes:.0f} FP32 lanes and {sfus:.0f} "
                 "special-function units (NVIDIA's data sheet): the multiply-adds take {fma:.0f} cycles "
                 "on the lanes and the exponentials and reciprocals {sfu:.0f} on the special-function "
                 "units, which run at the same time, so the arithmetic takes at least {floor:.0f} cycles, the longer "
                 "of the two. That is {share:.0%} of the {cycles:.0f} cycles of an iteration: most of it "
                 "is arithmetic that one compute unit cannot do faster",
                 missing="The book's table does not give this device's lanes per compute unit, or the "
                         "device reports no clock, so the arithmetic is not counted in cycles",
                 lanes=lanes, sfus=sfus, fma=fma, sfu=sfu, floor=floor, cycles=cycles,
                 share=floor / cycles if floor and cycles else None)
