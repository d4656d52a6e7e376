"""No message, manifest or doc advises installing a package this project has not published.

GOAT's distributions (goat-core and the in-tree plugins) are installed from a checkout. An
install command that names one of them as an index package fails today, and the name is
free for anyone to take. The scan reads every text file of the tree (code, docs,
manifests, CI) and every install command in it: ``pip install``, ``pipx install``,
``pipx inject VENV ...``, ``uv pip install``, ``uv add``.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The distributions this repository holds, none of them on a package index.
UNPUBLISHED = {
    "goat-core",
    "goat-markdown",
    "goat-wiki",
    "goat-hindsight",
    "goat-embed",
    "goat-memory",
    "goat-redis",
    "goat-sqlite",
}
_COMMAND = re.compile(
    r"\b(?:uv\s+pip\s+install|uv\s+add|pipx\s+install|pipx\s+inject|pip3?\s+install)\b"
    r"(?P<args>[^\n`\"]*)"
)
_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)")
_SUFFIXES = {".py", ".md", ".json", ".toml", ".ini", ".sh", ".txt", ".cfg", ".yaml", ".yml"}


def advised_names(text: str) -> list[str]:
    """The distribution names the install commands in ``text`` take from an index."""
    names: list[str] = []
    for match in _COMMAND.finditer(text):
        words = match["args"].replace("'", " ").split()
        if match.group(0).startswith("pipx inject"):
            # pipx inject [OPTIONS] VENV PACKAGE...: VENV is a local venv's name
            venv = next((i for i, w in enumerate(words) if not w.startswith("-")), None)
            if venv is not None:
                del words[venv]
        for word in words:
            if word in {"&&", "||", ";", "|"}:
                break  # the next command
            if word.startswith(("-", ".", "/", "~", "$", "{", "<", "(")) or "://" in word:
                continue  # an option, a path, a URL or a placeholder
            if word.endswith((".whl", ".tar.gz")):
                continue
            name = _NAME.match(word)
            if name:
                names.append(name.group(1).lower().replace("_", "-"))
    return names


def _files() -> list[Path]:
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    out = [ROOT / p for p in listed if Path(p).suffix in _SUFFIXES or p == ".ci/run"]
    return [p for p in out if p.is_file() and p.name != Path(__file__).name]


def test_no_install_advice_names_an_unpublished_package() -> None:
    found = []
    for path in _files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for name in advised_names(text):
            if name in UNPUBLISHED:
                found.append(f"{path.relative_to(ROOT)}: {name}")
    assert found == [], (
        "install advice names a package GOAT has not published; name the path in this "
        f"repository instead (pip install ./plugins/markdown): {found}"
    )


@pytest.mark.parametrize(
    "text,names",
    [
        ("pip install 'goat-core[serve]' goat-markdown", ["goat-core", "goat-markdown"]),
        ("pip install ./plugins/markdown", []),
        ("pipx inject --editable goat-core ./plugins/markdown", []),
        ("uv pip install goat_wiki==0.1", ["goat-wiki"]),
        ("pip install -e '.[serve]' && goat serve", []),
        ("pip install torch==2.13.0", ["torch"]),
    ],
)
def test_the_scan_reads_install_commands(text: str, names: list[str]) -> None:
    assert advised_names(text) == names
