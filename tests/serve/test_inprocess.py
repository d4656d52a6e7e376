"""The MCP server in process (mcp.Client over the SDK's in-memory transports): every tool,
resource and annotation, both protocol revisions, scope isolation, bad input."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from goat_core.contract import Scope
from goat_core.host import MemoryHost
from goat_core.plugins import PluginSettings, Registry
from goat_core.serve import PROTOCOL_VERSIONS, ServedScope, build_server, resolve_serve_scope

pytestmark = pytest.mark.anyio

FORBIDDEN = {
    "scope",
    "pen",
    "pen_id",
    "project",
    "bank",
    "bank_id",
    "url",
    "path",
    "root",
    "folder",
    "directory",
    "store",
    "vault",
    "provider",
    "server",
    "endpoint",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def host(home: Path) -> AsyncIterator[MemoryHost]:
    from goat_core.host import GoatHome

    registry = Registry.load(PluginSettings(strict=True))
    async with MemoryHost(home=GoatHome.at(home), registry=registry) as h:
        yield h


Connect = Callable[..., Any]


@pytest.fixture
def connect(host: MemoryHost) -> Connect:
    @asynccontextmanager
    async def _connect(mode: str = "legacy", **scope: Any) -> AsyncIterator[Client]:
        served = ServedScope(host, resolve_serve_scope(host.registry, **scope))
        async with Client(build_server(served), mode=mode) as client:
            yield client

    return _connect


def _props(schema: Any) -> set[str]:
    out: set[str] = set()
    if isinstance(schema, dict):
        for name, sub in (schema.get("properties") or {}).items():
            out.add(name.lower())
            out |= _props(sub)
        for key in ("items", "additionalProperties"):
            out |= _props(schema.get(key))
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in schema.get(key) or ():
                out |= _props(sub)
        for sub in (schema.get("$defs") or {}).values():
            out |= _props(sub)
    return out


@pytest.mark.parametrize(
    "mode,version", [("auto", PROTOCOL_VERSIONS[0]), ("legacy", PROTOCOL_VERSIONS[1])]
)
async def test_both_protocol_versions_list_tools(connect: Connect, mode: str, version: str) -> None:
    async with connect(mode, global_=True) as client:
        assert client.protocol_version == version
        names = [t.name for t in (await client.list_tools()).tools]
    assert {"recall", "remember", "feedback", "pages", "show"} <= set(names)


async def test_annotations_tell_the_truth_and_no_scope_argument(connect: Connect) -> None:
    async with connect(global_=True) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for name, tool in tools.items():
        a = tool.annotations
        assert a is not None
        assert None not in (
            a.read_only_hint,
            a.destructive_hint,
            a.idempotent_hint,
            a.open_world_hint,
        )
        assert a.open_world_hint is False  # markdown declares no network use
        assert not (_props(tool.input_schema) & FORBIDDEN), name
    for name in ("recall", "pages", "show"):
        assert tools[name].annotations.read_only_hint is True
        assert tools[name].annotations.idempotent_hint is True
    for name in ("remember", "feedback"):
        a = tools[name].annotations
        assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint) == (False, False, False)


async def test_every_tool_and_resource_round_trips(connect: Connect, host: MemoryHost) -> None:
    async with connect(global_=True) as client:
        r = await client.call_tool(
            "remember", {"text": "The deploy key rotates every 90 days", "title": "Deploy notes"}
        )
        assert not r.is_error, r.content
        assert r.structured_content["scope"] == "global"
        assert r.structured_content["status"] == "stored"
        page_id = r.structured_content["id"]

        r = await client.call_tool("recall", {"query": "deploy key"})
        assert not r.is_error
        data = r.structured_content
        assert data["scope"] == "global" and data["complete"] is True and data["degraded"] == []
        assert data["items"][0]["id"] == page_id
        assert "rotates every 90 days" in data["items"][0]["text"]
        assert json.loads(r.content[0].text)["items"][0]["id"] == page_id

        r = await client.call_tool("feedback", {"text": "accurate", "on": page_id})
        assert not r.is_error and r.structured_content["scope"] == "global"

        r = await client.call_tool("pages", {"limit": 10})
        assert not r.is_error
        assert page_id in [p["id"] for p in r.structured_content["items"]]

        r = await client.call_tool("show", {"page": page_id})
        assert not r.is_error
        assert "rotates every 90 days" in r.structured_content["body"]

        uris = [str(x.uri) for x in (await client.list_resources()).resources]
        assert "goat://scope" in uris and f"goat://page/{page_id.replace(' ', '%20')}" in uris
        templates = (await client.list_resource_templates()).resource_templates
        assert templates[0].uri_template == "goat://page/{id}"

        scope = json.loads((await client.read_resource("goat://scope")).contents[0].text)
        assert scope["scope"] == "global" and scope["provider"] == "markdown"
        assert scope["label"] == "Global memory" and scope["how"] == "--global"

        page_uri = next(u for u in uris if u.startswith("goat://page/"))
        page = json.loads((await client.read_resource(page_uri)).contents[0].text)
        assert page["id"] == page_id and page["scope"] == "global"


async def test_pen_writes_are_invisible_through_other_scopes(
    connect: Connect, host: MemoryHost
) -> None:
    for pen in ("alpha", "beta"):
        await host.bind(Scope.pen(pen), "markdown", {})
    async with connect(pen="alpha") as client:
        r = await client.call_tool("remember", {"text": "zebra-crossing secret of alpha"})
        assert not r.is_error and r.structured_content["scope"] == "pen:alpha"
        r = await client.call_tool("recall", {"query": "zebra-crossing"})
        assert len(r.structured_content["items"]) == 1
    for scope in ({"pen": "beta"}, {"global_": True}):
        async with connect(**scope) as client:
            r = await client.call_tool("recall", {"query": "zebra-crossing"})
            assert not r.is_error
            assert r.structured_content["items"] == []
            pages = await client.call_tool("pages", {})
            assert pages.structured_content["items"] == []
            missing = await client.call_tool("show", {"page": "zebra-crossing secret of alpha"})
            assert missing.is_error and missing.structured_content["error"]["type"] == "NotFound"


async def test_unbound_pen_answers_how_to_bind_and_never_uses_global(connect: Connect) -> None:
    async with connect(global_=True) as client:
        await client.call_tool("remember", {"text": "global-only walrus fact"})
    async with connect(pen="unbound-pen") as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        assert tools == ["recall", "remember"]
        for name, args in (("recall", {"query": "walrus"}), ("remember", {"text": "x"})):
            r = await client.call_tool(name, args)
            assert r.is_error
            err = r.structured_content["error"]
            assert err["type"] == "ProviderUnavailable"
            assert "unbound-pen" in err["message"]
            assert "goat bind --pen unbound-pen" in err["message"]
            assert "walrus" not in json.dumps(r.structured_content)
        scope = json.loads((await client.read_resource("goat://scope")).contents[0].text)
        assert scope["available"] is False and scope["scope"] == "pen:unbound-pen"


async def test_binding_while_serving_takes_effect_next_call(
    connect: Connect, host: MemoryHost
) -> None:
    async with connect(pen="later") as client:
        assert (await client.call_tool("recall", {"query": "x"})).is_error
        await host.bind(Scope.pen("later"), "markdown", {})
        r = await client.call_tool("remember", {"text": "bound now"})
        assert not r.is_error and r.structured_content["scope"] == "pen:later"


def _count_notes(home: Path) -> int:
    return sum(1 for _ in (home / "data" / "stores").rglob("*.md"))


@pytest.mark.parametrize(
    "name,args,kind",
    [
        ("remember", {"text": "x" * 100_001}, "TooLarge"),
        ("remember", {"text": "y" * 1_100_000}, "BadInput"),
        ("remember", {"text": 42}, "BadInput"),
        ("remember", {"text": "ok", "title": ["not", "a", "string"]}, "BadInput"),
        ("remember", {"text": "ok", "scope": "pen:other"}, "BadInput"),
        ("recall", {"query": "x", "limit": "five"}, "BadInput"),
        ("recall", {}, "BadInput"),
        ("pages", {"limit": 0}, "BadInput"),
        ("show", {"page": ""}, "BadInput"),
    ],
)
async def test_bad_input_is_a_clear_tool_error_and_stores_nothing(
    connect: Connect, home: Path, name: str, args: dict[str, Any], kind: str
) -> None:
    async with connect(global_=True) as client:
        before = _count_notes(home)
        r = await client.call_tool(name, args)
    assert r.is_error
    assert r.structured_content["error"]["type"] == kind
    assert r.structured_content["scope"] == "global"
    assert r.content[0].text.startswith(f"{kind}: ")
    assert "Traceback" not in r.content[0].text
    assert _count_notes(home) == before


async def test_query_syntax_is_plain_text(connect: Connect) -> None:
    async with connect(global_=True) as client:
        await client.call_tool("remember", {"text": 'title:foo OR (bar AND "baz'})
        for query in ('title:foo OR (bar AND "baz', "NEAR(a b) * ^ -x", "a AND", '"'):
            r = await client.call_tool("recall", {"query": query})
            assert not r.is_error, (query, r.content)


async def test_roots_never_choose_the_scope_and_a_disagreement_is_logged(
    host: MemoryHost, tmp_path: Path
) -> None:
    import mcp_types
    from structlog.testing import capture_logs

    project = tmp_path / "elsewhere"
    project.mkdir()
    other = resolve_serve_scope(host.registry, from_dir=project, pin="").scope
    assert other != Scope.global_()
    listed: list[str] = []

    def roots_of(*folders: Path) -> Any:
        async def list_roots(context: Any) -> mcp_types.ListRootsResult:
            listed.append("asked")
            return mcp_types.ListRootsResult(
                roots=[
                    mcp_types.Root.model_validate({"uri": f.as_uri(), "name": f.name})
                    for f in folders
                ]
            )

        return list_roots

    async def checked(logs: list[Any]) -> None:  # the check runs after the handshake
        with anyio.fail_after(30):
            while not [e for e in logs if e["event"].startswith("serve.roots_")]:
                await anyio.sleep(0.02)

    served = ServedScope(host, resolve_serve_scope(host.registry, global_=True))
    with capture_logs() as logs:
        async with Client(
            build_server(served), mode="legacy", list_roots_callback=roots_of(project)
        ) as client:
            r = await client.call_tool("remember", {"text": "roots never pick the pen"})
            assert not r.is_error and r.structured_content["scope"] == "global"
            scope = json.loads((await client.read_resource("goat://scope")).contents[0].text)  # type: ignore[union-attr]
            assert scope["scope"] == "global" and scope["how"] == "--global"
            await checked(logs)
    assert listed  # the client was asked for its roots
    (warning,) = [e for e in logs if e["event"] == "serve.roots_disagree"]
    assert warning["log_level"] == "warning" and warning["scope"] == "global"
    assert warning["roots"] == [{"root": project.as_uri(), "scope": other.key}]

    # a root that resolves to the served scope: nothing to say
    pen = ServedScope(host, resolve_serve_scope(host.registry, from_dir=project))
    with capture_logs() as logs:
        async with Client(
            build_server(pen), mode="legacy", list_roots_callback=roots_of(tmp_path, project)
        ) as client:
            await client.list_tools()
            await checked(logs)
    assert [e["event"] for e in logs if e["event"].startswith("serve.roots_")] == [
        "serve.roots_agree"
    ]
