"""`make lab` (tools/lab.py): JupyterLab starts with the book's Python, answers on
localhost, lists the notebooks through its contents API and stops; a taken port
is named, and the server moves to a free one."""
import json
import pathlib
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
LAB = ROOT / "tools" / "lab.py"
NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))


def unused_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def lab_env(tmp_path, monkeypatch):
    """Jupyter's configuration, runtime and settings folders in a temporary folder,
    and a token of this test's own."""
    token = secrets.token_hex(16)
    env = {"JUPYTER_CONFIG_DIR": tmp_path / "config", "JUPYTER_DATA_DIR": tmp_path / "data",
           "JUPYTER_RUNTIME_DIR": tmp_path / "runtime", "JUPYTERLAB_SETTINGS_DIR": tmp_path / "settings",
           "JUPYTERLAB_WORKSPACES_DIR": tmp_path / "workspaces", "JUPYTER_TOKEN": token}
    for key, value in env.items():
        monkeypatch.setenv(key, str(value))
    return token


def get(port, path, token=None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if token:
        request.add_header("Authorization", f"token {token}")
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.status, json.loads(response.read())


class Lab:
    """tools/lab.py run as `make lab` runs it, its output kept in a file."""

    def __init__(self, port, log):
        self.log = log
        self.proc = subprocess.Popen([sys.executable, str(LAB), "--port", str(port)], cwd=ROOT,
                                     stdout=log.open("w"), stderr=subprocess.STDOUT)

    def output(self):
        return self.log.read_text()

    def wait_for(self, port, token, timeout=60):
        """The contents of notebooks/ once the server answers on port."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            assert self.proc.poll() is None, f"the server stopped:\n{self.output()}"
            try:
                return get(port, "/api/contents/notebooks", token)
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        raise AssertionError(f"no answer on port {port} within {timeout} s:\n{self.output()}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def check_lists_the_notebooks(lab, port, token):
    status, listing = lab.wait_for(port, token)
    assert status == 200 and listing["type"] == "directory"
    names = sorted(c["name"] for c in listing["content"] if c["type"] == "notebook")
    assert names == NOTEBOOKS
    # The server asks for the token: without it the same request is refused.
    with pytest.raises(urllib.error.HTTPError) as refused:
        get(port, "/api/contents/notebooks")
    assert refused.value.code == 403


def test_lab_serves_the_notebooks_and_stops(tmp_path, lab_env):
    assert NOTEBOOKS, "no notebooks found"
    port = unused_port()
    lab = Lab(port, tmp_path / "lab.log")
    try:
        check_lists_the_notebooks(lab, port, lab_env)
        # The kernel it offers is this Python's, the book's venv.
        _, specs = get(port, "/api/kernelspecs", lab_env)
        assert specs["default"] in specs["kernelspecs"]
    finally:
        lab.stop()
    assert lab.proc.returncode is not None
    with pytest.raises(ConnectionRefusedError):  # nothing listens there any more
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_a_taken_port_is_named_and_another_is_used(tmp_path, lab_env):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        lab = Lab(port, tmp_path / "lab.log")
        try:
            end = time.monotonic() + 30
            while not (said := re.search(rf"port {port} is taken.*starting on port (\d+)", lab.output())):
                assert lab.proc.poll() is None and time.monotonic() < end, lab.output()
                time.sleep(0.1)
            moved = int(said.group(1))
            assert moved != port
            check_lists_the_notebooks(lab, moved, lab_env)
        finally:
            lab.stop()


@pytest.mark.parametrize("port, message", [("http", "not a port number: 'http'"),
                                           ("70000", "a port is 1 to 65535, not 70000")])
def test_a_bad_port_is_refused_with_a_message(port, message):
    result = subprocess.run([sys.executable, str(LAB), "--port", port], capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 2
    assert message in result.stderr
