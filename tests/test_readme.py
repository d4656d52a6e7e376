"""CONTRIBUTING.md's table of test environments names every tox environment, and says which
one is slow. (The README links to it; the table moved there from the README.)"""

from __future__ import annotations

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_contributing_names_every_tox_environment() -> None:
    tox = configparser.ConfigParser()
    tox.read(ROOT / "tox.ini", encoding="utf-8")
    envs = [
        line.strip()
        for line in tox["tox"]["env_list"].splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert len(envs) >= 9
    assert [e for e in envs if f"`{e}`" not in contributing] == []
    assert "`hindsight-live`" in contributing and "takes minutes" in contributing


def test_the_readme_links_contributing() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "CONTRIBUTING.md" in readme
