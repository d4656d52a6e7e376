"""A hostile Hindsight server on loopback that echoes the request's ``Authorization`` header
(and the key URL-encoded) into its error text: the key, its whole header value and its
URL-encoded form never reach ``goat status`` (text and ``--json``), ``goat check`` (the saved
key and a draft's), the one-line error, an exception's ``str``/``repr``, ``Health.reason``, a
binding status reason or a tool result (docs/design.md, Credentials and egress)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from goat_core.contract import Scope
from goat_core.errors import GoatError
from goat_core.host import MemoryHost
from goat_core.testing import assert_no_secret, remote_mcp_server
from goat_hindsight.client import REQUIRED_TOOLS

#: A stored key and a draft key with characters that change when URL-encoded.
STORED_KEY = "hs-stored/Key+9=zQ!x7"
DRAFT_KEY = "hs-draft/Key+4=wR!y2"


@pytest.fixture(params=["rpc", "tool"])
def hostile(request: pytest.FixtureRequest) -> Iterator[str]:
    with remote_mcp_server(request.param, tools=REQUIRED_TOOLS) as server:
        yield server.url
    assert server.requests, "the hostile server was never asked"


def _env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GOAT_", "PYTHON_KEYRING")) and k != "HS_MCP_TOKEN"
    }
    env.update(GOAT_HOME=str(home), PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    return env


def goat(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "goat_core.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=_env(home),
        timeout=120,
    )


def test_a_server_echoing_the_key_never_gets_it_shown(hostile: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    bound = goat(
        home,
        "bind",
        "--pen",
        "team",
        "hindsight",
        "--set",
        f"base_url={hostile}",
        "--set",
        "bank_id=team",
        "--api-key-stdin",
        "--no-connect",
        stdin=STORED_KEY,
    )
    assert bound.returncode == 0, bound.stderr
    runs = {
        "status": goat(home, "status"),
        "status --json": goat(home, "status", "--json"),
        "check": goat(home, "check", "--pen", "team"),
        "check --json": goat(home, "check", "--pen", "team", "--json"),
        "check draft": goat(
            home,
            "check",
            "--pen",
            "team",
            "--set",
            "bank_id=other",
            "--api-key-stdin",
            "--json",
            stdin=DRAFT_KEY,
        ),
        "recall": goat(home, "recall", "x", "--pen", "team"),
    }
    for name, run in runs.items():
        assert_no_secret(run.stdout + run.stderr, STORED_KEY, DRAFT_KEY)
        assert "REDACTED" in run.stdout + run.stderr or name.startswith("status"), name
    assert runs["recall"].returncode in (5, 6)
    assert runs["recall"].stderr.count("goat: error:") == 1
    assert runs["check"].returncode != 0 and runs["check draft"].returncode != 0
    assert json.loads(runs["check draft"].stdout)["ok"] is False


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_errors_health_status_and_tools_never_carry_the_key(
    hostile: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    monkeypatch.setenv("GOAT_HOME", str(tmp_path / "home"))
    scope = Scope.pen("team")
    async with MemoryHost() as host:
        await host.bind(
            scope,
            "hindsight",
            {"base_url": hostile, "bank_id": "team"},
            api_key=STORED_KEY,
            connect=False,
        )
        memory = host.context_for(_chat("team"))
        seen: list[Any] = []
        try:
            await memory.recall("x")
        except GoatError as exc:
            seen += [str(exc), repr(exc), exc.message, exc.details, exc.args]
        else:
            pytest.fail("a hostile server answered a recall")
        health = await host.check(scope)
        draft = await host.check(
            scope, draft={"base_url": hostile, "bank_id": "other"}, api_key=DRAFT_KEY
        )
        seen += [health.reason, repr(health), draft.reason, repr(draft)]
        rows = await host.refresh()
        seen += [r.reason for r in rows] + [json.dumps(r.to_json(), default=str) for r in rows]
        result = await memory.tools().call("recall", {"query": "x"})
        seen.append(json.dumps(result, default=str))
        turn = await host.prepare_turn(_chat("team"), "what do we ship on thursdays?", budget=500)
        seen += [turn.reason, repr(turn)]
    assert not health.ok and not draft.ok
    text = "\n".join(str(s) for s in seen)
    assert_no_secret(text, STORED_KEY, DRAFT_KEY)
    assert "[REDACTED]" in text


def _chat(pen: str) -> Any:
    from goat_core.host import Chat

    return Chat(project_id=pen)
