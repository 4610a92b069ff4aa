"""What a kernel costs the compute unit: registers, spills, local and private memory, occupancy.

NVIDIA's compiler reports registers, spills and barriers when a program is built with
-cl-nv-verbose (gpubook.kernels adds it; where the driver's cache left the log empty, the
source is rebuilt once past that cache for the table); every device answers the CL_KERNEL_* work-group
queries. Occupancy follows from those and the per-compute-unit limits of a known architecture.
What a device does not report stays None here and reads "not reported" in tables.
"""
import math
import operator
import re
import uuid
import warnings
from dataclasses import dataclass

import pyopencl as cl

from . import kernels

NOT_REPORTED, NOT_KNOWN = "not reported", "not known"


@dataclass(frozen=True)
class Arch:
    """Per-compute-unit (SM) limits of one GPU architecture, from NVIDIA's data sheets."""
    name: str
    max_warps: int          # resident warps per compute unit
    max_groups: int         # resident work-groups (blocks) per compute unit
    local_per_cu: int       # local (shared) memory per compute unit, bytes, at the largest carve-out
    local_per_group: int    # most local memory one work-group may use, bytes
    local_reserved: int     # bytes the driver reserves per work-group (sm_80 onwards)
    local_unit: int = 128   # local memory is allocated in multiples of this, bytes
    register_file: int = 65536  # 32-bit registers per compute unit (and at most per work-group)
    register_unit: int = 256    # registers are allocated per warp in multiples of this
    max_registers: int = 255    # per work-item
    max_group_size: int = 1024  # work-items per work-group
    warp_size: int = 32


KIB = 1024
ARCHS = {
    (7, 0): Arch("sm_70 (Volta)", 64, 32, 96 * KIB, 96 * KIB, 0, 256),
    (7, 5): Arch("sm_75 (Turing)", 32, 16, 64 * KIB, 64 * KIB, 0, 256),
    (8, 0): Arch("sm_80 (Ampere, A100)", 64, 32, 164 * KIB, 163 * KIB, KIB),
    (8, 6): Arch("sm_86 (Ampere, GA10x)", 48, 16, 100 * KIB, 99 * KIB, KIB),
    (8, 7): Arch("sm_87 (Ampere, Orin)", 48, 16, 164 * KIB, 163 * KIB, KIB),
    (8, 9): Arch("sm_89 (Ada)", 48, 24, 100 * KIB, 99 * KIB, KIB),
    (9, 0): Arch("sm_90 (Hopper)", 64, 32, 228 * KIB, 227 * KIB, KIB),
}


def arch_limits(device):
    """The Arch of an NVIDIA device (cl_nv_device_attribute_query), or None when not known."""
    try:
        cc = (int(device.compute_capability_major_nv), int(device.compute_capability_minor_nv))
    except (cl.Error, AttributeError, TypeError, ValueError):
        return None
    return ARCHS.get(cc)


def _up(value, unit):
    return -(-value // unit) * unit


def _whole(what, value, least):
    try:
        value = operator.index(value)
    except TypeError:
        value = None
    if value is None or value < least:
        raise ValueError(f"occupancy: {what} must be a whole number >= {least}")
    return value


def occupancy(arch, registers, local_bytes, group_size):
    """Work-groups and warps resident per compute unit, and what bounds them.

    Returns {groups_per_cu, warps_per_cu, occupancy (share of the compute unit's warps),
    limiter}. The limiter is the bound that allows the fewest work-groups; on a tie the
    group's shape is named before the resources: "warps" (the compute unit is full),
    "work-group size" (whole groups leave warps unused), "work-groups" (the count of
    resident groups), then "registers" and "local memory". Local memory counts the
    largest carve-out; a driver may choose a smaller one. Raises ValueError for a
    work-group that cannot run at all.
    """
    registers, local_bytes, group_size = (_whole(*a) for a in (
        ("registers", registers, 0), ("local_bytes", local_bytes, 0), ("group_size", group_size, 1)))
    if group_size > arch.max_group_size:
        raise ValueError(f"a work-group of {group_size} work-items cannot run on {arch.name}: "
                         f"at most {arch.max_group_size}")
    if registers > arch.max_registers:
        raise ValueError(f"{registers} registers per work-item cannot run on {arch.name}: "
                         f"at most {arch.max_registers}")
    warps = -(-group_size // arch.warp_size)
    per_warp = _up(registers * arch.warp_size, arch.register_unit)
    if per_warp * warps > arch.register_file:
        raise ValueError(f"{registers} registers x {group_size} work-items need {per_warp * warps:,} registers "
                         f"per work-group; a compute unit of {arch.name} has {arch.register_file:,}")
    if local_bytes > arch.local_per_group:
        raise ValueError(f"{local_bytes:,} bytes of local memory per work-group cannot run on {arch.name}: "
                         f"at most {arch.local_per_group:,}")
    by_warps = arch.max_warps // warps
    bounds = {  # work-groups per compute unit that each limit allows, in tie order
        "warps" if by_warps * warps == arch.max_warps else "work-group size": by_warps,
        "work-groups": arch.max_groups,
        "registers": arch.register_file // per_warp // warps if per_warp else arch.max_groups,
        "local memory": arch.local_per_cu // _up(local_bytes + arch.local_reserved, arch.local_unit)
        if local_bytes + arch.local_reserved else arch.max_groups,
    }
    groups = min(bounds.values())
    limiter = next(name for name, n in bounds.items() if n == groups)
    return {"groups_per_cu": groups, "warps_per_cu": groups * warps,
            "occupancy": groups * warps / arch.max_warps, "limiter": limiter}


_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_EXTRA = {"barriers": re.compile(r"used (\d+) barriers"), "smem_bytes": re.compile(r"(\d+) bytes smem"),
          "cmem_bytes": re.compile(r"(\d+) bytes cmem\[0\]")}


def parse_ptxas(log):
    """Per kernel (entry function) of an NVIDIA verbose build log: {name: {registers,
    barriers, stack_bytes, spill_stores, spill_loads, smem_bytes, cmem_bytes}}; a key is
    absent where the log does not give it. A log without ptxas lines gives {}."""
    entries, props, entry, target = {}, {}, None, None
    for line in (log or "").splitlines():
        if m := _ENTRY.search(line):
            entry = m.group(1)
            entries.setdefault(entry, {})
        elif m := _PROPS.search(line):
            target = m.group(1).strip("'")
        elif (m := _FRAME.search(line)) and target:
            props[target] = dict(zip(("stack_bytes", "spill_stores", "spill_loads"), map(int, m.groups())))
        elif (m := _USED.search(line)) and entry:
            entries[entry]["registers"] = int(m.group(1))
            for key, pattern in _EXTRA.items():
                if found := pattern.search(line):
                    entries[entry][key] = int(found.group(1))
    for name, found in entries.items():
        found.update(props.get(name, {}))
    return entries


_WG = cl.kernel_work_group_info
_QUERIES = {"private_bytes": _WG.PRIVATE_MEM_SIZE, "local_bytes": _WG.LOCAL_MEM_SIZE,
            "max_work_group": _WG.WORK_GROUP_SIZE, "preferred_multiple": _WG.PREFERRED_WORK_GROUP_SIZE_MULTIPLE}


def _query(kern, param, device):
    try:
        return kern.get_work_group_info(param, device)
    except (cl.Error, AttributeError, TypeError, ValueError):
        return None


def _nvidia(device):
    try:
        return "NVIDIA" in str(device.platform.name)
    except (cl.Error, AttributeError):
        return False


def fresh_source(text):
    """The program's source with one unused program-scope constant of a new name: NVIDIA's
    driver caches its compiles (~/.nv/ComputeCache), and a program it finds there comes back
    with no ptxas lines in its log (seen on an H100, driver 580, 2026-11-26: a second build
    of the same copy kernel logged nothing; a new constant gave the full log again, a new
    comment did not)."""
    return f"{text}\n__constant int gpubook_fresh_log_{uuid.uuid4().hex} = 0;\n"


_fresh = {}  # (program int_ptr, device int_ptr) -> the log of a fresh verbose build


def fresh_log(program, device):
    """The build log of the program's source rebuilt now for `device` with its own options
    and -cl-nv-verbose, past the driver's cache ('' where the program has no source or the
    rebuild fails). Built once per program and device; for tables, never on a timed path."""
    key = (program.int_ptr, device.int_ptr)
    if key not in _fresh:
        _fresh[key] = ""
        try:
            text = program.get_info(cl.program_info.SOURCE)
            opts = program.get_build_info(device, cl.program_build_info.OPTIONS) or ""
            if text:
                opts = opts if "-cl-nv-verbose" in opts else f"{opts} -cl-nv-verbose"
                ctx = program.get_info(cl.program_info.CONTEXT)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", cl.CompilerWarning)
                    prg = cl.Program(ctx, fresh_source(text)).build(options=opts.strip(), devices=[device])
                _fresh[key] = prg.get_build_info(device, cl.program_build_info.LOG) or ""
        except (cl.Error, RuntimeError, AttributeError, TypeError, ValueError):
            pass
    return _fresh[key]


def build_report(kern, device):
    """What ptxas said of this kernel ({} where nothing): the program's own build log, else
    on NVIDIA the log of a fresh verbose build (the driver's cache leaves the first empty)."""
    try:
        name = kern.function_name
        program = kern.get_info(cl.kernel_info.PROGRAM)
        found = parse_ptxas(kernels.build_log(program, device)).get(name, {})
        if "registers" not in found and _nvidia(device):
            found = parse_ptxas(fresh_log(program, device)).get(name, {})
        return found
    except (cl.Error, AttributeError, TypeError):
        return {}


def kernel_resources(kern, device, group_size=None):
    """Registers, spills, stack, barriers (NVIDIA's build log), private and local bytes, the
    runtime's largest work-group and the declared one (reqd_work_group_size) (CL_KERNEL_*
    queries), and the occupancy at `group_size` work-items (an int or a local size tuple; by
    default the declared size, if any). A value the device does not report is None; this
    never raises for that."""
    found = build_report(kern, device)
    res = {key: found.get(key) for key in ("registers", "spill_stores", "spill_loads", "stack_bytes", "barriers")}
    res.update({key: _query(kern, param, device) for key, param in _QUERIES.items()})
    for key in ("max_work_group", "preferred_multiple"):  # 0 work-items means the device did not say
        res[key] = res[key] or None
    if found.get("smem_bytes") is not None and (res["local_bytes"] or 0) < found["smem_bytes"]:
        res["local_bytes"] = found["smem_bytes"]  # ptxas's static local memory, where the query says less
    reqd = _query(kern, _WG.COMPILE_WORK_GROUP_SIZE, device)
    try:
        res["declared_work_group"] = math.prod(int(s) for s in reqd) if reqd and all(reqd) else None
    except (TypeError, ValueError):
        res["declared_work_group"] = None
    if group_size is None:
        group_size = res["declared_work_group"]
    sizes = group_size if isinstance(group_size, (tuple, list)) else [group_size]
    res["work_group"] = None if group_size is None else math.prod(int(s) for s in sizes)
    res["occupancy"] = res["limiter"] = None
    arch = arch_limits(device)
    if arch is not None and res["registers"] is not None and res["work_group"]:
        try:
            occ = occupancy(arch, res["registers"], res["local_bytes"] or 0, res["work_group"])
            res["occupancy"], res["limiter"] = occ["occupancy"], occ["limiter"]
        except ValueError as err:
            res["limiter"] = f"does not fit: {err}"
    return res


def few_groups(groups, device):
    """Why occupancy means nothing for a launch of `groups` work-groups, or None where
    several work-groups share a compute unit (more groups than compute units)."""
    try:
        units = int(device.max_compute_units)
    except (cl.Error, AttributeError, TypeError, ValueError):
        units = None
    if groups is None or (units is not None and groups > units):
        return None
    if groups == 1:
        return f"one work-group: 1 of {units:,} compute units busy" if units else "one work-group"
    return (f"{groups:,} work-groups, no more than the {units:,} compute units: "
            "a compute unit need hold only one" if units else None)


def resource_table(rows, device):
    """A Markdown table of (label, kernel, group_size[, groups]) rows on this device: what
    each kernel uses, the work-group it was launched with and the one it declares, and
    the occupancy it allows. `groups`, the work-groups of the launch where given: with no
    more groups than compute units none share one, and the table says so instead of an
    occupancy. "not reported" / "not known" where the device is silent."""
    arch = arch_limits(device)

    def cell(value, fmt="{:,}"):
        return NOT_REPORTED if value is None else fmt.format(value)

    lines = ["| kernel | work-group (launched) | registers | spills, stores / loads (bytes) "
             "| local memory per work-group (bytes) | private (bytes) "
             "| declared work-group (reqd_work_group_size) | occupancy |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for row in rows:
        label, kern, group_size = row[:3]
        groups = row[3] if len(row) > 3 else None
        r = kernel_resources(kern, device, group_size)
        spills = (NOT_REPORTED if r["spill_stores"] is None
                  else f"{r['spill_stores']:,} / {r['spill_loads']:,}")
        why = few_groups(groups, device)
        if why is not None:
            occ = why
        elif r["occupancy"] is not None:
            occ = f"{r['occupancy']:.0%} ({r['limiter']})"
        elif r["limiter"]:
            occ = r["limiter"]
        elif arch is None or not r["work_group"]:
            occ = NOT_KNOWN
        else:
            occ = NOT_REPORTED
        declared = "none" if r["declared_work_group"] is None else f"{r['declared_work_group']:,}"
        lines.append(f"| {label} | {cell(r['work_group']) if r['work_group'] else NOT_KNOWN} "
                     f"| {cell(r['registers'])} | {spills} | {cell(r['local_bytes'])} | {cell(r['private_bytes'])} "
                     f"| {declared} | {occ} |")
    return "\n".join(lines)


def _ptx_text(program):
    """The first of a program's binaries that is PTX text, else None."""
    try:
        binaries = program.get_info(cl.program_info.BINARIES) or []
    except (cl.Error, AttributeError):
        binaries = []
    for binary in binaries:
        try:
            text = bytes(binary).rstrip(b"\0").decode("ascii")
        except (UnicodeDecodeError, TypeError):
            continue
        if re.search(r"^\s*\.version\s", text, re.M) and re.search(r"^\s*\.target\s", text, re.M):
            return text
    return None


def ptx_lines(kern_or_program, pattern, context=0, limit=8):
    """The PTX lines (NVIDIA's program binary) matching a regex, with `context` lines around
    each of at most `limit` matches ("..." between stretches when context > 0). For a kernel, only
    its own entry function is searched. [] where the binary is not PTX text (PoCL, others)."""
    programs = (cl.Program, cl._cl._Program)  # (hasattr on a cl.Program would look for a kernel)
    if isinstance(kern_or_program, cl.Kernel) or (
            not isinstance(kern_or_program, programs) and hasattr(kern_or_program, "function_name")):
        program, name = kern_or_program.get_info(cl.kernel_info.PROGRAM), kern_or_program.function_name
    else:
        program, name = kern_or_program, None
    text = _ptx_text(program)
    if text is None:
        return []
    lines = text.splitlines()
    if name is not None:
        entry = re.compile(rf"\.entry\s+{re.escape(name)}\s*\(")
        start = next((i for i, line in enumerate(lines) if entry.search(line)), None)
        if start is not None:
            end = next((i for i in range(start, len(lines)) if lines[i].rstrip() == "}"), len(lines) - 1)
            lines = lines[start:end + 1]
    regex = re.compile(pattern)
    hits = [i for i, line in enumerate(lines) if regex.search(line)][:limit]
    keep = sorted({j for i in hits for j in range(max(0, i - context), min(len(lines), i + context + 1))})
    out = []
    for k, j in enumerate(keep):
        if context and k and j != keep[k - 1] + 1:
            out.append("...")
        out.append(lines[j].rstrip())
    return out


def recorded_resources(device):
    """{"<path>:<name>[defines]": what kernel_resources reports} for the kernels built on this
    device (a cl.Device, or an object whose .platform is a cl.Platform: every device of it),
    leaving out None values and kernels with nothing reported. For gpubook.records."""
    if isinstance(device, cl.Device):
        def mine(dev):
            return dev.int_ptr == device.int_ptr
    elif isinstance(getattr(device, "platform", None), cl.Platform):
        def mine(dev):
            return dev.platform.int_ptr == device.platform.int_ptr
    else:
        return {}
    found = {}
    for path, opts, program, names in kernels.built():
        try:
            devs = [d for d in program.get_info(cl.program_info.DEVICES) if mine(d)]
            if not devs:
                continue
            names = names or program.get_info(cl.program_info.KERNEL_NAMES).split(";")
            for name in filter(None, names):
                res = kernel_resources(cl.Kernel(program, name), devs[0])
                res = {k: v for k, v in res.items() if v is not None}
                if res:
                    found.setdefault(kernels.label(path, opts, name), res)
        except cl.Error:
            continue
    return found
