"""The server's edges as a host meets them: an unknown tool is JSON-RPC -32602, every tool
declares the ``outputSchema`` its results match, input schemas keep to the dialect Gemini
CLI takes, a corrupt ``memory.json`` is named as such, the GOAT home read is named, and
SIGINT stops ``goat serve``."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from goat_core.contract import Scope
from goat_core.host import GoatHome, MemoryHost
from goat_core.plugins import PluginSettings, Registry
from goat_core.serve import ServedScope, build_server, resolve_serve_scope
from goat_core.serve._local import socket_path
from goat_core.serve._schemas import dialect_problems, output_schema

from .conftest import GOAT, goat, goat_env

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def host(home: Path) -> AsyncIterator[MemoryHost]:
    registry = Registry.load(PluginSettings(strict=True))
    async with MemoryHost(home=GoatHome.at(home, source="--home"), registry=registry) as h:
        yield h


Connect = Callable[..., Any]


@pytest.fixture
def connect(host: MemoryHost) -> Connect:
    @asynccontextmanager
    async def _connect(**scope: Any) -> AsyncIterator[Client]:
        served = ServedScope(host, resolve_serve_scope(host.registry, **scope))
        async with Client(build_server(served)) as client:
            yield client

    return _connect


async def test_an_unknown_tool_is_invalid_params(connect: Connect) -> None:
    """``tools/call`` of ``forget`` (no such tool) is the spec's -32602, not a tool result."""
    async with connect(global_=True) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("forget", {"page": "x"})
    assert caught.value.error.code == -32602
    assert "Unknown tool: 'forget'" in caught.value.error.message


async def test_an_unknown_tool_of_an_unbound_pen_is_invalid_params(connect: Connect) -> None:
    async with connect(pen="nobody") as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("pages", {})
    assert caught.value.error.code == -32602


def _check(tool: Any, result: Any) -> None:
    assert tool.output_schema is not None, tool.name
    jsonschema.validate(result.structured_content, tool.output_schema)


async def test_every_result_matches_its_declared_output_schema(
    connect: Connect, host: MemoryHost
) -> None:
    """Success and failure of each tool, against the ``outputSchema`` it lists."""
    await host.bind(Scope.pen("w"), "wiki", {})
    calls: dict[str, list[dict[str, Any]]] = {
        "remember": [{"text": "the heron nests by the weir", "title": "Heron"}, {"text": ""}],
        "recall": [{"query": "heron"}, {"query": "nothing matches zqx"}, {"query": ""}],
        "feedback": [{"text": "right", "on": "Heron.md"}, {"text": ""}],
        "pages": [{"limit": 1}, {"limit": 0}],
        "show": [{"page": "Heron"}, {"page": "no such page"}],
    }
    seen: set[str] = set()
    for scope in ({"global_": True}, {"pen": "w"}):
        async with connect(**scope) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            for name, tool in tools.items():
                for args in calls.get(name, [{}]):
                    result = await client.call_tool(name, args)
                    _check(tool, result)
                    seen.add(f"{name}:{'error' if result.is_error else 'ok'}")
    for name in calls:
        assert {f"{name}:ok", f"{name}:error"} <= seen, seen
    async with connect(pen="unbound") as client:
        for tool in (await client.list_tools()).tools:
            _check(tool, await client.call_tool(tool.name, {"query": "x", "text": "x"}))


async def test_input_schemas_keep_to_the_dialect_every_host_takes(
    connect: Connect, host: MemoryHost
) -> None:
    """No type array (``["string", "null"]``), no ``null`` type, no keyword outside
    Gemini's function-declaration schema, in any tool of a markdown, wiki or unbound scope."""
    await host.bind(Scope.pen("w"), "wiki", {})
    for scope in ({"global_": True}, {"pen": "w"}, {"pen": "unbound"}):
        async with connect(**scope) as client:
            for tool in (await client.list_tools()).tools:
                assert list(dialect_problems(tool.input_schema)) == [], tool.name


def test_the_dialect_check_names_a_type_array() -> None:
    schema = {"type": "object", "properties": {"c": {"type": ["string", "null"]}}}
    assert list(dialect_problems(schema)) == [
        "c: type array ['string', 'null'] (one type per schema)"
    ]


def test_a_provider_tool_declares_scope_and_error() -> None:
    schema = output_schema("wiki_lint")
    assert schema["required"] == ["scope"] and "error" in schema["properties"]


async def test_the_scope_resource_and_instructions_name_the_home(
    connect: Connect, home: Path
) -> None:
    async with connect(pen="unbound") as client:
        scope = json.loads((await client.read_resource("goat://scope")).contents[0].text)
        instructions = client.instructions or ""
        r = await client.call_tool("recall", {"query": "x"})
    assert scope["home"] == str(home) and scope["home_source"] == "--home"
    assert f"GOAT home {home} (from --home)" in instructions
    message = r.structured_content["error"]["message"]
    assert f"not bound in the GOAT home {home} (from --home)" in message
    assert f"`goat bind --pen unbound markdown --home {home}`" in message


def test_a_corrupt_memory_json_is_named_and_never_called_unbound(home: Path) -> None:
    """The exact input: ``memory.json`` holding ``{bad``. The server says it is not valid
    JSON and never "bind it" (binding would overwrite the user's other bindings); the
    file is left as it was."""
    goat(home, "bind", "--pen", "a", "markdown")
    (home / "memory.json").write_text("{bad")
    script = (
        "import anyio, json, sys\n"
        "from mcp import Client\n"
        "from mcp.client.stdio import StdioServerParameters\n"
        "async def main():\n"
        f"    p = StdioServerParameters(command={GOAT!r}, args=['serve', '--home', {str(home)!r},"
        " '--pen', 'a'])\n"
        "    async with Client(p) as c:\n"
        "        s = json.loads((await c.read_resource('goat://scope')).contents[0].text)\n"
        "        r = await c.call_tool('recall', {'query': 'x'})\n"
        "        print(json.dumps([s, r.structured_content]))\n"
        "anyio.run(main)\n"
    )
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    scope, result = json.loads(proc.stdout)
    for message in (scope["reason"], result["error"]["message"], scope["receipt"]):
        assert "memory.json is not valid JSON" in message, message
        assert "not bound" not in message and "goat bind" not in message
    assert (home / "memory.json").read_text() == "{bad"
    _out, err, code = _hook(home, "what is x?")
    assert code == 0 and "not valid JSON" in err, err


def _hook(home: Path, prompt: str) -> tuple[str, str, int]:
    proc = subprocess.run(
        [GOAT, "hook", "claude-code", "--pin", "pen:a"],
        input=json.dumps({"prompt": prompt}),
        env=goat_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc.stdout, proc.stderr, proc.returncode


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_goat_serve_and_removes_its_socket(
    home: Path, signum: signal.Signals
) -> None:
    goat(home, "bind", "--pen", "a", "markdown")
    proc = subprocess.Popen(
        [GOAT, "serve", "--pen", "a"],
        env=goat_env(home),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    path = socket_path(home / "data", Scope.pen("a"))
    assert path is not None
    try:
        deadline = time.monotonic() + 30
        while not path.exists():
            assert time.monotonic() < deadline, "the server never opened its socket"
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.1)
        proc.send_signal(signum)
        code = proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == -signum
    assert not path.exists()


@pytest.mark.parametrize("limit", ["5", True, 5.0, None])
async def test_arguments_keep_their_json_types(connect: Connect, limit: Any) -> None:
    """The exact input: recall with ``limit`` ``"5"``, ``true``, ``5.0`` or ``null``."""
    async with connect(global_=True) as client:
        r = await client.call_tool("recall", {"query": "x", "limit": limit})
    assert r.is_error and r.structured_content["error"]["type"] == "BadInput"
    assert "limit" in r.structured_content["error"]["message"]


def test_a_home_that_does_not_exist_is_named_and_never_made(tmp_path: Path) -> None:
    """The exact input: ``goat serve --home /tmp/.../typo --pen a`` (a mistyped home)."""
    typo = tmp_path / "typo"
    script = (
        "import anyio, json\n"
        "from mcp import Client\n"
        "from mcp.client.stdio import StdioServerParameters\n"
        "async def main():\n"
        f"    p = StdioServerParameters(command={GOAT!r}, args=['serve', '--home', {str(typo)!r},"
        " '--pen', 'a'])\n"
        "    async with Client(p) as c:\n"
        "        s = json.loads((await c.read_resource('goat://scope')).contents[0].text)\n"
        "        r = await c.call_tool('recall', {'query': 'x'})\n"
        "        print(json.dumps([s['receipt'], r.structured_content['error']['message']]))\n"
        "anyio.run(main)\n"
    )
    import sys

    command = [sys.executable, "-c", script]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    receipt, message = json.loads(proc.stdout)
    assert f"GOAT home: {typo} (from --home), which does not exist" in receipt
    assert f"not bound in the GOAT home {typo} (from --home) (which does not exist)" in message
    assert not typo.exists()


def test_a_pin_that_is_no_pen_id_is_never_offered_as_one() -> None:
    from goat_core.errors import ScopeError
    from goat_core.serve._scope import parse_pin

    with pytest.raises(ScopeError, match=r"\(e\.g\. pen:my-project\)"):
        parse_pin("bogus!")
    with pytest.raises(ScopeError, match=r"\(e\.g\. pen:docs\)"):
        parse_pin("docs")
