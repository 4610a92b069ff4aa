"""`make lab`: JupyterLab on the book's notebooks, with the Python that runs this
script (the book's .venv under make), on localhost, without opening a browser.

The port is PORT (8888 by default). When it is taken, this script says so and
starts on the next free port after it; JupyterLab then prints the link to open.
Arguments after `--` go to JupyterLab unchanged.
"""
import argparse
import errno
import os
import socket
import sys
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
TRIES = 50  # ports looked at after the requested one, as Jupyter's own port_retries


def port_is_free(port):
    """True when nothing listens on localhost:port (IPv4 and, where the host has it, IPv6).
    SO_REUSEADDR as the server sets it, so a port left in TIME_WAIT counts as free."""
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            sock = socket.socket(family, socket.SOCK_STREAM)
        except OSError:
            continue  # no IPv6 on this host
        with sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
            except OSError as err:
                if err.errno == errno.EADDRINUSE:
                    return False
                if family == socket.AF_INET:
                    raise SystemExit(f"make lab: cannot serve on port {port}: {err.strerror}; "
                                     "choose another with LAB_PORT=<port>") from None
                # ::1 not configured on this host: IPv4 alone decides
    return True


def free_port(port):
    """The requested port when free, else the first free one of the next TRIES ports."""
    for candidate in range(port, min(port + TRIES, 65535) + 1):
        if port_is_free(candidate):
            return candidate
    raise SystemExit(f"make lab: port {port} is taken, and so are ports {port + 1} to "
                     f"{min(port + TRIES, 65535)}; choose another with LAB_PORT=<port>")


def port_number(text):
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 1 to 65535, not {port}")
    return port


def lab_command(port, extra=()):
    """The command line that starts JupyterLab on the repository, opened at notebooks/."""
    return [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=localhost", f"--port={port}",
            "--ServerApp.port_retries=0", f"--ServerApp.root_dir={ROOT}",
            "--LabApp.default_url=/lab/tree/notebooks",
            # Containers often run as root, where Jupyter refuses to start without this;
            # the server listens on localhost only and asks for its token either way.
            *(["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
            *extra]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=port_number, default=8888, help="port to serve on (default 8888)")
    args, extra = parser.parse_known_args(argv)
    if extra[:1] == ["--"]:
        extra = extra[1:]
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        raise SystemExit(f"make lab: JupyterLab is not installed in {sys.executable}; `make lab` "
                         "installs it into .venv with the book's pins, or run `pip install jupyterlab` "
                         "in your own environment") from None
    port = free_port(args.port)
    if port != args.port:
        print(f"make lab: port {args.port} is taken (another Jupyter server? `jupyter server list` "
              f"names them); starting on port {port} instead", flush=True)
    # The kernel runs with this Python: prefer this environment's kernel spec to a user-wide one.
    os.environ["JUPYTER_PREFER_ENV_PATH"] = "1"
    command = lab_command(port, extra)
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
