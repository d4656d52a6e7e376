"""A GOAT home that turned full or read-only before Global was ever used (docs/design.md,
Writes and outcomes). The exact input: ``goat bind --pen v markdown --set root=VAULT``, the
home's disk filled (or remounted read-only), then ``goat recall links``, ``goat pages`` and
``goat show x`` each exited 6 "provider 'markdown' could not be built for global: OSError:
[Errno 28] No space left on device: '.../data/stores/global'". Now Global's folder that
cannot be created is an empty store for reads, ``StoreUnwritable`` for writes, and ``warn``
in ``status`` and ``check``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from test_home_faults import _fill, _tmpfs, _vault

from goat_core.cli import cli
from goat_core.testing.conformance.faults import Fault, filesystem_fault


def goat(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture
def goat_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("GOAT_HOME", str(path))
    monkeypatch.delenv("GOAT_STRICT_PLUGINS", raising=False)
    return path


def _reason(folder: Path, fault: str) -> str:
    what = "the disk is full" if fault == "full" else "it is read-only"
    return f"store folder {folder} could not be created ({what}); it holds no notes"


@pytest.mark.parametrize("fault", ["full", "read-only"])
def test_a_global_folder_that_cannot_be_created_reads_empty_and_refuses_writes(
    goat_home: Path, tmp_path: Path, fault: str
) -> None:
    vault = _vault(tmp_path)
    assert goat("bind", "--pen", "v", "markdown", "--set", f"root={vault}").exit_code == 0
    folder = goat_home / "data" / "stores" / "global"
    assert not folder.exists()
    reason = _reason(folder, fault)
    kind = Fault.READ_ONLY if fault == "read-only" else Fault.DISK_FULL
    with filesystem_fault(goat_home, kind):
        recalled = goat("recall", "links", "--json")
        listed = goat("pages", "--json")
        shown = goat("show", "x")
        wrote = goat("remember", "hi")
        status = goat("status", "--json")
        checked = goat("check")
    assert recalled.exit_code == 0, recalled.output
    assert json.loads(recalled.stdout) == {
        "scope": "global",
        "items": [],
        "complete": False,
        "degraded": [reason],
    }
    assert listed.exit_code == 0, listed.output
    pages = json.loads(listed.stdout)
    assert pages["items"] == [] and pages["complete"] is False
    assert pages["degraded"] == [reason]
    assert shown.exit_code == 3, shown.output
    assert shown.stderr == f"goat: error: no page 'x' in Global memory: {reason}\n"
    said = "the disk is full" if fault == "full" else "it is read-only"
    assert wrote.exit_code == 6, wrote.output
    assert wrote.stderr.startswith(f"goat: error: cannot write the store at {folder}: {said} (")
    assert wrote.stderr.endswith("); nothing was stored\n")
    assert "OSError" not in wrote.stderr + status.output + checked.output
    assert status.exit_code == 0, status.output
    (row,) = [r for r in json.loads(status.stdout)["bindings"] if r["scope"] == "global"]
    assert row["tone"] == "warn" and row["reason"] == f"{reason} (reads work, writes fail)"
    assert checked.exit_code == 0, checked.output
    assert "global: ok (warn)" in checked.stdout and reason in checked.stdout
    assert not folder.exists()
    assert goat("remember", "hi").exit_code == 0  # room again: the folder is made and used
    assert (folder / "hi.md").is_file()


@pytest.mark.parametrize("fault", ["full", "read-only"])
def test_a_global_never_used_on_a_full_or_read_only_tmpfs(tmp_path: Path, fault: str) -> None:
    # a tmpfs makes folders while it has inodes: three (its root, h, the filler) fill it
    with _tmpfs(tmp_path / "home", "2m,nr_inodes=3") as home:
        env = {**os.environ, "GOAT_HOME": str(home / "h"), "GOAT_LOAD_PLUGINS": "markdown"}

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "goat_core.cli", *args],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )

        (home / "h").mkdir()
        if fault == "full":
            _fill(home)
        else:
            subprocess.run(["mount", "-o", "remount,ro", str(home)], check=True)
        folder = home / "h" / "data" / "stores" / "global"
        reason = _reason(folder, fault)
        recalled = run("recall", "links", "--json")
        assert recalled.returncode == 0, recalled.stderr
        assert json.loads(recalled.stdout)["degraded"] == [reason]
        listed = run("pages")
        assert listed.returncode == 0 and listed.stderr == f"goat: warning: {reason}\n"
        assert run("show", "x").returncode == 3
        wrote = run("remember", "hi")
        assert wrote.returncode == 6 and f"cannot write the store at {folder}: " in wrote.stderr
        checked = run("check")
        assert checked.returncode == 0 and reason in checked.stdout, checked.stdout
