"""Export into a folder on another filesystem than its parent (docs/design.md, Copy, export
and import). The exact input: ``goat export /mnt/point --pen a`` into an empty mount point
exited 1 "unexpected OSError: [Errno 16] Device or resource busy" (the staged bundle was
renamed onto the mount point), and with ``--force`` into a non-empty one exited 1 "[Errno
18] Invalid cross-device link", leaving an empty ``Bases/`` folder. Now the bundle is staged
inside DIR and moved into place (copied where a move is refused), and a fault leaves DIR as
it was."""

from __future__ import annotations

import errno
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from goat_core.cli import cli
from goat_core.contract import Scope
from goat_core.host import GoatHome, SyncMemoryHost
from goat_core.testing.fixtures import small_tmpfs

NOTES = {"a.md": "note a\n", "Bases/b.md": "note b\n", "Bases/deep/c.md": "note c\n"}


def _goat(home: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [*args, "--home", str(home)])
    return result.exit_code, result.output


def _tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): (
            "/" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
        )
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    src = tmp_path / "SRC"
    for rel, text in NOTES.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text, encoding="utf-8")
    with SyncMemoryHost(home=GoatHome.at(tmp_path / "home")) as host:
        host.bind(Scope.pen("a"), "markdown", {"root": str(src)})
    return tmp_path / "home"


def _exported(target: Path, *, old: bool) -> None:
    manifest = json.loads((target / "goat-export.json").read_text(encoding="utf-8"))
    assert sorted(p["path"] for p in manifest["pages"]) == sorted(NOTES)
    for rel, text in NOTES.items():
        assert (target / rel).read_text(encoding="utf-8").endswith(text)
    names = {p.name for p in target.iterdir()}
    assert names == {"a.md", "Bases", "goat-export.json", *(["old.md"] if old else [])}


def _refuse_moves(monkeypatch: pytest.MonkeyPatch, code: int, fail_copy: int = 0) -> None:
    """``os.replace`` out of a staging folder fails with ``code`` (another filesystem or a
    busy mount point); with ``fail_copy``, that copy fails with ENOSPC."""
    import shutil

    real_replace: Callable[..., None] = os.replace
    real_copy: Callable[..., object] = shutil.copyfile
    copies: list[str] = []

    def replace(src: object, dst: object, **kw: object) -> None:
        if ".goat-export." in str(src) and ".goat-export." not in str(dst):
            raise OSError(code, os.strerror(code), str(src), None, str(dst))
        real_replace(src, dst, **kw)

    def copyfile(src: object, dst: object, **kw: object) -> object:
        copies.append(str(dst))
        if len(copies) == fail_copy:
            raise OSError(errno.ENOSPC, "No space left on device", str(dst))
        return real_copy(src, dst, **kw)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(shutil, "copyfile", copyfile)


@pytest.mark.parametrize("code", [errno.EXDEV, errno.EBUSY])
@pytest.mark.parametrize("force", [False, True])
def test_export_copies_where_a_move_is_refused(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, code: int, force: bool
) -> None:
    target = tmp_path / "point"
    target.mkdir()
    if force:
        (target / "old.md").write_text("kept\n", encoding="utf-8")
    _refuse_moves(monkeypatch, code)
    args = ["export", str(target), "--pen", "a", *(["--force"] if force else [])]
    exit_code, out = _goat(home, *args)
    assert exit_code == 0, out
    _exported(target, old=force)


@pytest.mark.parametrize("force", [False, True])
def test_a_fault_while_moving_in_leaves_the_folder_as_it_was(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, force: bool
) -> None:
    """The second file copied in (``Bases/b.md``, after ``a.md``) hits a full disk: exit 6,
    and DIR holds what it held before: no ``a.md``, no ``Bases/``, no staging folder."""
    target = tmp_path / "point"
    target.mkdir()
    if force:
        (target / "old.md").write_text("kept\n", encoding="utf-8")
    before = _tree(target)
    _refuse_moves(monkeypatch, errno.EXDEV, fail_copy=2)
    args = ["export", str(target), "--pen", "a", *(["--force"] if force else [])]
    exit_code, out = _goat(home, *args)
    assert exit_code == 6, out
    assert "cannot write the export at" in out and "the disk is full" in out, out
    assert "unexpected" not in out
    assert _tree(target) == before


@pytest.mark.parametrize("force", [False, True])
def test_export_into_a_real_tmpfs_mount_point(tmp_path: Path, home: Path, force: bool) -> None:
    with small_tmpfs(tmp_path / "point", "4m") as target:
        if force:
            (target / "old.md").write_text("kept\n", encoding="utf-8")
        args = ["export", str(target), "--pen", "a", *(["--force"] if force else [])]
        exit_code, out = _goat(home, *args)
        assert exit_code == 0, out
        _exported(target, old=force)
