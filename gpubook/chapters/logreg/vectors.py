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
