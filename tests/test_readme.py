"""The README's "Run the tests" names every tox environment, and says which one is slow."""

from __future__ import annotations

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_names_every_tox_environment() -> None:
    tox = configparser.ConfigParser()
    tox.read(ROOT / "tox.ini", encoding="utf-8")
    envs = [
        line.strip()
        for line in tox["tox"]["env_list"].splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(envs) >= 9
    assert [e for e in envs if f"`{e}`" not in readme] == []
    assert "`hindsight-live`" in readme and "takes minutes" in readme
