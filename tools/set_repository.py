"""Write the repository's address into _config.yml (`repository: url:`), for the
site's repository and issues buttons.

The publishing workflow runs it before `make book` with the address of the GitHub
repository that builds the site, so a fork's site links to the fork:

    python3 tools/set_repository.py https://github.com/<owner>/<repo>

Only the `url:` line under `repository:` changes; comments and the rest of the
file stay as they are. Needs nothing but Python (it runs before the venv exists).
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


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(f"usage: python3 {sys.argv[0]} https://github.com/<owner>/<repo>")
    set_repository(sys.argv[1])
    print(f"{CONFIG.name}: repository url set to {sys.argv[1].rstrip('/').removesuffix('.git')}")
