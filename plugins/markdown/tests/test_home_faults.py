"""The GOAT home on a full or read-only disk, at the ``goat`` CLI (docs/design.md, Writes and
outcomes: an unwritable store). Every recall, pages and show failed with "disk I/O error",
even for notes indexed long before. Now reads answer from what is indexed (``degraded`` once
the index could not take a change), and writes exit 6 naming the index file, nothing
written. Injected at the index's write path everywhere; for real on a tmpfs where the
machine allows ``mount``."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from conftest import REPO

from goat_core.cli import cli
from goat_core.filestore.search import SearchIndex
from goat_core.host import GoatHome
from goat_core.testing.fixtures import copy_test_vault
from goat_core.testing.fixtures import fill_disk as _fill
from goat_core.testing.fixtures import small_tmpfs as _tmpfs

REASON = (
    "goat: warning: the search index {db} could not take the notes' latest changes (its disk"
    " {what}); answered from what it held before, which may miss or misrank changed notes\n"
)


def goat(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def goat_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("GOAT_HOME", str(path))
    monkeypatch.delenv("GOAT_STRICT_PLUGINS", raising=False)
    return path


def _vault(tmp_path: Path) -> Path:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Lighthouse.md").write_text(
        "---\ntitle: Lighthouse keeper\n---\nThe keeper logs every storm.\n", encoding="utf-8"
    )
    (vault / "Harbour.md").write_text("Harbour fees are paid each quarter.\n", encoding="utf-8")
    return vault


@pytest.mark.parametrize(
    ("message", "what", "said"),
    [
        ("database or disk is full", "is full", "the disk is full"),
        ("attempt to write a readonly database", "is read-only", "it is read-only"),
    ],
)
def test_reads_answer_from_the_index_and_writes_exit_6_when_the_home_cannot_be_written(
    goat_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    message: str,
    what: str,
    said: str,
) -> None:
    vault = _vault(tmp_path)
    assert goat("bind", "--global", "markdown", "--set", f"root={vault}").exit_code == 0
    assert goat("recall", "storm").exit_code == 0  # indexed while the home could be written
    db = GoatHome.at(goat_home).index_path(vault)

    def unwritable(self: SearchIndex) -> None:
        raise sqlite3.OperationalError(message)

    monkeypatch.setattr(SearchIndex, "_open_writable", unwritable)
    found = goat("recall", "storm")
    assert found.exit_code == 0 and "Lighthouse.md" in found.stdout
    assert found.stderr == ""  # nothing changed since: a complete answer
    (vault / "Gamma.md").write_text(
        "---\ntitle: Gamma lenses\n---\nLenses of the new lamp.\n", encoding="utf-8"
    )
    warning = REASON.format(db=db, what=what)
    old = goat("recall", "storm")
    assert old.exit_code == 0 and "Lighthouse.md" in old.stdout
    assert old.stderr == warning
    new = json.loads(goat("recall", "lenses", "--json").stdout)
    assert new == {
        "scope": "global",
        "items": [],
        "complete": False,
        "degraded": [warning[len("goat: warning: ") : -1]],
    }
    listed = goat("pages")
    assert listed.exit_code == 0 and listed.stderr == warning
    assert [line.split()[0] for line in listed.stdout.splitlines()[1:]] == [
        "Gamma.md",
        "Harbour.md",
        "Lighthouse.md",
    ]
    shown = goat("show", "Gamma lenses")  # a new note, by the title the index never took
    assert shown.exit_code == 0 and shown.stdout == "Lenses of the new lamp.\n"
    assert goat("show", "Lighthouse keeper").stdout == "The keeper logs every storm.\n"
    refused = (
        f"goat: error: cannot write the search index {db}: {said} ({message}); nothing was stored\n"
    )
    remembered = goat("remember", "a new note", "--title", "New")
    assert remembered.exit_code == 6 and remembered.stderr == refused
    assert not (vault / "New.md").exists()
    forgot = goat("forget", "Harbour")
    assert forgot.exit_code == 6 and forgot.stderr == refused
    assert (vault / "Harbour.md").exists()
    assert goat("reindex").exit_code == 6
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "Buoy.md").write_text("Buoys mark the channel.\n", encoding="utf-8")
    planned = goat("import", str(bundle), "--dry-run")  # writes nothing: still answers
    assert planned.exit_code == 0 and "Buoy.md" in planned.stdout
    imported = goat("import", str(bundle))
    assert imported.exit_code == 6
    assert f"cannot write the search index {db}: {said}" in imported.stderr
    assert not (vault / "Buoy.md").exists()
    monkeypatch.undo()
    monkeypatch.setenv("GOAT_HOME", str(goat_home))
    healed = json.loads(goat("recall", "lenses", "--json").stdout)
    assert [item["id"] for item in healed["items"]] == ["Gamma.md"]
    assert healed["complete"] is True and healed["degraded"] == []


# -- a real tmpfs under the GOAT home, the real vault --------------------------------------


@pytest.mark.parametrize("fault", ["full", "read-only"])
def test_the_real_vault_with_its_goat_home_on_a_full_or_read_only_tmpfs(
    tmp_path: Path, fault: str
) -> None:
    vault = copy_test_vault(REPO, tmp_path / "vault")
    with _tmpfs(tmp_path / "home", "8m") as home:
        env = {**os.environ, "GOAT_HOME": str(home), "GOAT_LOAD_PLUGINS": "markdown"}

        def run(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
            started = time.monotonic()
            done = subprocess.run(
                [sys.executable, "-m", "goat_core.cli", *args],
                capture_output=True,
                text=True,
                env=env,
                timeout=300,
            )
            return done, time.monotonic() - started

        assert run("bind", "--global", "markdown", "--set", f"root={vault}")[0].returncode == 0
        assert run("recall", "internal links")[0].returncode == 0
        db = GoatHome.at(home).index_path(vault)
        if fault == "full":
            _fill(home)
        else:
            subprocess.run(["mount", "-o", "remount,ro", str(home)], check=True)
        what = "is full" if fault == "full" else "is read-only"
        timings: dict[str, float] = {}
        recall, timings["recall"] = run("recall", "internal links", "--json")
        assert recall.returncode == 0, recall.stderr
        data = json.loads(recall.stdout)
        assert data["items"][0]["id"] == "Linking notes and files/Internal links.md"
        assert data["degraded"] == []
        pages, timings["pages"] = run("pages", "--limit", "1000")
        assert pages.returncode == 0 and pages.stderr == ""
        assert len(pages.stdout.splitlines()) == 1 + 173
        shown, timings["show"] = run("show", "Internal links")
        assert shown.returncode == 0 and "internal links" in shown.stdout
        (vault / "Zebra.md").write_text("zebracorn\n", encoding="utf-8")
        after = json.loads(run("recall", "zebracorn", "--json")[0].stdout)
        assert after["items"] == [] and after["complete"] is False
        assert after["degraded"] == [REASON.format(db=db, what=what)[15:-1]]
        assert run("show", "Zebra")[0].stdout == "zebracorn\n"
        remembered, timings["remember"] = run("remember", "x", "--title", "Y")
        assert remembered.returncode == 6, remembered.stderr
        assert f"cannot write the search index {db}: " in remembered.stderr
        assert not (vault / "Y.md").exists()
        print(f"GOAT home {fault}: seconds per command {timings}")


# -- goat check: a store it cannot write is warn ---------------------------------------------


def _fake_statvfs(monkeypatch: pytest.MonkeyPatch, under: Path, fault: str) -> None:
    """``os.statvfs`` says the file system of ``under`` is read-only or has no space left."""
    real = os.statvfs
    prefix = str(under)

    def statvfs(path: object) -> os.statvfs_result:
        got = real(path)  # type: ignore[arg-type]
        if not os.fspath(path).startswith(prefix):  # type: ignore[arg-type]
            return got
        fields = list(got)
        if fault == "read-only":
            fields[8] |= os.ST_RDONLY  # f_flag
        else:
            fields[3] = fields[4] = 0  # f_bfree, f_bavail
        return os.statvfs_result(fields)

    monkeypatch.setattr(os, "statvfs", statvfs)


@pytest.mark.parametrize(
    ("place", "fault"),
    [("vault", "read-only"), ("vault", "full"), ("home", "read-only"), ("home", "full")],
)
def test_check_reports_a_store_it_cannot_write_as_warn(
    goat_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, place: str, fault: str
) -> None:
    """``goat check`` reported an unwritable store as ok."""
    vault = _vault(tmp_path)
    assert goat("bind", "--global", "markdown", "--set", f"root={vault}").exit_code == 0
    assert goat("recall", "storm").exit_code == 0
    healthy = goat("check")
    assert healthy.stdout == f"global: ok (quiet)\n  markdown notes in {vault}\n"
    index_dir = GoatHome.at(goat_home).index_path(vault).parent
    _fake_statvfs(monkeypatch, vault if place == "vault" else goat_home, fault)
    what = (
        f"store folder {vault} is {fault}"
        if place == "vault"
        else f"search index folder {index_dir} (GOAT home) is {fault}"
    )
    reason = f"markdown notes in {vault}; cannot be written: {what} (reads work, writes fail)"
    checked = goat("check")
    assert checked.exit_code == 0, checked.output
    assert checked.stdout == f"global: ok (warn)\n  {reason}\n"
    data = json.loads(goat("check", "--json").stdout)
    assert (data["ok"], data["tone"], data["reason"], data["cause"]) == (
        True,
        "warn",
        reason,
        None,
    )
    status = json.loads(goat("status", "--json").stdout)["bindings"]
    assert [(b["tone"], b["reason"]) for b in status if b["scope"] == "global"] == [
        ("warn", reason)
    ]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes whatever the folder's mode")
def test_check_warns_of_a_vault_without_write_permission(goat_home: Path, tmp_path: Path) -> None:
    vault = _vault(tmp_path)
    assert goat("bind", "--global", "markdown", "--set", f"root={vault}").exit_code == 0
    vault.chmod(0o500)
    try:
        data = json.loads(goat("check", "--json").stdout)
    finally:
        vault.chmod(0o700)
    assert data["tone"] == "warn" and f"store folder {vault} is read-only" in data["reason"]


@pytest.mark.parametrize("fault", ["full", "read-only"])
def test_check_warns_of_a_vault_on_a_full_or_read_only_tmpfs(
    goat_home: Path, tmp_path: Path, fault: str
) -> None:
    with _tmpfs(tmp_path / "vault", "1m") as vault:
        (vault / "Note.md").write_text("a note\n", encoding="utf-8")
        assert goat("bind", "--global", "markdown", "--set", f"root={vault}").exit_code == 0
        if fault == "full":
            _fill(vault)
        else:
            subprocess.run(["mount", "-o", "remount,ro", str(vault)], check=True)
        checked = goat("check")
        assert checked.exit_code == 0, checked.output
        assert checked.stdout == (
            f"global: ok (warn)\n  markdown notes in {vault}; cannot be written: store"
            f" folder {vault} is {fault} (reads work, writes fail)\n"
        )
        assert goat("show", "Note").stdout == "a note\n"


@pytest.mark.parametrize(
    ("fault", "said"), [("read-only", "it is read-only"), ("full", "the disk is full")]
)
@pytest.mark.parametrize(
    "args",
    [
        ("bind", "--pen", "v4", "markdown", "--no-connect"),
        ("unbind", "--pen", "v3"),
        ("disable", "--pen", "v3"),
    ],
)
def test_config_writes_on_an_unwritable_home_exit_6(
    goat_home: Path, tmp_path: Path, fault: str, said: str, args: tuple[str, ...]
) -> None:
    """The exact input: ``goat bind`` / ``unbind`` / ``disable`` with the GOAT home
    read-only or full (was exit 1 "unexpected OSError ... memory-json.lock", and exit 2
    "cannot write memory.json" when full): ``StoreUnwritable`` exit 6 naming the path, and
    memory.json byte for byte as it was."""
    from goat_core.testing.conformance.faults import Fault, filesystem_fault

    vault = _vault(tmp_path)
    assert goat("bind", "--pen", "v3", "markdown", "--set", f"root={vault}").exit_code == 0
    config = goat_home / "memory.json"
    before = config.read_bytes()
    kind = Fault.READ_ONLY if fault == "read-only" else Fault.DISK_FULL
    with filesystem_fault(goat_home, kind):
        result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 6, result.output
    assert said in result.output and str(goat_home) in result.output, result.output
    assert "unexpected" not in result.output
    assert config.read_bytes() == before


def test_a_full_config_folder_fails_the_save_with_exit_6(tmp_path: Path) -> None:
    """The lock (under the data folder) is taken, then ``memory.json`` cannot be written
    because its folder is full: ``StoreUnwritable`` naming memory.json's folder, nothing
    changed."""
    from goat_core.contract import Scope
    from goat_core.errors import StoreUnwritable
    from goat_core.host import SyncMemoryHost
    from goat_core.testing.conformance.faults import Fault, filesystem_fault

    home = GoatHome(config_dir=tmp_path / "config", data_dir=tmp_path / "data")
    vault = _vault(tmp_path)
    with SyncMemoryHost(home=home) as host:
        host.bind(Scope.pen("v3"), "markdown", {"root": str(vault)})
        before = home.config_path.read_bytes()
        with (
            filesystem_fault(home.config_dir, Fault.DISK_FULL),
            pytest.raises(StoreUnwritable, match="the disk is full") as info,
        ):
            host.bind(Scope.pen("v4"), "markdown", {})
    assert info.value.exit_code == 6 and str(home.config_dir) in info.value.path
    assert home.config_path.read_bytes() == before


@pytest.mark.parametrize("fault", ["full", "read-only"])
def test_reads_work_on_a_full_or_read_only_home_that_has_no_index_yet(
    tmp_path: Path, fault: str
) -> None:
    """The exact input: ``goat bind --pen v3 markdown --set root=VAULT --no-connect`` with
    the GOAT home on a 2 MiB tmpfs, then the tmpfs filled (or remounted read-only) before
    any index was made; ``goat show Home --pen v3`` exited 6 "nothing was stored". Now
    show, pages and recall answer from a scan of the notes (recall and pages say so in
    ``degraded``), and only a write exits 6."""
    vault = _vault(tmp_path)
    (vault / "Home.md").write_text("Welcome home: the storm log is kept here.\n", encoding="utf-8")
    with _tmpfs(tmp_path / "home", "2m") as home:
        env = {**os.environ, "GOAT_HOME": str(home), "GOAT_LOAD_PLUGINS": "markdown"}

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "goat_core.cli", *args, "--pen", "v3"],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )

        bound = run("bind", "markdown", "--set", f"root={vault}", "--no-connect")
        assert bound.returncode == 0, bound.stderr
        db = GoatHome.at(home).index_path(vault)
        assert not db.exists()
        if fault == "full":
            _fill(home)
        else:
            subprocess.run(["mount", "-o", "remount,ro", str(home)], check=True)
        what = "is full" if fault == "full" else "is read-only"
        reason = (
            f"the search index {db} could not be created (its disk {what}); answered from a "
            "scan of the notes, indexed in memory for this read"
        )
        shown = run("show", "Home")
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout == "Welcome home: the storm log is kept here.\n"
        pages = run("pages", "--json")
        assert pages.returncode == 0, pages.stderr
        listed = json.loads(pages.stdout)
        assert [p["id"] for p in listed["items"]] == ["Harbour.md", "Home.md", "Lighthouse.md"]
        assert listed["degraded"] == [reason]  # the listing itself is whole: a walk
        recall = run("recall", "storm", "--json")
        assert recall.returncode == 0, recall.stderr
        found = json.loads(recall.stdout)
        assert {i["id"] for i in found["items"]} == {"Home.md", "Lighthouse.md"}
        assert found["complete"] is False and found["degraded"] == [reason]
        assert "nothing was stored" not in shown.stderr + pages.stderr + recall.stderr
        remembered = run("remember", "a new note", "--title", "New")
        assert remembered.returncode == 6, remembered.stderr
        assert f"cannot write the search index {db}: " in remembered.stderr
        assert not (vault / "New.md").exists()


@pytest.mark.parametrize("fault", ["full", "read-only"])
def test_reads_work_when_the_index_folder_cannot_even_be_made(
    goat_home: Path, tmp_path: Path, fault: str
) -> None:
    """Injected (no mount needed): a new binding's GOAT home turns full or read-only before
    ``data/index`` exists. ``show``, ``pages`` and ``recall`` exit 0 (degraded, naming the
    index), ``remember`` exits 6 and writes no note."""
    from goat_core.testing.conformance.faults import Fault, filesystem_fault

    vault = _vault(tmp_path)
    assert goat("bind", "--pen", "v3", "markdown", "--set", f"root={vault}").exit_code == 0
    assert not (goat_home / "data" / "index").exists()
    kind = Fault.READ_ONLY if fault == "read-only" else Fault.DISK_FULL
    with filesystem_fault(goat_home, kind):
        shown = CliRunner().invoke(cli, ["show", "Lighthouse keeper", "--pen", "v3"])
        listed = CliRunner().invoke(cli, ["pages", "--pen", "v3", "--json"])
        found = CliRunner().invoke(cli, ["recall", "storm", "--pen", "v3", "--json"])
        wrote = CliRunner().invoke(cli, ["remember", "x", "--title", "Y", "--pen", "v3"])
    assert shown.exit_code == 0 and "The keeper logs every storm." in shown.output
    assert listed.exit_code == 0 and "could not be created" in listed.output, listed.output
    assert found.exit_code == 0, found.output
    data = json.loads(found.stdout)
    assert [i["id"] for i in data["items"]] == ["Lighthouse.md"] and data["complete"] is False
    assert wrote.exit_code == 6 and not (vault / "Y.md").exists(), wrote.output
