"""Truthful answers at the user's boundary (the ``goat`` CLI on the embedded markdown store),
each case with the exact input an adversarial run reported: a colon in a file name, titles
that read as paths, refreshing an operation id a markdown store never issued
(docs/design.md, Browsing and links; Writes and outcomes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from goat_core.cli import cli


@pytest.fixture
def goat_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("GOAT_HOME", str(path))
    monkeypatch.delenv("GOAT_STRICT_PLUGINS", raising=False)
    return path


def goat(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def global_root(home: Path) -> Path:
    return home / "data" / "stores" / "global"


def test_a_colon_in_a_file_name_never_breaks_the_map(goat_home: Path, tmp_path: Path) -> None:
    """``x:y.md`` made ``goat map`` and ``map --html`` fail with exit 2."""
    assert goat("remember", "first note", "--title", "Plain").exit_code == 0
    (global_root(goat_home) / "x:y.md").write_text("links to [[Plain]]\n", encoding="utf-8")
    outline = goat("map")
    assert outline.exit_code == 0, outline.output
    assert "x:y.md" in outline.stdout and "Plain.md" in outline.stdout
    data = json.loads(goat("map", "--json").stdout)
    assert {"source": "x:y.md", "target": "Plain.md"}.items() <= data["edges"][0].items()
    html = goat("map", "--html", str(tmp_path / "map.html"))
    assert html.exit_code == 0, html.output
    assert "x:y.md" in (tmp_path / "map.html").read_text(encoding="utf-8")
    assert goat("show", "x:y.md").stdout.strip() == "links to [[Plain]]"
    assert goat("pages").exit_code == 0


@pytest.mark.parametrize("title", ["../x", "a/../../b", ".obsidian/x", ".git/config", "~/x"])
def test_whatever_remember_accepts_as_a_title_show_and_forget_find(
    goat_home: Path, title: str
) -> None:
    """``show '../x'`` and ``forget '../x'`` exited 2 (``a/../../b`` too);
    ``forget '.obsidian/x'`` answered not found (``.git/config``, ``~/x`` too)."""
    stored = json.loads(goat("remember", f"body of {title}", "--title", title, "--json").stdout)
    assert stored["status"] == "stored"
    shown = goat("show", title, "--json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["id"] == stored["id"]
    forgot = goat("forget", title, "--json")
    assert forgot.exit_code == 0, forgot.output
    assert json.loads(forgot.stdout)["id"] == stored["id"]
    assert not (global_root(goat_home) / stored["path"]).exists()
    again = goat("forget", title)
    assert again.exit_code in (2, 3)  # gone: the same answer as any unknown reference


def test_a_path_like_title_never_forgets_a_same_named_note_elsewhere(goat_home: Path) -> None:
    root = global_root(goat_home)
    assert goat("remember", "keep me", "--title", "x").exit_code == 0
    assert (root / "x.md").exists()
    assert goat("forget", "notes/x").exit_code == 3
    assert goat("forget", "../x").exit_code == 2  # no such title: the path rule answers
    assert (root / "x.md").exists()


def test_refresh_of_an_unknown_operation_id_is_not_found(goat_home: Path) -> None:
    """``goat refresh made-up-id`` answered "queued" with exit 0."""
    result = goat("refresh", "made-up-id")
    assert result.exit_code == 3, result.output
    assert "made-up-id" in result.stderr and "queued" not in result.stdout


def test_a_symlink_loop_is_reported_by_the_link_that_closes_it(
    goat_home: Path, tmp_path: Path
) -> None:
    """With ``loopalias -> loopdir`` and ``loopdir/up -> ..``, the warning named the real
    folder ``loopdir`` as the cycle, and ``show`` of a listed path exited 3."""
    vault = tmp_path / "vault"
    (vault / "loopdir").mkdir(parents=True)
    (vault / "loopdir" / "inner.md").write_text("inner note\n", encoding="utf-8")
    (vault / "top.md").write_text("top note\n", encoding="utf-8")
    (vault / "loopdir" / "up").symlink_to("..")
    (vault / "loopalias").symlink_to("loopdir")
    assert goat("bind", "--pen", "lp", "markdown", "--set", f"root={vault}").exit_code == 0
    listed = goat("pages", "--pen", "lp", "--json")
    assert listed.exit_code == 0, listed.output
    paths = [item["path"] for item in json.loads(listed.stdout)["items"]]
    assert paths == ["loopdir/inner.md", "top.md"]
    mapped = goat("map", "--pen", "lp")
    assert mapped.exit_code == 0, mapped.output
    warnings = [line for line in mapped.stderr.splitlines() if "warning" in line]
    cycle = [line for line in warnings if "cycle" in line]
    assert len(cycle) == 1 and "loopdir/up" in cycle[0], warnings
    assert any("loopalias" in line and "already listed" in line for line in warnings), warnings
    assert not any(line.split("warning: ")[1].startswith("loopdir:") for line in warnings)
    for path in paths:
        assert goat("show", path, "--pen", "lp").exit_code == 0, path


def test_pages_is_degraded_when_the_walk_skipped_a_symlink_out_of_the_store(
    goat_home: Path, tmp_path: Path
) -> None:
    """``vault/leak.md -> ../outside/secret.md`` (and a folder link ``vault/leakdir ->
    ../outside``): ``goat pages`` said ``complete`` though the walk skipped both. The listing
    is not complete and names each skipped path; a link inside the store (``alias.md ->
    mine.md``) leaves it complete (docs/design.md, Browsing and links)."""
    vault, outside = tmp_path / "vault", tmp_path / "outside"
    vault.mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text("not the vault's\n", encoding="utf-8")
    (vault / "mine.md").write_text("mine\n", encoding="utf-8")
    (vault / "alias.md").symlink_to("mine.md")
    assert goat("bind", "--pen", "lk", "markdown", "--set", f"root={vault}").exit_code == 0
    clean = json.loads(goat("pages", "--pen", "lk", "--json").stdout)
    assert clean["complete"] is True and clean["degraded"] == []

    (vault / "leak.md").symlink_to(outside / "secret.md")
    (vault / "leakdir").symlink_to(outside, target_is_directory=True)
    listed = goat("pages", "--pen", "lk", "--json")
    assert listed.exit_code == 0, listed.output
    data = json.loads(listed.stdout)
    assert [i["path"] for i in data["items"]] == ["alias.md", "mine.md"]
    assert data["complete"] is False
    assert "leak.md: skipped, symlink points outside the store" in data["degraded"]
    assert "leakdir: skipped, symlink points outside the store" in data["degraded"]
    shown = goat("pages", "--pen", "lk")
    assert "leak.md: skipped, symlink points outside the store" in shown.stderr


def _readme_host_example() -> str:
    from conftest import REPO

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Use it from a host", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readme_host_example_runs_with_the_pen_unbound_then_bound(
    goat_home: Path, tmp_path: Path
) -> None:
    """The README's host example raised a traceback while its Pen was unbound."""
    import subprocess
    import sys

    script = tmp_path / "example.py"
    script.write_text(_readme_host_example(), encoding="utf-8")

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=120
        )

    unbound = run()
    assert unbound.returncode == 0, unbound.stderr
    assert "goat bind --pen docs" in unbound.stdout and "Traceback" not in unbound.stderr
    assert goat("bind", "--pen", "docs", "markdown").exit_code == 0
    bound = run()
    assert bound.returncode == 0, bound.stderr
    assert bound.stdout.startswith("ok ") and "'recall'" in bound.stdout
