"""The hook tool a host's ``mcp_tool`` hook calls on the running server (never listed), the
per-session memory of what was given, and the scope receipt shown at session start."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from goat_core.contract import Scope
from goat_core.host import GoatHome, MemoryHost
from goat_core.plugins import PluginSettings, Registry
from goat_core.serve import ServedScope, build_server, resolve_serve_scope
from goat_core.serve._session import SessionLedger
from goat_core.serve._tools import HOOK_TOOL

from .conftest import goat, run_hook

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client(home: Path) -> AsyncIterator[Client]:
    registry = Registry.load(PluginSettings(strict=True))
    async with MemoryHost(home=GoatHome.at(home), registry=registry) as host:
        await host.bind(Scope.pen("p"), "markdown", {})
        served = ServedScope(host, resolve_serve_scope(registry, pen="p"))
        async with Client(build_server(served)) as c:
            yield c


async def _context(client: Client, **args: Any) -> str:
    result = await client.call_tool(HOOK_TOOL, {"event": "UserPromptSubmit", **args})
    assert not result.is_error
    (block,) = result.content
    output = json.loads(block.text)["hookSpecificOutput"]
    assert output["hookEventName"] == args.get("event", "UserPromptSubmit")
    return str(output["additionalContext"])


async def test_the_hook_tool_is_callable_and_never_listed(client: Client) -> None:
    names = [t.name for t in (await client.list_tools()).tools]
    assert HOOK_TOOL not in names and "recall" in names
    await client.call_tool("remember", {"text": "the kingfisher perches on the third post"})
    context = await _context(client, prompt="where does the kingfisher perch?", session_id="s")
    assert "third post" in context and "untrusted quoted data" in context


async def test_a_session_is_never_given_the_same_note_twice(client: Client) -> None:
    await client.call_tool("remember", {"text": "the heron fishes at dawn", "title": "Heron"})
    ask = "when does the heron fish?"
    assert "fishes at dawn" in await _context(client, prompt=ask, session_id="one")
    assert await _context(client, prompt=ask, session_id="one") == ""
    assert "fishes at dawn" in await _context(client, prompt=ask, session_id="two")
    # a changed note is new to the session
    await client.call_tool("remember", {"text": "the heron fishes at dusk too"})
    again = await _context(client, prompt=ask, session_id="one")
    assert "dusk" in again and "fishes at dawn" not in again


async def test_without_a_session_id_every_prompt_gets_its_notes(client: Client) -> None:
    await client.call_tool("remember", {"text": "the wren sings in the hedge"})
    for _ in range(2):
        assert "hedge" in await _context(client, prompt="where does the wren sing?")


async def test_bad_hook_input_gives_no_context_and_no_error(client: Client) -> None:
    assert await _context(client, prompt=42) == ""
    assert await _context(client, prompt="x y z", budget=-1) == ""
    result = await client.call_tool(HOOK_TOOL, {"event": "Stop"})
    assert json.loads(result.content[0].text) == {}


async def test_session_start_gives_the_receipt_of_goat_scope(client: Client, home: Path) -> None:
    receipt = await _context(client, event="SessionStart", session_id="s")
    resource = json.loads((await client.read_resource("goat://scope")).contents[0].text)
    assert receipt == resource["receipt"]
    assert receipt.splitlines() == [
        "GOAT memory: Pen `p` memory (pen:p), named when the server started (--pen).",
        f"GOAT home: {home} (from given).",
        "Memory: bound to markdown; use the recall and remember tools.",
    ]


def test_the_session_start_hook_gives_the_servers_receipt(home: Path, tmp_path: Path) -> None:
    """The command hook (SessionStart has no mcp_tool hooks in Claude Code) resolves and
    words the scope as the server does: an unbound derived Pen, with the bind command."""
    project = tmp_path / "heron-project"
    project.mkdir()
    payload = {"hook_event_name": "SessionStart", "cwd": str(project), "source": "startup"}
    out, err, code = run_hook(home, payload)
    assert code == 0, err
    output = out["hookSpecificOutput"]
    assert output["hookEventName"] == "SessionStart"
    lines = output["additionalContext"].splitlines()
    assert (
        lines[0].startswith("GOAT memory: Pen `heron-project-")
        and "derived from the folder" in lines[0]
    )
    assert lines[1] == f"GOAT home: {home} (from $GOAT_HOME)."
    pen = lines[0].split("`")[1]
    assert lines[2] == (
        f"Memory: none; pen:{pen} is not bound. Bind it: "
        f"`goat bind --pen {pen} markdown --home {home}`."
    )
    goat(home, "bind", "--pen", pen, "markdown")
    out, err, code = run_hook(home, payload)
    assert out["hookSpecificOutput"]["additionalContext"].splitlines()[2] == (
        "Memory: bound to markdown; use the recall and remember tools."
    )


def test_the_receipt_warns_of_an_unbound_pen_in_the_platform_default_home(tmp_path: Path) -> None:
    from goat_core.serve._receipt import scope_receipt
    from goat_core.serve._scope import ServeScope

    home = GoatHome(tmp_path / "c", tmp_path / "d", source="platform default")
    text = scope_receipt(
        ServeScope(Scope.pen("x"), "--pen"),
        home,
        label="Pen `x` memory",
        bound=False,
        available=False,
        reason=None,
        provider=None,
    )
    assert text.splitlines()[-1].startswith("Warning: this is the platform's default GOAT home")


def test_the_ledger_is_bounded_and_forgets_idle_sessions() -> None:
    now = [0.0]
    ledger = SessionLedger(max_sessions=2, max_items=3, ttl=10.0, clock=lambda: now[0])
    ledger.add("a", ["1", "2", "3", "4"])
    assert ledger.given("a") == {"2", "3", "4"}  # the least recently given went first
    ledger.add("b", ["x"])
    ledger.add("c", ["y"])  # a third session pushes out the least recently used
    assert ledger.given("a") == frozenset() and len(ledger) == 2
    now[0] = 11.0
    assert ledger.given("b") == frozenset() and len(ledger) == 0


@pytest.mark.parametrize("event", [{"x": 1}, [1, 2], 5, "x" * 200_000, "Stop"])
async def test_an_event_it_does_not_know_gets_an_empty_answer(client: Client, event: Any) -> None:
    """The exact inputs: events that are an object, a list, a number, 200 KB, ``Stop``
    (each came back verbatim as hookEventName)."""
    result = await client.call_tool(HOOK_TOOL, {"event": event, "prompt": "x y z"})
    assert json.loads(result.content[0].text) == {}


async def test_an_unexpanded_session_placeholder_is_no_session(client: Client) -> None:
    await client.call_tool("remember", {"text": "the egret wades at the shore"})
    ask = "where does the egret wade?"
    for _ in range(2):  # each prompt gets the note: "${session_id}" is no shared session
        assert "shore" in await _context(client, prompt=ask, session_id="${session_id}")


async def test_a_note_cut_by_the_budget_is_given_again(client: Client) -> None:
    note = "the egret " + "wades at the far shore " * 60
    await client.call_tool("remember", {"text": note})
    ask = "where does the egret wade?"
    cut = await _context(client, prompt=ask, session_id="s", budget=600)
    assert "truncated" in cut and note.strip() not in cut
    whole = await _context(client, prompt=ask, session_id="s", budget=100_000)
    assert note.strip() in whole


async def test_an_oversized_hook_input_gets_no_context(client: Client) -> None:
    await client.call_tool("remember", {"text": "the egret wades at the shore"})
    assert await _context(client, prompt="egret " * 300_000, session_id="s") == ""


def test_a_bad_pin_is_said_at_session_start(home: Path, tmp_path: Path) -> None:
    """The exact input: ``GOAT_PIN=globl`` (the SessionStart context was empty)."""
    from .conftest import goat_env

    payload = {"hook_event_name": "SessionStart", "cwd": str(tmp_path)}
    out, _err, code = run_hook(home, payload, env=goat_env(home, GOAT_PIN="globl"))
    context = out["hookSpecificOutput"]["additionalContext"]
    assert code == 0 and context.startswith("GOAT memory: unavailable: ScopeError: pin 'globl'")
