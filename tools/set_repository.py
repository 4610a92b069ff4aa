"""Write the repository's address into _config.yml (`repository: url:`), for the
site's repository and issues buttons.

The publishing workflow runs it before `make book` with the address of the GitHub
repository that builds the site, so a fork's site links to the fork:

    python3 tools/set_repository.py https://github.com/<owner>/<repo>

Only the `url:` line under `repository:` changes; comments and the rest of the
file stay as they are. Needs nothing but Python (it runs before the venv exists).

`make book` builds with `--site-config _build/site_config.yml`: the same file, with
the clone's GitHub remote where _config.yml still holds the placeholder, or the
buttons off where there is none, so a local build has no dead button.
"""
import pathlib
import re
import sys

CONFIG = pathlib.Path(__file__).resolve().parent.parent / "_config.yml"
ADDRESS = re.compile(r"https://[A-Za-z0-9.-]+(:[0-9]+)?/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


def set_repository(url, config=CONFIG):
    """Replace the url of the config's `repository:` block; return the new text."""
    url = url.rstrip("/")
    if url.endswith(".git"):
        url = url[:-4]
    if not ADDRESS.fullmatch(url):
        raise SystemExit(f"set_repository: not a repository address: {url!r} "
                         "(expected https://<host>/<owner>/<repo>)")
    text = config.read_text()
    block = re.search(r"^repository:[ \t]*\n((?:[ \t]+.*\n|[ \t]*\n)*)", text, flags=re.M)
    if block is None:
        raise SystemExit(f"set_repository: {config.name} has no `repository:` block")
    body, count = re.subn(r"^([ \t]+url[ \t]*:[ \t]*).*$", lambda m: m.group(1) + url,
                          block.group(1), count=1, flags=re.M)
    if count == 0:
        raise SystemExit(f"set_repository: the `repository:` block of {config.name} has no `url:` line")
    text = text[:block.start(1)] + body + text[block.end(1):]
    config.write_text(text)
    return text


PLACEHOLDER = "https://github.com/OWNER/REPOSITORY"


def github_address(remote):
    """https://github.com/<owner>/<repo> for a GitHub remote (https or ssh), else None."""
    remote = (remote or "").strip()
    found = re.fullmatch(r"(?:https://github\.com/|git@github\.com:|ssh://git@github\.com/)"
                         r"([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?", remote)
    return f"https://github.com/{found.group(1)}/{found.group(2)}" if found else None


def origin():
    """The clone's `origin` remote, or '' where git or the remote is missing."""
    import subprocess

    try:
        out = subprocess.run(["git", "remote", "get-url", "origin"], cwd=CONFIG.parent,
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def site_config(out, remote=None, config=CONFIG):
    """Write the configuration `make book` builds with to `out`: _config.yml as it
    is when its url is set (the publishing workflow's build); else with the url of
    the clone's GitHub remote; else with the repository and issues buttons off, so
    a local build has no button that leads nowhere. Returns what it did, in words."""
    import shutil

    out = pathlib.Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(config, out)
    text = out.read_text()
    if PLACEHOLDER not in text:
        return "repository buttons link to _config.yml's url"
    url = github_address(origin() if remote is None else remote)
    if url:
        set_repository(url, out)
        return f"repository buttons link to this clone's GitHub remote, {url}"
    for key in ("use_issues_button", "use_repository_button"):
        text = re.sub(rf"^([ \t]+{key}[ \t]*:[ \t]*).*$", lambda m: m.group(1) + "false", text, flags=re.M)
    out.write_text(text)
    return "no GitHub remote and no url in _config.yml: the repository buttons are left out"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--site-config":
        print(f"make book: {site_config(sys.argv[2])}")
        sys.exit(0)
    if len(sys.argv) != 2:
        raise SystemExit(f"usage: python3 {sys.argv[0]} https://github.com/<owner>/<repo>\n"
                         f"       python3 {sys.argv[0]} --site-config OUT")
    set_repository(sys.argv[1])
    print(f"{CONFIG.name}: repository url set to {sys.argv[1].rstrip('/').removesuffix('.git')}")
