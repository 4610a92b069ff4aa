"""tools/check_kernels.py: every kernel file has a case (or a reason in NOT_RUN), read
from its map of the files each case builds, without running Oclgrind; and every case
names tests that exist."""
import importlib.util
import re

from gpubook.paths import ROOT

_spec = importlib.util.spec_from_file_location("check_kernels", ROOT / "tools" / "check_kernels.py")
ck = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ck)


def test_every_kernel_file_has_a_case():
    assert ck.without_case() == [], "kernel files with no case in tools/check_kernels.py (CASES, BUILDS)"
    assert set(ck.BUILDS) == set(ck.CASES)
    files = set(ck.kernel_files())
    assert {f for built in ck.BUILDS.values() for f in built} <= files
    assert set(ck.NOT_RUN) <= files


def test_every_case_names_tests_that_exist():
    for name, nodes in ck.CASES.items():
        for node in nodes:
            path, test = node.split("::")
            function = re.sub(r"\[.*\]$", "", test)
            assert f"def {function}(" in (ROOT / path).read_text(), (name, node)
