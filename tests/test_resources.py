"""Kernel resources: the ptxas parser, the occupancy calculator, the CL_KERNEL_* queries,
tables and records on the local device, and devices that report nothing."""
import json
import warnings
from pathlib import Path
from types import SimpleNamespace

import pyopencl as cl
import pytest

import gpubook as gb
from gpubook import kernels as kmod
from gpubook import resources

DATA = Path(__file__).parent / "data"
HOPPER = SimpleNamespace(compute_capability_major_nv=9, compute_capability_minor_nv=0)
SM90, SM86, SM70 = resources.ARCHS[9, 0], resources.ARCHS[8, 6], resources.ARCHS[7, 0]
TILE = """__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void tile(__global float *x)
{
    __local float t[64];
    const int i = get_local_id(0);
    t[i] = x[get_global_id(0)] * N;
    barrier(CLK_LOCAL_MEM_FENCE);
    x[get_global_id(0)] = t[63 - i];
}
"""


def test_parser_reads_every_kernel_of_a_log_in_both_forms():
    found = resources.parse_ptxas((DATA / "ptxas_sample.txt").read_text())
    assert set(found) == {"copy", "local_tiles", "tree"}  # dot8 is a device function, not a kernel
    assert found["copy"] == {"registers": 20, "barriers": 0, "cmem_bytes": 368,
                             "stack_bytes": 0, "spill_stores": 0, "spill_loads": 0}
    assert found["local_tiles"] == {"registers": 255, "barriers": 1, "smem_bytes": 8704, "cmem_bytes": 392,
                                    "stack_bytes": 40, "spill_stores": 36, "spill_loads": 44}
    # The older form says nothing of barriers; its properties line carries a "ptxas ." prefix.
    assert found["tree"] == {"registers": 16, "smem_bytes": 1024, "cmem_bytes": 352,
                             "stack_bytes": 0, "spill_stores": 0, "spill_loads": 0}


@pytest.mark.parametrize("name", ["pocl_build_log.txt", "pocl_build_log_warning.txt"])
def test_parser_finds_nothing_in_pocl_logs(name):
    assert resources.parse_ptxas((DATA / name).read_text()) == {}
    assert resources.parse_ptxas(None) == {}


@pytest.mark.parametrize("arch, registers, local, group, expected", [
    # sm_90: 64 warps, 32 groups, 65,536 registers, 228 KiB local (1 KiB reserved per group, 128-byte units).
    # 32 regs x 32 = 1,024 per warp -> 64 warps; 256 items = 8 warps -> 8 groups = 64 warps: full.
    (SM90, 32, 0, 256, (8, 64, 1.0, "warps")),
    # 64 regs -> 2,048 per warp -> 32 warps -> 4 groups of 8 warps: half.
    (SM90, 64, 0, 256, (4, 32, 0.5, "registers")),
    # 255 regs -> 8,160, rounded up to 8,192 per warp -> 8 warps -> one group of 8 warps: 1/8.
    (SM90, 255, 0, 256, (1, 8, 0.125, "registers")),
    # 48 KiB + 1 KiB reserved = 50,176 bytes -> 233,472 // 50,176 = 4 groups = 32 warps.
    (SM90, 32, 48 * 1024, 256, (4, 32, 0.5, "local memory")),
    # 227 KiB + 1 KiB fills the 228 KiB: one group.
    (SM90, 32, 227 * 1024, 256, (1, 8, 0.125, "local memory")),
    # 1,024 items = 32 warps: 2 groups fill the 64 warps (registers allow exactly that too).
    (SM90, 32, 0, 1024, (2, 64, 1.0, "warps")),
    # One warp per group: the 32-group limit leaves half the warps empty.
    (SM90, 16, 0, 32, (32, 32, 0.5, "work-groups")),
    # 640 items = 20 warps: 3 groups hold 60 of 64 warps, whatever the registers.
    (SM90, 32, 0, 640, (3, 60, 0.9375, "work-group size")),
    # A group of 100 items takes 4 warps (the last one partly empty): 16 groups fill 64 warps.
    (SM90, 32, 0, 100, (16, 64, 1.0, "warps")),
    # sm_86: 48 warps, 16 groups. 256 items = 8 warps -> 6 groups fill it.
    (SM86, 32, 0, 256, (6, 48, 1.0, "warps")),
    # 64 items = 2 warps: 16 groups = 32 of 48 warps.
    (SM86, 32, 0, 64, (16, 32, 2 / 3, "work-groups")),
    # sm_70: 40 regs -> 1,280 per warp -> 51 warps -> 12 groups of 4 warps = 48 of 64.
    (SM70, 40, 0, 128, (12, 48, 0.75, "registers")),
    # sm_70: no reserve, 256-byte units: 40,000 -> 40,192 bytes -> 98,304 // 40,192 = 2 groups.
    (SM70, 16, 40000, 128, (2, 8, 0.125, "local memory")),
])
def test_occupancy_on_known_cases(arch, registers, local, group, expected):
    occ = gb.occupancy(arch, registers, local, group)
    assert (occ["groups_per_cu"], occ["warps_per_cu"], occ["limiter"]) == (expected[0], expected[1], expected[3])
    assert occ["occupancy"] == pytest.approx(expected[2])


@pytest.mark.parametrize("registers, local, group, words", [
    (255, 0, 1024, "262,144 registers"),      # 32 warps x 8,192 registers > 65,536
    (32, 0, 1025, "at most 1024"),
    (256, 0, 64, "at most 255"),
    (32, 227 * 1024 + 1, 256, "at most 232,448"),
    (32, 0, 0, "group_size"),
    (-1, 0, 64, "registers"),
])
def test_occupancy_refuses_groups_that_cannot_run(registers, local, group, words):
    with pytest.raises(ValueError, match=words):
        gb.occupancy(SM90, registers, local, group)


def test_architecture_from_the_device():
    assert gb.arch_limits(HOPPER).name == "sm_90 (Hopper)"
    assert gb.arch_limits(SimpleNamespace(compute_capability_major_nv=12, compute_capability_minor_nv=7)) is None
    assert gb.arch_limits(SimpleNamespace(name="no NVIDIA query")) is None


class StubKernel:
    """A kernel whose CL_KERNEL_* queries answer from a table (an exception is raised)."""

    def __init__(self, name, answers):
        self.function_name, self.answers = name, answers

    def get_info(self, param):
        return SimpleNamespace(int_ptr=0)

    def get_work_group_info(self, param, device):
        value = self.answers.get(param, cl.LogicError("clGetKernelWorkGroupInfo failed: INVALID_VALUE"))
        if isinstance(value, Exception):
            raise value
        return value


def test_nvidia_resources_from_a_log(monkeypatch):
    monkeypatch.setattr(kmod, "build_log", lambda prg, dev: (DATA / "ptxas_sample.txt").read_text())
    wg = cl.kernel_work_group_info
    kern = StubKernel("local_tiles", {wg.PRIVATE_MEM_SIZE: 40, wg.LOCAL_MEM_SIZE: 0, wg.WORK_GROUP_SIZE: 256})
    res = gb.kernel_resources(kern, HOPPER, (16, 16))
    # 255 registers x 256 items: one group of 8 warps per SM; the 8,704 bytes of smem come from ptxas.
    assert res["registers"] == 255 and (res["spill_stores"], res["spill_loads"]) == (36, 44)
    assert res["local_bytes"] == 8704 and res["private_bytes"] == 40 and res["max_work_group"] == 256
    assert res["occupancy"] == pytest.approx(0.125) and res["limiter"] == "registers"
    assert res["preferred_multiple"] is None  # it raised
    table = gb.resource_table([("local tiles", kern, 256), ("too big", kern, 2048)], HOPPER)
    assert "| local tiles | 256 | 255 | 36 / 44 | 8,704 | 40 | none | 12% (registers) |" in table
    assert "does not fit: a work-group of 2048" in table


def test_a_device_that_reports_nothing_never_raises(monkeypatch):
    monkeypatch.setattr(kmod, "build_log", lambda prg, dev: "")
    wg = cl.kernel_work_group_info
    zeros = StubKernel("k", {p: 0 for p in (wg.PRIVATE_MEM_SIZE, wg.LOCAL_MEM_SIZE, wg.WORK_GROUP_SIZE,
                                            wg.PREFERRED_WORK_GROUP_SIZE_MULTIPLE)})
    silent = StubKernel("k", {})
    # Occupancy: "not known" where the architecture is unknown, "not reported" where registers are.
    for device, occupancy in ((SimpleNamespace(name="unknown"), "not known"), (HOPPER, "not reported")):
        res = gb.kernel_resources(zeros, device, 64)
        assert res["registers"] is None and res["max_work_group"] is None and res["occupancy"] is None
        assert res["local_bytes"] == 0  # a reported zero stays a number
        assert all(v is None for k, v in gb.kernel_resources(silent, device).items())
        table = gb.resource_table([("zeros", zeros, 64), ("silent", silent, None)], device)
        rows = _cells(table)
        assert rows[2] == ["zeros", "64", "not reported", "not reported", "0", "0", "none", occupancy]
        assert rows[3] == ["silent", "not known"] + ["not reported"] * 4 + ["none", "not known"]


def _cells(table):
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()]
    assert all(len(r) == 8 and all(r) for r in rows), table  # never a blank cell
    return rows


@pytest.fixture
def tile_kernel(tmp_path, monkeypatch):
    monkeypatch.setattr(kmod, "KERNELS", tmp_path)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "tile.cl").write_text(TILE)
    ctx, _ = gb.make_queue()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return gb.kernel(ctx, "t/tile.cl", "tile", {"N": 2}), ctx.devices[0]


def test_resources_on_the_local_device(tile_kernel):
    kern, device = tile_kernel
    nvidia = "NVIDIA" in device.platform.name
    res = gb.kernel_resources(kern, device)
    assert (res["registers"] is not None) == nvidia  # PoCL's log has no ptxas lines
    # 64 floats; NVIDIA adds a few bytes of its own
    assert 256 <= res["local_bytes"] <= 272 and res["work_group"] == 64  # from reqd_work_group_size
    assert isinstance(res["private_bytes"], int) and res["max_work_group"] >= 64
    rows = _cells(gb.resource_table([("tile", kern, 64), ("tile, any group", kern, None)], device))
    assert rows[2][:2] == ["tile", "64"] and rows[2][4] == "256"
    assert rows[2][6] == "64" and res["declared_work_group"] == 64  # reqd_work_group_size(64, 1, 1)
    assert (rows[2][2] == "not reported") != nvidia and rows[2][5] != "not reported"
    if gb.arch_limits(device) is None:
        assert rows[2][7] == "not known"
    assert bool(gb.ptx_lines(kern, r"ld\.global")) == nvidia  # PoCL's binary is not PTX text


def test_records_gain_resources(tile_kernel, tmp_path):
    kern, device = tile_kernel
    path = gb.record("ch", device, "small", {"x": 1}, root=tmp_path / "results", force=True)
    entry = json.loads(path.read_text())
    assert list(entry) == ["device", "vendor", "driver", "platform", "date", "scale", "data", "resources"]
    mine = entry["resources"]["t/tile.cl:tile[N=2]"]
    # 64 floats; NVIDIA adds a few bytes of its own
    assert 256 <= mine["local_bytes"] <= 272 and mine["work_group"] == 64 and "max_work_group" in mine
    assert all(v and None not in v.values() for v in entry["resources"].values())
    stub = SimpleNamespace(name="Test GPU", vendor="V", driver_version="1", platform=SimpleNamespace(name="P"))
    path = gb.record("ch", stub, "small", {"x": 1}, root=tmp_path / "results", force=True)
    assert "resources" not in json.loads(path.read_text())


def test_ptx_lines_of_a_program_and_of_one_kernel():
    ptx = (DATA / "ptx_sample.ptx").read_bytes() + b"\0"
    program = SimpleNamespace(get_info=lambda param: [ptx])
    kern = SimpleNamespace(function_name="scalar", get_info=lambda param: program)
    assert gb.ptx_lines(program, r"ld\.global\.v4\.f32") == [
        "\tld.global.v4.f32 \t{%f1, %f2, %f3, %f4}, [%rd6];"]
    assert [line.split()[0] for line in gb.ptx_lines(program, r"ld\.global")] == ["ld.global.v4.f32", "ld.global.f32"]
    assert [line.split()[0] for line in gb.ptx_lines(kern, r"ld\.global")] == ["ld.global.f32"]
    near = gb.ptx_lines(program, r"\.global\.", context=1)
    # copy: add, ld, add, st, ret; "..."; scalar: blank line, ld, st, ret.
    assert near.count("...") == 1 and len(near) == 5 + 1 + 4 and near[5] == "..."
    assert len(gb.ptx_lines(program, r"\S", limit=3)) == 3
    assert gb.ptx_lines(SimpleNamespace(get_info=lambda param: [b"poclbin\0\x96"]), "ld") == []


def test_parser_on_real_nvidia_logs():
    """Build logs of NVIDIA's OpenCL compiler with -cl-nv-verbose (H200, driver 580, 2026-11-25)."""
    from gpubook.resources import parse_ptxas
    copy = parse_ptxas((DATA / "nvidia_h200_build_log_copy_float4.txt").read_text())
    assert copy == {"copy": {"registers": 14, "barriers": 0, "stack_bytes": 0, "spill_stores": 0, "spill_loads": 0}}
    tiles = parse_ptxas((DATA / "nvidia_h200_build_log_local_tiles.txt").read_text())["local_tiles"]
    assert (tiles["registers"], tiles["barriers"], tiles["smem_bytes"]) == (32, 1, 2180)  # 2 x 16 x 17 floats + 4
    lsq5 = parse_ptxas((DATA / "nvidia_h200_build_log_lsq_tiled.txt").read_text())
    assert sorted(lsq5) == ["build_t", "r_update", "transpose", "z_sum"]
    assert lsq5["transpose"]["smem_bytes"] == 2184 and lsq5["r_update"]["registers"] == 12
    assert all(k["spill_stores"] == 0 == k["spill_loads"] for k in lsq5.values())


# The H100's log of chapter 0's copy kernel (driver 580, 2026-11-26), as NVIDIA writes it.
H100_COPY_LOG = """(): Warning: Function copy is a kernel, so overriding noinline attribute.

ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'copy' for 'sm_90a'
ptxas info    : Function properties for copy
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers
ptxas info    : Compile time = 2.512 ms
"""


def test_parser_on_stub_logs_of_each_form():
    assert resources.parse_ptxas(H100_COPY_LOG) == {"copy": {
        "registers": 10, "barriers": 0, "stack_bytes": 0, "spill_stores": 0, "spill_loads": 0}}
    log = ("ptxas info    : Compiling entry function 'mma_tiles' for 'sm_90'\n"
           "ptxas info    : Function properties for mma_tiles\n"
           "    24 bytes stack frame, 60 bytes spill stores, 56 bytes spill loads\n"
           "ptxas info    : Used 58 registers, 384 bytes smem, 400 bytes cmem[0]\n")
    assert resources.parse_ptxas(log)["mma_tiles"] == {
        "registers": 58, "smem_bytes": 384, "cmem_bytes": 400, "stack_bytes": 24,
        "spill_stores": 60, "spill_loads": 56}
    # a log the driver's cache left without ptxas lines says nothing
    assert resources.parse_ptxas("(): Warning: Function copy is a kernel, so overriding noinline "
                                 "attribute.\n\n") == {}


NV = SimpleNamespace(compute_capability_major_nv=9, compute_capability_minor_nv=0, int_ptr=7,
                     max_compute_units=132, platform=SimpleNamespace(name="NVIDIA CUDA"))


def test_an_empty_cached_log_is_read_again_from_a_fresh_build(monkeypatch):
    wg = cl.kernel_work_group_info
    kern = StubKernel("copy", {wg.PRIVATE_MEM_SIZE: 0, wg.LOCAL_MEM_SIZE: 0, wg.WORK_GROUP_SIZE: 256})
    monkeypatch.setattr(kmod, "build_log", lambda prg, dev: "(): Warning: Function copy is a kernel\n")
    asked = []
    monkeypatch.setattr(resources, "fresh_log", lambda prg, dev: asked.append(dev) or H100_COPY_LOG)
    res = gb.kernel_resources(kern, NV, 256)
    assert (res["registers"], res["barriers"], res["spill_stores"]) == (10, 0, 0) and asked == [NV]
    # not on other platforms, and not where the first log already has the kernel
    assert gb.kernel_resources(kern, HOPPER, 256)["registers"] is None and asked == [NV]
    monkeypatch.setattr(kmod, "build_log", lambda prg, dev: H100_COPY_LOG)
    assert gb.kernel_resources(kern, NV, 256)["registers"] == 10 and asked == [NV]


def test_the_fresh_build_passes_the_drivers_cache(monkeypatch):
    built = []

    class FakeProgram:
        def __init__(self, ctx, text):
            self.text = text

        def build(self, options, devices):
            built.append((self.text, options, devices))
            return self

        def get_build_info(self, device, param):
            return H100_COPY_LOG

    program = SimpleNamespace(
        int_ptr=1234, get_info=lambda p: "ctx" if p == cl.program_info.CONTEXT else "__kernel void copy() {}",
        get_build_info=lambda dev, p: "-DTYPE=float -I /x")
    monkeypatch.setattr(resources.cl, "Program", FakeProgram)
    resources._fresh.clear()
    assert resources.fresh_log(program, NV) == H100_COPY_LOG
    assert resources.fresh_log(program, NV) == H100_COPY_LOG and len(built) == 1  # once per program
    text, options, devices = built[0]
    assert options == "-DTYPE=float -I /x -cl-nv-verbose" and devices == [NV]
    assert text.startswith("__kernel void copy() {}") and "__constant int gpubook_fresh_log_" in text
    broken = SimpleNamespace(int_ptr=99, get_info=lambda p: (_ for _ in ()).throw(cl.LogicError("no")),
                             get_build_info=lambda dev, p: "")
    assert resources.fresh_log(broken, NV) == ""  # never raises
    resources._fresh.clear()


def test_the_fresh_source_is_new_each_time_and_still_builds():
    a, b = resources.fresh_source(TILE), resources.fresh_source(TILE)
    assert a != b and a.startswith(TILE)
    ctx, _ = gb.make_queue()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)
        prg = cl.Program(ctx, a).build(options=["-DN=2"])
    assert prg.get_info(cl.program_info.KERNEL_NAMES) == "tile"


def test_occupancy_only_where_work_groups_share_a_compute_unit(monkeypatch):
    monkeypatch.setattr(kmod, "build_log", lambda prg, dev: (DATA / "ptxas_sample.txt").read_text())
    wg = cl.kernel_work_group_info
    kern = StubKernel("copy", {wg.PRIVATE_MEM_SIZE: 0, wg.LOCAL_MEM_SIZE: 0, wg.WORK_GROUP_SIZE: 256,
                               wg.COMPILE_WORK_GROUP_SIZE: [1024, 1, 1]})
    device = SimpleNamespace(compute_capability_major_nv=9, compute_capability_minor_nv=0,
                             max_compute_units=132)
    rows = _cells(gb.resource_table([("one", kern, 1024, 1), ("few", kern, 1024, 100),
                                     ("many", kern, 1024, 264), ("unsaid", kern, 1024)], device))
    assert rows[2][1] == "1,024" and rows[2][6] == "1,024"  # launched and declared
    assert rows[2][7] == "one work-group: 1 of 132 compute units busy"
    assert rows[3][7] == "100 work-groups, no more than the 132 compute units: a compute unit need hold only one"
    assert rows[4][7] == rows[5][7] == "100% (warps)"  # 20 registers x 1,024: two groups fill 64 warps
