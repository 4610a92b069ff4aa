"""The GitHub workflows: actionlint finds nothing in them, the site is published
with `make book` (its buttons pointed at the repository that builds it) and pull
requests run `make test`."""
import pathlib
import shutil
import subprocess
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
SET_REPOSITORY = ROOT / "tools" / "set_repository.py"


def actionlint(*files):
    """Run the actionlint that requirements.txt installs into the venv. ShellCheck
    and pyflakes are left out so that every machine reports the same."""
    exe = pathlib.Path(sys.executable).with_name("actionlint")
    exe = str(exe) if exe.exists() else shutil.which("actionlint")
    assert exe, "no actionlint: it comes with requirements.txt (make venv)"
    return subprocess.run([exe, "-no-color", "-shellcheck=", "-pyflakes=", *map(str, files)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def workflow(name):
    path = WORKFLOWS / name
    assert path.exists(), f"missing {path.relative_to(ROOT)}"
    return yaml.safe_load(path.read_text())


def triggers(wf):
    return wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` key as True


def runs(wf):
    return [step.get("run", "") for job in wf["jobs"].values() for step in job["steps"]]


def uses(wf):
    return [step.get("uses", "").split("@")[0] for job in wf["jobs"].values() for step in job["steps"]]


def test_actionlint_finds_nothing():
    files = sorted(WORKFLOWS.glob("*.yml")) + sorted(WORKFLOWS.glob("*.yaml"))
    assert files, "no workflows found"
    result = actionlint(*files)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_reports_a_broken_workflow(tmp_path):
    text = (WORKFLOWS / "test.yml").read_text()
    broken = tmp_path / "broken.yml"
    broken.write_text(text.replace("runs-on:", "run-on:"))
    assert broken.read_text() != text
    result = actionlint(broken)
    assert result.returncode != 0
    assert "runs-on" in result.stdout


def test_pages_workflow_builds_the_book_and_deploys_it():
    wf = workflow("pages.yml")
    assert triggers(wf)["push"]["branches"] == ["main"]
    assert "make book" in runs(wf)
    assert {"actions/upload-pages-artifact", "actions/deploy-pages"} <= set(uses(wf))
    assert wf["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}


def test_test_workflow_runs_make_test_on_pull_requests():
    wf = workflow("test.yml")
    assert "pull_request" in triggers(wf)
    assert "make test" in runs(wf)


def test_pages_workflow_points_the_buttons_at_its_repository_before_building():
    steps = [step for job in workflow("pages.yml")["jobs"].values() for step in job["steps"]]
    runs = [step.get("run", "") for step in steps]
    setting = next(i for i, run in enumerate(runs) if "tools/set_repository.py" in run)
    assert setting < runs.index("make book")
    env = steps[setting].get("env", {})
    assert "${{ github.server_url }}/${{ github.repository }}" in env.values()


def set_repository(config, *args):
    """tools/set_repository.py run on a copy of _config.yml (the script edits the
    _config.yml next to it, so the copy gets its own tools/ folder)."""
    (config.parent / "tools").mkdir(exist_ok=True)
    script = config.parent / "tools" / SET_REPOSITORY.name
    script.write_text(SET_REPOSITORY.read_text())
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=30)


def test_set_repository_writes_the_url_and_nothing_else(tmp_path):
    config = tmp_path / "_config.yml"
    original = (ROOT / "_config.yml").read_text()
    config.write_text(original)
    result = set_repository(config, "https://github.com/someone/gpu-book.git")
    assert result.returncode == 0, result.stderr
    text = config.read_text()
    assert yaml.safe_load(text)["repository"] == {**yaml.safe_load(original)["repository"],
                                                  "url": "https://github.com/someone/gpu-book"}
    changed = [(a, b) for a, b in zip(original.splitlines(), text.splitlines()) if a != b]
    assert len(changed) == 1 and len(original.splitlines()) == len(text.splitlines())


def test_set_repository_refuses_a_bad_address_and_a_config_without_the_block(tmp_path):
    config = tmp_path / "_config.yml"
    original = (ROOT / "_config.yml").read_text()
    config.write_text(original)
    result = set_repository(config, "github.com/someone")
    assert result.returncode != 0 and "not a repository address: 'github.com/someone'" in result.stderr
    assert config.read_text() == original
    config.write_text("title: a book\n")
    result = set_repository(config, "https://github.com/someone/gpu-book")
    assert result.returncode != 0 and "no `repository:` block" in result.stderr
