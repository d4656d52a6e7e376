"""A remote binding (goat-hindsight) through ``goat serve`` and ``goat hook``.

- The hook keeps the supervisor's rules across processes: after a 401 no request is sent
  again until the binding changes or ``goat check`` runs, and after a failure it backs off;
  that state lives under the GOAT home. Requests are counted on a loopback server.
- ``openWorldHint`` is true for a provider that declares network use.
- A shared Hindsight bank is labelled "shared bank" in ``goat://scope`` and in every tool.
- A hostile server that puts the ``Authorization`` header into its error text never gets the
  key shown: not in a tool result, a resource, the hook's output or any log.

Needs goat-hindsight (the ``serve`` tox env installs it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("goat_hindsight")

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from goat_core.testing import assert_no_secret, remote_mcp_server

from .conftest import GOAT, goat, goat_env, run_hook

pytestmark = pytest.mark.anyio

KEY = "hs-Secret/Key+7=qZ!x9"
OTHER_KEY = "hs-Other/Key+3=wR!y2"
REQUIRED_TOOLS = ("retain", "recall", "reflect", "list_memories", "get_memory", "get_bank")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _serve(mode: str) -> Iterator[tuple[str, list[str | None]]]:
    with remote_mcp_server(mode, tools=REQUIRED_TOOLS) as server:
        yield server.url, server.requests


@pytest.fixture
def refusing() -> Iterator[tuple[str, list[str | None]]]:
    yield from _serve("auth")


@pytest.fixture
def down() -> Iterator[tuple[str, list[str | None]]]:
    yield from _serve("down")


@pytest.fixture
def hostile() -> Iterator[tuple[str, list[str | None]]]:
    yield from _serve("tool")


def _env(home: Path) -> dict[str, str]:
    # no OS keyring: the key goes to the home's owner-only credential file
    return goat_env(home, PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")


def _bind(home: Path, url: str, key: str = KEY, bank: str = "team") -> None:
    goat(
        home,
        "bind",
        "--pen",
        "team",
        "hindsight",
        "--set",
        f"base_url={url}",
        "--set",
        f"bank_id={bank}",
        "--api-key-stdin",
        "--no-connect",
        input=key,
        env=_env(home),
    )


def _hook(home: Path, tmp_path: Path) -> tuple[dict[str, Any], str]:
    payload = {"prompt": "what did we decide about the release train?", "cwd": str(tmp_path)}
    out, err, code = run_hook(
        home, payload, "--pin", "pen:team", "--deadline", "60", env=_env(home)
    )
    assert code == 0, err
    return out, err


def _state_files(home: Path) -> list[Path]:
    return sorted(home.rglob("hook-*.json"))


def assert_clean(*texts: str) -> None:
    assert_no_secret("\n".join(texts), KEY, OTHER_KEY)


def test_after_a_401_the_hook_sends_nothing_until_check_or_a_new_binding(
    home: Path, tmp_path: Path, refusing: tuple[str, list[str | None]]
) -> None:
    url, requests = refusing
    _bind(home, url)
    assert requests == []  # --no-connect

    out, err = _hook(home, tmp_path)
    assert out["hookSpecificOutput"]["additionalContext"] == ""
    first = len(requests)
    assert first > 0, "the first hook never reached the server"
    (state,) = _state_files(home)
    assert state.is_relative_to(home)  # kept under the GOAT home
    assert json.loads(state.read_text())["state"] == "auth_failed"
    assert_clean(state.read_text(), json.dumps(out), err)

    for _ in range(3):  # fresh processes: none sends a request
        out, err = _hook(home, tmp_path)
        assert out["hookSpecificOutput"]["additionalContext"] == ""
        assert "authentication failed earlier" in err and "goat check" in err, err
        assert_clean(json.dumps(out), err)
    assert len(requests) == first

    checked = goat(home, "check", "--pen", "team", check=False, env=_env(home))
    assert checked.returncode != 0
    assert_clean(checked.stdout, checked.stderr)
    after_check = len(requests)
    assert after_check > first  # the explicit check did try
    assert _state_files(home) == []  # and cleared the hook's state

    _hook(home, tmp_path)  # tries again once...
    retried = len(requests)
    assert retried > after_check
    _hook(home, tmp_path)  # ...and not after the new 401
    assert len(requests) == retried

    _bind(home, url, key=OTHER_KEY)  # a configuration change
    _hook(home, tmp_path)
    assert len(requests) > retried
    assert_clean(*(p.read_text() for p in _state_files(home)))


def test_after_a_failure_the_hook_backs_off_across_processes(
    home: Path, tmp_path: Path, down: tuple[str, list[str | None]]
) -> None:
    url, requests = down
    _bind(home, url)
    _hook(home, tmp_path)
    first = len(requests)
    assert first > 0
    (state,) = _state_files(home)
    saved = json.loads(state.read_text())
    assert saved["state"] == "unavailable" and saved["failures"] == 1
    out, err = _hook(home, tmp_path)
    assert out["hookSpecificOutput"]["additionalContext"] == ""
    assert "next try in" in err, err
    assert len(requests) == first  # within the backoff: no request


async def test_a_network_provider_is_open_world_and_a_shared_bank_is_labelled(
    home: Path, hostile: tuple[str, list[str | None]]
) -> None:
    url, _ = hostile
    _bind(home, url)
    params = StdioServerParameters(command=GOAT, args=["serve", "--pen", "team"], env=_env(home))
    async with Client(params, mode="legacy") as client:
        tools = (await client.list_tools()).tools
        scope = json.loads(
            (await client.read_resource("goat://scope")).contents[0].text  # type: ignore[union-attr]
        )
    assert {t.name for t in tools} >= {"recall", "remember"}
    for tool in tools:
        assert tool.annotations is not None and tool.annotations.open_world_hint is True
        assert "shared bank `team`" in (tool.description or ""), tool.description
    assert scope["shared_bank"] is True and scope["provider"] == "hindsight"
    assert scope["label"].startswith("shared bank `team`"), scope


async def test_a_server_echoing_the_key_never_gets_it_shown(
    home: Path, tmp_path: Path, hostile: tuple[str, list[str | None]]
) -> None:
    url, requests = hostile
    _bind(home, url)
    log = tmp_path / "serve.log"
    params = StdioServerParameters(
        command="sh",
        args=["-c", f'exec "{GOAT}" serve --pen team 2>"{log}"'],
        env=_env(home),
    )
    seen: list[str] = []
    async with Client(params, mode="legacy") as client:
        for name, args in (
            ("recall", {"query": "release train"}),
            ("remember", {"text": "the release train leaves on thursdays"}),
            ("reflect", {"query": "when does the train leave?"}),
            ("pages", {}),
            ("show", {"page": "anything"}),
        ):
            result = await client.call_tool(name, args)
            # a tool error, or (remember) a receipt saying the write failed
            assert result.is_error or result.structured_content["status"] != "stored", name
            seen.append(result.model_dump_json())
        seen.append((await client.list_resources()).model_dump_json())
        seen.append((await client.read_resource("goat://scope")).model_dump_json())
        try:
            page = await client.read_resource("goat://page/anything")
        except Exception as exc:  # an MCP error: its text is checked too
            seen.append(f"{exc!s} {exc!r}")
        else:
            seen.append(page.model_dump_json())
    assert len(requests) > 0  # the server really was asked (and echoed)
    out, err = _hook(home, tmp_path)
    seen += [json.dumps(out), err, log.read_text()]
    seen += [p.read_text() for p in _state_files(home)]
    assert_clean(*seen)
    assert "[REDACTED]" in "\n".join(seen)
