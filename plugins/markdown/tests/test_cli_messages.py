"""What the ``goat`` CLI says, at its runner: each candidate of an ambiguous reference once,
the precedence of ``show`` (docs/design.md, get_page), counts in the singular, and
``--set embedder=`` clearing the embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from goat_core.cli import cli


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def _goat(home: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [*args, "--home", str(home)])
    return result.exit_code, result.output


def _bind(home: Path, vault: Path, *extra: str) -> None:
    code, out = _goat(home, "bind", "--pen", "d", "markdown", "--set", f"root={vault}", *extra)
    assert code == 0, out


def test_an_ambiguous_reference_names_each_candidate_once(home: Path, tmp_path: Path) -> None:
    vault = tmp_path / "v"
    for folder in ("a", "b"):
        (vault / folder).mkdir(parents=True)
        (vault / folder / "Deploy.md").write_text(f"{folder}\n", encoding="utf-8")
    _bind(home, vault)
    code, out = _goat(home, "show", "Deploy", "--pen", "d")
    assert code == 3, out
    assert out.count("a/Deploy.md") == 1 and out.count("b/Deploy.md") == 1, out


def test_show_takes_the_root_file_name_before_titles(home: Path, tmp_path: Path) -> None:
    """The exact input ``goat show "Deploy notes"``: ``Deploy notes.md`` at the root and
    three other pages titled "Deploy notes". The path plus ``.md`` comes before titles (as
    Obsidian resolves ``[[Deploy notes]]`` by file name); without the root file the three
    titles are ambiguous."""
    vault = tmp_path / "v"
    (vault / "old").mkdir(parents=True)
    (vault / "Deploy notes.md").write_text("the root note\n", encoding="utf-8")
    for name in ("one.md", "two.md", "old/three.md"):
        (vault / name).write_text(f"---\ntitle: Deploy notes\n---\n{name}\n", encoding="utf-8")
    _bind(home, vault)
    code, out = _goat(home, "show", "Deploy notes", "--pen", "d")
    assert (code, out) == (0, "the root note\n")
    (vault / "Deploy notes.md").unlink()
    code, out = _goat(home, "show", "Deploy notes", "--pen", "d")
    assert code == 3 and "3 pages match 'Deploy notes'" in out, out


def test_map_counts_read_as_english(home: Path, tmp_path: Path) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "Only.md").write_text("[[Gone]]\n", encoding="utf-8")
    _bind(home, vault)
    code, out = _goat(home, "map", "--pen", "d")
    assert code == 0, out
    assert out.splitlines()[-1] == "1 page, 1 link: 1 to 1 missing note, 0 to 0 missing attachments"


def test_an_empty_embedder_setting_means_none(home: Path, tmp_path: Path) -> None:
    """The exact input ``--set embedder=``: a user clearing the embedder. Accepted as no
    embedder (keyword recall), never a regex-pattern message."""
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "Note.md").write_text("the harbour\n", encoding="utf-8")
    _bind(home, vault, "--set", "embedder=")
    config = json.loads((home / "memory.json").read_text(encoding="utf-8"))
    assert config["bindings"]["pen-d"]["settings"] == {"root": str(vault)}
    code, out = _goat(home, "recall", "harbour", "--pen", "d")
    assert code == 0 and "Note.md" in out, out
