"""Every kernel, under every set of build options the book uses, is valid OpenCL C.

The option sets come from tests/data/kernel_builds.json (recorded by
`make kernel-builds`, see tools/kernel_builds.py). Each is compiled by clang's OpenCL
front end for SPIR (a conformant compiler that knows no vendor's extensions) with
-Wpedantic -Werror: a zero-length array, a GNU extension or an undeclared
identifier fails. OpenCL C 1.2, or 3.0 for a source that tests for an optional
feature (__opencl_c_...) before using it.
"""
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import kernel_builds  # noqa: E402

from gpubook.kernels import source  # noqa: E402

CLANG = shutil.which("clang")

# Inline PTX compiles on NVIDIA alone; these files are compiled with the macro that
# takes their portable path (the one every other device builds).
PORTABLE = {
    "logreg/fast.cl": ("SHUFFLE", "0", "SHUFFLE=1 exchanges registers with shfl.sync (inline PTX)"),
    "scan/wg_scan.cl": ("WARP_SHUFFLE", "0", "WARP_SHUFFLE=1 scans a warp with shfl.sync.up (inline PTX)"),
    "tensor/mma.cl": ("EMULATE", "1", "EMULATE=0 issues mma.sync, cp.async and red.global (inline PTX)"),
    "scan/4_single_pass.cl": ("WARP_LOOK", "0", "WARP_LOOK=1 looks back with vote.sync and shfl.sync (inline PTX)"),
    "tensor/wgmma_probe.cl": ("NV_PTX", "0", "NV_PTX=1 puts in the markers that gpubook.ptx_probe makes wgmma"),
    "tensor/wgmma_gram.cl": ("NV_PTX", "0", "NV_PTX=1 puts in the markers that gpubook.wgmma makes wgmma"),
}

# Build options a strict front end takes as they are; others (-cl-nv-*) are the driver's.
KEPT_FLAGS = {"-cl-fast-relaxed-math", "-cl-mad-enable", "-cl-finite-math-only",
              "-cl-no-signed-zeros", "-cl-unsafe-math-optimizations",
              "-cl-denorms-are-zero", "-cl-single-precision-constant"}


def strict_options(files, options):
    """The options clang gets for one recorded build, the portable macros forced."""
    opts = [o for o in options if o.startswith(("-D", "-I")) or o in KEPT_FLAGS]
    for f in files:
        if f in PORTABLE:
            macro, value, _ = PORTABLE[f]
            opts = [o for o in opts if not (o == f"-D{macro}" or o.startswith(f"-D{macro}="))]
            opts.append(f"-D{macro}={value}")
    return opts


def jobs():
    """Unique (files, preamble, options) to compile, from the manifest."""
    seen = {}
    for b in kernel_builds.load():
        key = (tuple(b["files"]), b["preamble"], tuple(strict_options(b["files"], b["options"])))
        seen.setdefault(key, None)
    return list(seen)


def job_id(job):
    files, preamble, opts = job
    digest = hashlib.sha256(" ".join(opts).encode()).hexdigest()[:8]
    return "+".join(files) + (f"[{preamble}]" if preamble else "") + f"-{digest}"


def test_manifest_names_every_kernel():
    gone = kernel_builds.missing(kernel_builds.load())
    assert not gone, (f"kernel files with no recorded build: {gone}; "
                      "run `make kernel-builds` to record them")


def test_manifest_files_exist():
    files = {f for b in kernel_builds.load() for f in b["files"]}
    absent = sorted(f for f in files if not (ROOT / "kernels" / f).exists())
    assert not absent, f"the manifest names kernel files that are gone: {absent}; run `make kernel-builds`"


def test_portable_macros_are_real():
    # A renamed switch would silently leave the PTX path in (or the macro unused).
    for f, (macro, _, _) in PORTABLE.items():
        assert macro in (ROOT / "kernels" / f).read_text(), f"{macro} not in kernels/{f}"


@pytest.mark.skipif(CLANG is None, reason="clang is not installed (Debian: apt-get install clang); "
                                          "the strict compile needs its OpenCL front end")
@pytest.mark.parametrize("job", jobs(), ids=job_id)
def test_strict_compile(job, tmp_path):
    files, preamble, opts = job
    text = kernel_builds.preamble_text(preamble) + source(files)
    std = "CL3.0" if "__opencl_c_" in text else "CL1.2"
    cl = tmp_path / "kernel.cl"
    cl.write_text(text)
    cmd = [CLANG, "-x", "cl", f"-cl-std={std}", "-target", "spir64",
           "-Xclang", "-finclude-default-header", "-fsyntax-only",
           "-Wpedantic", "-Werror", *opts, str(cl)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, (
        f"kernels/{' + kernels/'.join(files)} with {' '.join(opts) or '(no options)'}"
        f"{' and the ' + preamble + ' preamble' if preamble else ''} is not strict OpenCL C {std[2:]}:\n"
        + res.stderr)
