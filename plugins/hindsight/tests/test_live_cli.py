"""The real ``goat`` console script against a real Hindsight 1.1.0 server with MCP auth on
(end to end: ``goat`` binds, checks, remembers,
recalls, reflects and browses a real bank; nothing in config, logs, output or errors
contains the key).

Every command runs as a subprocess with ``GOAT_HOME`` in a temporary folder and the OS
keyring disabled (``PYTHON_KEYRING_BACKEND`` = keyring's fail backend), so the key lands in
the owner-only ``credentials.json``. Banks are created through Hindsight's REST API by the
fixture, never by GOAT.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from live_server import LiveServer

pytestmark = pytest.mark.live

#: The server's MCP token, used as the API key: the sentinel that must never leak.
KEY = "sk-goat-live-SENTINEL-3b9e17c04a"
WRONG_KEY = "sk-goat-live-WRONG-8d02f6aa51"
GOAT = Path(sys.executable).with_name("goat")
TEXT = "zqcli Bob keeps his bicycle in the blue shed behind the library."


@dataclass
class Goat:
    """Runs ``goat`` in its own GOAT home and keeps every output for the sentinel check."""

    home: Path
    cwd: Path
    outputs: list[str] = field(default_factory=list)

    def __call__(
        self, *args: str, stdin: str | None = None, debug: bool = False, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("GOAT_", "PYTHON_KEYRING")) and k not in ("HS_MCP_TOKEN",)
        }
        env.update(
            GOAT_HOME=str(self.home),
            PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
            GOAT_STRICT_PLUGINS="1",
        )
        if debug:  # debug logs: httpx2, mcp and GOAT's own records, all on stderr
            env["GOAT_DEBUG"] = "1"
        done = subprocess.run(
            [str(GOAT), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            cwd=self.cwd,
            timeout=timeout,
        )
        self.outputs += [done.stdout, done.stderr]
        return done

    def json(self, *args: str, code: int = 0, **kwargs: Any) -> Any:
        done = self(*args, "--json", **kwargs)
        assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
        return json.loads(done.stdout)


@pytest.fixture(scope="module")
def auth_api(live_server: LiveServer) -> Iterator[str]:
    """A hindsight-api on the shared database whose MCP endpoint requires ``KEY``."""
    url = live_server.start_api("cli-auth", HS_MCP_TOKEN=KEY)
    yield url
    live_server.stop_api("cli-auth")


@pytest.fixture
def goat(tmp_path: Path) -> Iterator[Goat]:
    work = tmp_path / "work"
    work.mkdir()
    runner = Goat(home=tmp_path / "goat-home", cwd=work)
    yield runner
    assert_no_key_anywhere(runner)


def assert_no_key_anywhere(runner: Goat) -> None:
    """The sentinel: the key is in ``credentials.json`` (0600) and nowhere else."""
    for text in runner.outputs:
        assert KEY not in text
    credentials = runner.home / "credentials.json"
    seen_in_store = False
    for path in sorted(p for p in runner.home.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if path == credentials:
            seen_in_store = KEY.encode() in data
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
        else:
            assert KEY.encode() not in data, f"the key leaked into {path}"
    if credentials.exists():
        assert seen_in_store or WRONG_KEY.encode() in credentials.read_bytes()


def bind(goat: Goat, url: str, bank: str, key: str) -> subprocess.CompletedProcess[str]:
    return goat(
        "bind",
        "--pen",
        "team",
        "hindsight",
        "--set",
        f"base_url={url}",
        "--set",
        f"bank_id={bank}",
        "--api-key-stdin",
        stdin=key + "\n",
    )


def test_goat_binds_checks_remembers_browses_recalls_reflects_a_real_bank(
    goat: Goat, live_server: LiveServer, auth_api: str
) -> None:
    bank = live_server.create_bank("cli")
    label = f"shared bank `{bank}` on `{auth_api}`"

    done = bind(goat, auth_api, bank, KEY)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "bound hindsight to pen:team (binding pen-team)",
        f"connected: {label} reached",
    ], done.stdout
    config = json.loads((goat.home / "memory.json").read_text())
    assert config["bindings"]["pen-team"]["settings"] == {"base_url": auth_api, "bank_id": bank}

    started = time.perf_counter()
    check = goat.json("check", "--pen", "team", debug=True)
    assert check["ok"] is True and check["cause"] is None
    assert check["reason"] == f"{label} reached"
    assert time.perf_counter() - started < 30

    receipt = goat.json("remember", TEXT, "--pen", "team", debug=True)
    assert receipt["status"] == "queued" and receipt["operation_id"], receipt
    assert receipt["scope"] == "pen:team"

    deadline = time.monotonic() + 60  # a retain takes ~1 s here, longer on a loaded machine
    while True:
        listing = goat.json("pages", "--pen", "team")
        found = [p for p in listing["items"] if p["title"].startswith("zqcli Bob")]
        if found or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert len(found) == 1, listing
    page_id = found[0]["id"]

    # the receipt's operation: queued until Hindsight completes the batch, then stored
    deadline = time.monotonic() + 60
    while True:
        refreshed = goat.json("refresh", receipt["operation_id"], "--pen", "team")
        if refreshed["status"] != "queued" or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert refreshed["status"] == "stored", refreshed
    assert refreshed["operation_id"] == receipt["operation_id"]
    mistyped = goat("refresh", "00000000-0000-4000-8000-000000000000", "--pen", "team")
    assert mistyped.returncode == 3, (mistyped.stdout, mistyped.stderr)  # not "still queued"
    assert "operation `00000000-0000-4000-8000-000000000000` not found" in mistyped.stderr

    shown = goat.json("show", page_id, "--pen", "team")
    assert shown["id"] == page_id and shown["body"] == TEXT

    recalled = goat.json("recall", "where is the bicycle? blue shed", "--pen", "team", debug=True)
    assert [i["id"] for i in recalled["items"]][:1] == [page_id], recalled
    assert recalled["items"][0]["score"] > 0 and recalled["scope"] == "pen:team"

    reflected = goat("reflect", "Where does Bob keep his bicycle?", "--pen", "team")
    assert reflected.returncode == 0, reflected.stderr
    assert reflected.stdout.splitlines()[0] == "mock response"  # the server's mock LLM

    no_map = goat("map", "--pen", "team")
    assert no_map.returncode == 4, (no_map.stdout, no_map.stderr)
    assert "map" in no_map.stderr and "not support" in no_map.stderr

    status = goat.json("status")
    rows = {row["scope"]: row for row in status["bindings"]}
    assert rows["pen:team"]["label"] == label
    assert rows["pen:team"]["provider"] == "hindsight"
    assert rows["pen:team"]["tone"] == "accent" and "cause" not in rows["pen:team"]
    assert rows["pen:team"]["last_checked"] is not None

    assert live_server.bank_exists(bank)


def test_a_wrong_key_fails_the_check_once_fast_with_an_auth_cause(
    goat: Goat, live_server: LiveServer, auth_api: str
) -> None:
    bank = live_server.create_bank("cli")
    done = bind(goat, auth_api, bank, WRONG_KEY)
    assert done.returncode == 0, done.stderr  # saved; the connect outcome is reported
    assert done.stdout.splitlines()[1].startswith("not connected: ")
    assert "401" in done.stdout or "auth" in done.stdout.lower(), done.stdout

    started = time.perf_counter()
    check = goat("check", "--pen", "team", "--json", debug=True)
    elapsed = time.perf_counter() - started
    assert check.returncode == 6, (check.stdout, check.stderr)
    result = json.loads(check.stdout)
    assert result["ok"] is False and result["cause"] == "auth", result
    assert "failed (auth)" in check.stderr
    # one authentication attempt only: httpx2's debug log shows a single 401 response (the
    # exact check; the time bound, process start included, only catches a hang on a loaded
    # CI machine where starting `goat` alone can take seconds)
    assert check.stderr.count('"HTTP/1.1 401 Unauthorized"') == 1, check.stderr
    assert elapsed < 30, elapsed
    assert WRONG_KEY not in check.stdout + check.stderr

    recall = goat("recall", "anything", "--pen", "team")
    assert recall.returncode == 6 and "401" in recall.stderr, recall.stderr

    status = goat.json("status")
    row = {r["scope"]: r for r in status["bindings"]}["pen:team"]
    assert row["tone"] == "warn" and row["cause"] == "auth", row
    assert row["label"] == f"shared bank `{bank}` on `{auth_api}`"  # never "Pen `team` memory"

    # the right key (re-bound) works again at once: nothing is blocked across processes
    assert bind(goat, auth_api, bank, KEY).returncode == 0
    assert goat.json("check", "--pen", "team")["ok"] is True


def test_an_unknown_bank_is_reported_and_still_does_not_exist(
    goat: Goat, live_server: LiveServer, auth_api: str
) -> None:
    bank = f"goat-missing-{time.time_ns() % 10**9}"
    done = bind(goat, auth_api, bank, KEY)
    assert done.returncode == 0, done.stderr
    message = f"bank `{bank}` not found on `{auth_api}`"
    assert message in done.stdout and done.stdout.splitlines()[1].startswith("not connected")

    check = goat("check", "--pen", "team", "--json")
    assert check.returncode == 6
    assert json.loads(check.stdout)["cause"] == "not_found"
    assert message in check.stderr

    for args in (
        ("remember", "must not create the bank", "--pen", "team"),
        ("reflect", "must not create the bank either", "--pen", "team"),
        ("recall", "anything", "--pen", "team"),
    ):
        refused = goat(*args)
        assert refused.returncode != 0, (args, refused.stdout)
        assert message in refused.stderr, (args, refused.stderr)

    status = goat.json("status")
    row = {r["scope"]: r for r in status["bindings"]}["pen:team"]
    assert row["tone"] == "warn" and row["cause"] == "not_found", row
    assert row["label"] == f"shared bank `{bank}` on `{auth_api}`"
    assert not live_server.bank_exists(bank)
