"""Two findings of an adversarial run, each with its exact input: ``--set root=`` (empty,
as from an unset variable) bound the current folder silently, and ``goat status`` in a git
repository owned by another user exited 2 instead of listing the bindings."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

GOAT = str(Path(sys.executable).parent / "goat")


def _goat(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOAT_", "GIT_"))}
    env["GOAT_HOME"] = str(home)
    return subprocess.run(
        [GOAT, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("value", ["", " "])
def test_an_empty_root_is_refused(tmp_path: Path, value: str) -> None:
    home = tmp_path / "home"
    proc = _goat(home, tmp_path, "bind", "--pen", "x", "markdown", "--set", f"root={value}")
    assert proc.returncode == 2, proc.stderr
    assert "root is empty" in proc.stderr
    assert not (home / "memory.json").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_status_in_another_users_repository_lists_the_bindings(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    home = tmp_path / "home"
    repo = tmp_path / "theirs"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["chown", "-R", "nobody", str(repo)], check=True)
    assert _goat(home, tmp_path, "bind", "--pen", "mine", "markdown").returncode == 0
    proc = _goat(home, repo, "status")
    assert proc.returncode == 0, proc.stderr
    assert "pen:mine" in proc.stdout
    assert "warning: this folder's Pen is not shown" in proc.stderr


def test_recall_and_pages_agree_on_completeness_after_a_skipped_symlink(
    tmp_path: Path,
) -> None:
    """The exact input: a vault holding ``b.md``, a symlink to a note outside the store.
    pages said not complete, recall said complete, for the same store."""
    import json

    vault, outside = tmp_path / "v", tmp_path / "outside"
    vault.mkdir()
    outside.mkdir()
    (vault / "a.md").write_text("# a\n\nheron notes here\n")
    (outside / "b.md").write_text("heron outside\n")
    (vault / "b.md").symlink_to(outside / "b.md")
    home = tmp_path / "home"
    bound = _goat(home, tmp_path, "bind", "--pen", "s", "markdown", "--set", f"root={vault}")
    assert bound.returncode == 0, bound.stderr
    recall = json.loads(_goat(home, tmp_path, "recall", "heron", "--pen", "s", "--json").stdout)
    pages = json.loads(_goat(home, tmp_path, "pages", "--pen", "s", "--json").stdout)
    assert recall["complete"] is pages["complete"] is False
    assert any("b.md: skipped" in d for d in recall["degraded"])
