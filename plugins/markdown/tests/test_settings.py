"""Settings validation of the markdown provider, through the model and through `goat bind`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from goat_markdown.plugin import MarkdownSettings


def test_relative_root_is_made_absolute_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "vault").mkdir()
    monkeypatch.chdir(tmp_path)
    settings = MarkdownSettings.model_validate({"root": "vault"})
    assert settings.root == tmp_path / "vault"
    # Re-validating the stored absolute path from another directory keeps the same folder.
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    again = MarkdownSettings.model_validate(json.loads(settings.model_dump_json()))
    assert again.root == tmp_path / "vault"


def test_tilde_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "notes").mkdir()
    assert MarkdownSettings.model_validate({"root": "~/notes"}).root == tmp_path / "notes"


@pytest.mark.parametrize(
    ("root", "rule"),
    [
        ("/", "root-is-filesystem-root"),
        ("/root", "root-is-home"),
        ("/nonexistent-goat-store", "root-not-directory"),
    ],
)
def test_bad_roots_are_refused_with_the_rule(root: str, rule: str) -> None:
    with pytest.raises(ValidationError) as info:
        MarkdownSettings.model_validate({"root": root})
    assert rule in str(info.value)


def test_home_directory_itself_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ValidationError, match="root-is-home"):
        MarkdownSettings.model_validate({"root": str(tmp_path)})


def _goat(*args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOAT_")}
    env["GOAT_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "goat_core.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("root", ["/", "/nonexistent-goat-store", "/root"])
def test_bind_refuses_bad_root_and_saves_nothing(tmp_path: Path, root: str) -> None:
    home = tmp_path / "home"
    proc = _goat(
        "bind", "--pen", "docs", "markdown", "--set", f"root={root}", home=home, cwd=tmp_path
    )
    assert proc.returncode == 2, proc.stderr
    assert "root" in proc.stderr
    assert not (home / "memory.json").exists()


def test_bind_relative_root_stores_absolute_path(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "v1").mkdir()
    proc = _goat("bind", "--pen", "rel", "markdown", "--set", "root=v1", home=home, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    saved = json.loads((home / "memory.json").read_text())
    roots = [b["settings"]["root"] for b in saved["bindings"].values()]
    assert roots == [str(tmp_path / "v1")]
    (tmp_path / "sub").mkdir()
    proc = _goat(
        "remember", "from a subfolder", "--pen", "rel", "--json", home=home, cwd=tmp_path / "sub"
    )
    assert proc.returncode == 0, proc.stderr
    assert list((tmp_path / "v1").glob("*.md"))
    assert not (tmp_path / "sub" / "v1").exists()
