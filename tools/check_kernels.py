"""Run the book's portable kernels under Oclgrind and expect no report.

Oclgrind simulates an OpenCL device and reports out-of-bounds accesses (always on),
data races (--data-races) and uses of uninitialised values (--uninitialized). Each
case below is a few small unit tests that launch one chapter step at tiny sizes;
every test of a case runs in its own process, `oclgrind ... python -m pytest NODEIDS` with
PYOPENCL_CTX=0 (Oclgrind is then the only platform), so that a simulator crash
names its case. Which kernel files a case built comes from GPUBOOK_KERNEL_LOG.

    python tools/check_kernels.py            # every case (make check-kernels)
    python tools/check_kernels.py --quick    # the CI subset
    python tools/check_kernels.py reduction-5 scan-3   # some cases
    python tools/check_kernels.py --list

A case passes when its tests pass and Oclgrind's log is empty. When the simulator
itself crashes with --uninitialized (Oclgrind 21.10 does on a float4 carried through
a loop), or gives up on an instruction its Uninitialized plugin does not know (LLVM's
`freeze`, which clang emits where a kernel takes a quotient and a remainder of the
same numbers: `g / b` and `g % b` in a three-line kernel are enough), the case runs
again without that check, and the summary lists it as limited, with the reason. The summary names
every kernel file that no case ran, with the reason.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

R = "tests/test_reduction.py::"
S = "tests/test_scan.py::"
L = "tests/test_logreg.py::"
T = "tests/test_transpose.py::"
Q = "tests/test_lsq.py::"
C = "tests/test_covariance.py::"
M = "tests/test_machine.py::"

RED_STEPS = ("1_interleaved", "2_sequential", "3_first_add", "4_multi", "5_unrolled")
LOGREG = ("naive-1-defines0", "reordered-1-defines1", "merged-1-defines2", "work_items-8-defines3",
          "tree-16-defines4", "float4-4-defines5", "fast-32-defines7", "fast-16-defines10")

# name -> pytest node ids. Small cases, one chapter step each where the tests allow.
CASES = {
    **{f"reduction-{s[0]}": [f"{R}test_every_step_sums_correctly[257-{s}]",
                             f"{R}test_every_step_sums_correctly[4099-{s}]"]
       for s in RED_STEPS},
    "scan-1": [f"{S}test_list_fitness_exact[33-1_hillis_steele]"],
    "scan-2": [f"{S}test_list_fitness_exact[33-2_work_efficient]"],
    "scan-3": [f"{S}test_device_scan_odd_sizes_one_element_many_tiles[False-3_reduce_then_scan]"],
    "scan-4": [f"{S}test_device_scan_odd_sizes_one_element_many_tiles[False-4_single_pass]"],
    "scan-4-staged": [f"{S}test_device_scan_odd_sizes_one_element_many_tiles[True-4_single_pass]",
                      f"{S}test_loads_as_they_come_scan_the_same[4_single_pass]"],
    "scan-5": [f"{S}test_population_matches_numpy_with_ties[100-False]"],
    **{f"logreg-{n}": [f"{L}test_kernels_train_like_the_reference[{n}]"] for n in LOGREG},
    "transpose": [f"{T}test_transposes_exact"],
    "transpose-scores": [f"{T}test_scores_match_numpy"],
    "transpose-gradients": [f"{T}test_gradients_match_numpy"],
    "transpose-iterations": [f"{T}test_iterations_match_train"],
    "transpose-fill": [f"{T}test_synthetic_data_is_padded"],
    **{f"covariance-{s}": [f"{C}test_every_step_on_sizes_no_tile_divides[{s}]"]
       for s in ("naive", "symmetric", "local_tiles", "register_tiles")},
    "covariance-pairs": [f"{C}test_tile_pairs_gather_and_scatter[flatten]"],
    "covariance-stream": [f"{C}test_stream_matches_in_core_within_budget"],
    "tiles-float64": ["tests/test_tiles.py::test_sizes_no_tile_divides[float64-1e-13-1-2]"],
    "lsq-1": [f"{Q}test_device_includ_matches_the_reference[False-1_sequential]"],
    "lsq-2": [f"{Q}test_device_includ_matches_the_reference[False-2_row_group]"],
    "lsq-3": [f"{Q}test_blocked_householder_matches_the_reference[8]"],
    "lsq-4": [f"{Q}test_subset_search_matches_numpy_and_lstsq[3]"],
    "lsq-5": [f"{Q}test_tiled_householder_matches_the_reference[8-16-1]"],
    "lsq-6": ["tests/test_tsqr.py::test_tsqr_matches_numpy[90-33-8-None]"],
    "lsq-7": ["tests/test_cholqr.py::test_blocked_cholesky_and_inverse_match_numpy[32-16-1]",
              "tests/test_cholqr.py::test_blocked_cholesky_and_inverse_match_numpy[33-8-4]"],
    "lsq-8": ["tests/test_cholqr_mixed.py::test_narrow_widen_and_diagonal_kernels"],
    "machine-read": [f"{M}test_read_kernel_sums_what_numpy_says"],
    "machine-chase": [f"{M}test_pointer_chase_ends_where_the_chain_says"],
    "machine-local": [f"{M}test_local_stride_kernel_reads_what_numpy_says"],
    "machine-loaded": ["tests/test_loaded_latency.py::"
                       "test_the_timed_read_sums_what_numpy_says_and_stamps_zero_off_nvidia"],
    "device": ["tests/test_device_kernels.py::test_copy_touch_and_fma_chains_at_tiny_sizes"],
    "device-clock": ["tests/test_clock.py::"
                     "test_the_portable_build_computes_the_chains_and_writes_zero_stamps"],
    "trace": ["tests/test_trace.py::test_records_ids_of_every_work_item"],
    "multi": ["tests/test_multi.py::test_covariance_split_over_devices[1]"],
    "multi-partials": ["tests/test_multi_sums.py::test_partials_kernel_at_tiny_sizes[5]"],
    # the FP64 tensor-core tiles through their emulated product (the warps' mma in local
    # memory): offsets, edges, chunks, A read the other way round and the upper triangle
    "dmma-emulated": ["tests/test_dmma.py::test_product_matches_numpy[5-40-53-12-m16n8k4]",
                      "tests/test_dmma.py::test_a_given_the_other_way_round[5-40-53-12-one stage, 4 across]",
                      "tests/test_dmma.py::test_upper_gives_the_product_of_a_lower_and_an_upper_triangle"
                      "[53-2-50-12-True-m8n8k4]"],
    # the wgmma kernels as every device builds them (NV_PTX=0: the products from local
    # memory): the probe with the host's layouts, and the Gram's tiles, X' and the 3xTF32
    # split, in shapes whose local memory fits Oclgrind's 32 KiB
    "wgmma-emulated": ["tests/test_probe_wgmma.py::test_the_wgmma_product_emulated_matches_numpy_through_the_hosts_layouts",
                       "tests/test_wgmma_gram.py::test_small_integers_give_numpys_product_exactly[1-2-128-8-4-1-tf32]",
                       "tests/test_wgmma_gram.py::test_small_integers_give_numpys_product_exactly[1-1-64-8-3-1-3xtf32]",
                       "tests/test_wgmma_gram.py::test_small_integers_give_numpys_product_exactly[1-1-64-8-4-1-1-3-3xtf32]",
                       "tests/test_wgmma_gram.py::test_a_shift_centres_each_column_on_the_way_into_x_prime"],
}

# name -> the kernel files (under kernels/) each case builds, as GPUBOOK_KERNEL_LOG
# recorded them on PoCL (2026-11-27). tests/test_check_kernels.py requires a case
# for every kernel file not in NOT_RUN from this map, without running anything; a
# run here fails a case that no longer builds a file this map gives it.
COVARIANCE = ["covariance/centre.cl", "covariance/col_sums.cl", "covariance/finish.cl",
              "tiles/register_tiles.cl"]
WG_SCAN, TILE_IO, TILES = "scan/wg_scan.cl", "scan/tile_io.cl", "tiles/register_tiles.cl"
BUILDS = {
    **{f"reduction-{s[0]}": [f"reduction/{s}.cl"] for s in RED_STEPS},
    "scan-1": ["scan/1_hillis_steele.cl", WG_SCAN],
    "scan-2": ["scan/2_work_efficient.cl", WG_SCAN],
    "scan-3": ["scan/3_reduce_then_scan.cl", TILE_IO, WG_SCAN],
    "scan-4": ["scan/4_single_pass.cl", TILE_IO, WG_SCAN],
    "scan-4-staged": ["scan/4_single_pass.cl", TILE_IO, WG_SCAN],
    "scan-5": ["scan/5_population.cl", WG_SCAN],
    **{f"logreg-{n}": [f"logreg/{n.split('-')[0]}.cl"] for n in LOGREG},
    "transpose": ["transpose/transpose_naive.cl", "transpose/transpose_tiled.cl"],
    "transpose-scores": ["transpose/scores_cols.cl", "transpose/scores_rows.cl",
                         "transpose/scores_rows4.cl", "transpose/transpose_tiled.cl"],
    "transpose-gradients": ["transpose/grad_blocks.cl", "transpose/grad_feature.cl",
                            "transpose/grad_groups.cl", "transpose/reduce_update.cl",
                            "transpose/scores_cols.cl", "transpose/transpose_tiled.cl"],
    "transpose-iterations": ["transpose/fused.cl", "transpose/grad_blocks.cl", "transpose/reduce_update.cl",
                             "transpose/scores_cols.cl", "transpose/transpose_tiled.cl"],
    "transpose-fill": ["transpose/fill.cl", "transpose/transpose_tiled.cl"],
    **{f"covariance-{s}": COVARIANCE + [f"covariance/{s}.cl"] for s in ("naive", "symmetric", "local_tiles")},
    **{f"covariance-{s}": COVARIANCE for s in ("register_tiles", "pairs", "stream")},
    "tiles-float64": [TILES],
    "lsq-1": ["lsq/1_sequential.cl"],
    "lsq-2": ["lsq/2_row_group.cl"],
    "lsq-3": ["lsq/3_blocked.cl"],
    "lsq-4": ["lsq/4_subsets.cl"],
    "lsq-5": ["lsq/3_blocked.cl", "lsq/5_tiled.cl", TILES],
    "lsq-6": ["lsq/6_tsqr.cl"],
    "lsq-7": ["lsq/7_cholesky.cl", TILES],
    "lsq-8": ["lsq/8_mixed.cl"],
    "machine-read": ["machine/read.cl"],
    "machine-chase": ["machine/chase.cl"],
    "machine-local": ["machine/local_stride.cl"],
    "machine-loaded": ["device/nv_clock.cl", "machine/loaded_latency.cl"],
    "device": ["device/copy.cl", "device/empty.cl", "device/fma.cl"],
    "device-clock": ["device/nv_clock.cl", "device/sm_clock.cl"],
    "trace": ["reduction/2_sequential.cl"],
    "multi": COVARIANCE,
    "multi-partials": ["multi/partials.cl"],
    "dmma-emulated": ["tensor/mma.cl", "tensor/dmma_tiles.cl"],
    "wgmma-emulated": ["tensor/wgmma_probe.cl", "tensor/wgmma_gram.cl"],
}

# The subset CI may run: cases that were clean here, about 3-12 s each.
QUICK = ["scan-1", "scan-5", "logreg-naive-1-defines0", "logreg-merged-1-defines2",
         "covariance-symmetric"]

# Kernel files no case runs, and why.
NOT_RUN = {
    "tensor/check.cl": "NVIDIA only: mma.sync through inline PTX (its EMULATE=1 path is a test double)",
    "tensor/peak.cl": "NVIDIA only: mma.sync peak loop through inline PTX",
    "tensor/xtx_tf32.cl": "NVIDIA only: mma.sync, cp.async and red.global through inline PTX",
}

def kernel_files():
    """Every kernel file, relative to kernels/."""
    return sorted(str(p.relative_to(ROOT / "kernels")) for p in (ROOT / "kernels").rglob("*.cl"))


def without_case():
    """The kernel files that no case of BUILDS builds and NOT_RUN does not excuse."""
    built = {f for files in BUILDS.values() for f in files}
    return [f for f in kernel_files() if f not in built and f not in NOT_RUN]


REPORT_START = re.compile(r"^\S.*")

# A pytest plugin each case loads (-p): Oclgrind 21.10's --uninitialized check takes a
# buffer set by clEnqueueFillBuffer with a pattern shorter than the region as
# uninitialised past the first pattern, and keeps it so even after a kernel stores to
# it (a kernel that writes s[g] from every group, then one that copies s to local
# memory: every element but the first is "uninitialized"; a fill whose pattern covers
# the whole region, or clEnqueueWriteBuffer, is clean). Under the checker only, every
# fill becomes a blocking write of the same bytes, so the kernels see the same data
# and the check still sees what a kernel leaves unwritten.
FILL_AS_WRITE = """
import numpy as np
import pyopencl as cl

def _fill_as_write(queue, mem, pattern, offset, size, wait_for=None):
    pat = np.frombuffer(np.asarray(pattern).tobytes(), np.uint8)
    host = np.resize(pat, size)
    return cl.enqueue_copy(queue, mem, host, dst_offset=offset, wait_for=wait_for, is_blocking=True)

cl.enqueue_fill_buffer = _fill_as_write
"""


def reports(log_text):
    """Oclgrind's messages: blocks of lines separated by blank lines."""
    blocks, cur = [], []
    for line in log_text.splitlines():
        if line.strip():
            cur.append(line)
        elif cur:
            blocks.append(cur)
            cur = []
    if cur:
        blocks.append(cur)
    return blocks


def summary_of(block):
    kernel = next((ln.split(":", 1)[1].strip() for ln in block if ln.strip().startswith("Kernel:")), "?")
    where = next((ln.strip() for ln in block if ln.strip().startswith("At line")), "")
    return f"{block[0].strip()} [kernel {kernel}] {where}"


def run_case(name, nodes, uninitialized, timeout, oclgrind):
    with tempfile.TemporaryDirectory(prefix="check_kernels_") as tmp:
        log = Path(tmp) / "oclgrind.log"
        used = Path(tmp) / "kernels.log"
        (Path(tmp) / "check_kernels_fill.py").write_text(FILL_AS_WRITE)
        flags = ["--data-races"] + (["--uninitialized"] if uninitialized else [])
        cmd = [oclgrind, *flags, "--max-errors", "50", "--log", str(log),
               sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "check_kernels_fill",
               "--no-header", *nodes]
        env = {**os.environ, "PYOPENCL_CTX": "0", "GPUBOOK_SCALE": "small",
               "GPUBOOK_KERNEL_LOG": str(used),
               "PYTHONPATH": os.pathsep.join([tmp, str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
        env.pop("GPUBOOK_BUILD_LOG", None)
        start = time.perf_counter()
        try:
            res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
            rc, out = res.returncode, res.stdout + res.stderr
        except subprocess.TimeoutExpired as err:
            rc, out = "timeout", (err.stdout or b"").decode(errors="replace") if isinstance(err.stdout, bytes) else (err.stdout or "")
        seconds = time.perf_counter() - start
        blocks = reports(log.read_text(errors="replace")) if log.exists() else []
        files = sorted(set(used.read_text().split())) if used.exists() else []
    return {"name": name, "rc": rc, "out": out, "seconds": seconds, "reports": blocks,
            "files": files, "uninitialized": uninitialized}


def simulator_fatal(r):
    """The reason of an OCLGRIND FATAL ERROR in the log (the simulator gave up on an
    instruction, and the kernel did not run to its end), or None. Oclgrind 21.10's
    Uninitialized plugin does not know LLVM's `freeze` (which clang emits, e.g. where a
    kernel takes both a quotient and a remainder of the same numbers); support came
    upstream in 2026 (jrprice/Oclgrind pull request 220)."""
    for block in r["reports"]:
        if block[0].startswith("OCLGRIND FATAL ERROR"):
            detail = block[1].strip() if len(block) > 1 else ""
            kernel = next((ln.split(":", 1)[1].strip() for ln in block if ln.strip().startswith("Kernel:")), "?")
            return f"OCLGRIND FATAL ERROR, {detail} in kernel {kernel}"
    return None


def describe(r):
    rc = r["rc"]
    if rc == "timeout":
        state = "TIMEOUT"
    elif isinstance(rc, int) and rc < 0:
        state = f"CRASH ({signal.Signals(-rc).name})"
    elif rc in (139, 134):
        state = f"CRASH (exit {rc})"
    elif r["reports"]:
        state = f"{len(r['reports'])} REPORT(S)"
    elif rc != 0:
        state = f"TESTS FAILED (exit {rc})"
    else:
        state = "clean"
    checks = "races, bounds" + (", uninitialised" if r["uninitialized"] else "")
    return state, checks


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="*", help="case names (default: all)")
    ap.add_argument("--quick", action="store_true", help="only the CI subset")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per case (default 300)")
    args = ap.parse_args(argv)
    if args.list:
        for name, nodes in CASES.items():
            print(name + (" (quick)" if name in QUICK else ""), *nodes, sep="\n    ")
        return 0
    oclgrind = shutil.which("oclgrind")
    if oclgrind is None:
        print("oclgrind is not installed (Debian: apt-get install oclgrind)", file=sys.stderr)
        return 2
    names = args.cases or (QUICK if args.quick else list(CASES))
    unknown = [n for n in names if n not in CASES]
    if unknown:
        print(f"unknown case(s): {unknown}; see --list", file=sys.stderr)
        return 2
    failed, limited, covered, total = [], [], set(), time.perf_counter()
    checked_uninit = set()   # kernel files some case ran with --uninitialized to the end
    for name in names:
        built = set()
        # One test per process: Oclgrind has reported uninitialised values in a second
        # test of the same process that each test alone does not show.
        for node in CASES[name]:
            label = f"{name} {node.split('::')[-1]}"
            r = run_case(label, [node], True, args.timeout, oclgrind)
            state, _ = describe(r)
            fatal = simulator_fatal(r)
            if state.startswith("CRASH") or fatal:
                # A simulator crash under --uninitialized: say so, still check races and bounds.
                why = fatal or f"{state}"
                print(f"{label}: {why} with --uninitialized; again without it", flush=True)
                limited.append(f"{label}: uninitialised values not checked (Oclgrind 21.10, "
                               f"--uninitialized: {why})")
                r = run_case(label, [node], False, args.timeout, oclgrind)
            state, checks = describe(r)
            covered.update(r["files"])
            built.update(r["files"])
            if r["uninitialized"]:
                checked_uninit.update(r["files"])
            print(f"{label}: {state} in {r['seconds']:.1f} s ({checks}) kernels: "
                  f"{' '.join(r['files']) or '-'}", flush=True)
            for block in r["reports"][:5]:
                print("    " + summary_of(block))
            if state != "clean":
                failed.append(label)
                if not r["reports"]:
                    print("    " + "\n    ".join(r["out"].strip().splitlines()[-15:]))
        unbuilt = sorted(set(BUILDS.get(name, [])) - built)
        if unbuilt:
            print(f"{name}: BUILDS gives it {' '.join(unbuilt)}, which it did not build (update BUILDS)")
            failed.append(name)
    print(f"--- {len(names)} case(s) in {time.perf_counter() - total:.0f} s; "
          f"{len(failed)} not clean{': ' + ' '.join(failed) if failed else ''}")
    for line in limited:
        print(f"limited: {line}")
    if not args.cases and not args.quick:
        for f in kernel_files():
            if f in NOT_RUN:
                print(f"not run: kernels/{f}: {NOT_RUN[f]}")
            elif f not in covered:
                print(f"not run: kernels/{f}: no case built it (add one to CASES)")
                failed.append(f)
        unchecked = sorted(covered - checked_uninit)
        if unchecked:
            # by the files each case built: a file that a clean case built but never ran
            # to its end, or not where the simulator stops, is not named (tiles/register_tiles.cl:
            # the clean covariance cases build it; the limited ones stop in it)
            print("uninitialised values not checked in (only limited cases built them): "
                  + " ".join(f"kernels/{f}" for f in unchecked))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
