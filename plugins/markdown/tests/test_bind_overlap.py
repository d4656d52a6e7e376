"""Scopes are exclusive down to their folders (docs/design.md, Bindings and providers): a
store root may not be, hold or sit inside the GOAT home or another scope's store root. Each
case through ``goat bind`` (exit 2, the other scope or the home named, memory.json unchanged)
and through the host API (``PathError``, rule ``store-overlap``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from goat_core.cli import cli
from goat_core.contract import Scope
from goat_core.errors import PathError
from goat_core.host import GoatHome, SyncMemoryHost


def _goat(home: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [*args, "--home", str(home)])
    return result.exit_code, result.output


def _folder(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def _setup(home: Path, tmp_path: Path) -> dict[str, Path]:
    """Global bound to ``g``, Pen ``a`` to ``a``; the cases refer to these folders."""
    g, a = _folder(tmp_path / "g"), _folder(tmp_path / "a")
    assert _goat(home, "bind", "--global", "markdown", "--set", f"root={g}")[0] == 0
    assert _goat(home, "bind", "--pen", "a", "markdown", "--set", f"root={a}")[0] == 0
    assert _goat(home, "bind", "--pen", "b", "markdown")[0] == 0  # its default store
    _folder(home / "data" / "stores" / "pens" / "b")
    return {"g": g, "a": a}


CASES = [
    # (the root asked for, relative to tmp_path, what the refusal names)
    ("g", "the store of global"),
    ("a", "the store of pen:a"),
    ("a/inner", "the store of pen:a"),
    ("g/deep/down", "the store of global"),
    ("home", "GOAT home"),
    ("home/data", "GOAT home"),
    ("home/data/stores/pens/b", "the store of pen:b"),
    (".", "GOAT home"),  # holds the home (and every other store)
]


@pytest.mark.parametrize("root,named", CASES)
def test_goat_bind_refuses_a_root_overlapping_another_store(
    home: Path, tmp_path: Path, root: str, named: str
) -> None:
    roots = _setup(home, tmp_path)
    target = _folder(tmp_path / root)
    if root == ".":  # holding the other scopes' roots is refused first, naming one of them
        named = "the store of global"
    config = (home / "memory.json").read_bytes()
    code, out = _goat(home, "bind", "--pen", "p", "markdown", "--set", f"root={target}")
    assert code == 2, out
    assert named in out and "store-overlap" in out, out
    assert (home / "memory.json").read_bytes() == config  # nothing saved
    assert roots  # the setup's stores are untouched by the refusal
    code, out = _goat(home, "bind", "--global", "markdown", "--set", f"root={target}")
    if root not in ("g", "g/deep/down"):  # Global may take its own root again
        assert code == 2 and "store-overlap" in out, out


def test_a_scope_may_be_bound_to_its_own_root_again_and_to_a_sibling(
    home: Path, tmp_path: Path
) -> None:
    _setup(home, tmp_path)
    assert _goat(home, "bind", "--pen", "a", "markdown", "--set", f"root={tmp_path / 'a'}")[0] == 0
    sibling = _folder(tmp_path / "ab")  # a name prefix is not nesting
    code, out = _goat(home, "bind", "--pen", "p", "markdown", "--set", f"root={sibling}")
    assert code == 0, out


def test_the_host_api_refuses_an_overlapping_root(home: Path, tmp_path: Path) -> None:
    _setup(home, tmp_path)
    with SyncMemoryHost(home=GoatHome.at(home)) as host:
        with pytest.raises(PathError, match="the store of pen:a") as raised:
            host.bind(Scope.pen("p"), "markdown", {"root": str(tmp_path / "a")})
        assert raised.value.rule == "store-overlap"
        with pytest.raises(PathError, match="GOAT home"):
            host.bind(Scope.pen("p"), "markdown", {"root": str(home)})
        assert host.status()  # the host still works
        assert [s.key for s, _ in host.config.scopes()] == ["global", "pen:a", "pen:b"]
