"""The MCP server is one more surface of the one policy path (docs/design.md, Policy path):
a policy that refuses every write and one that hides every read hold for every tool and
resource it serves, a provider's extra tools (the wiki's) included."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from goat_core.contract import Scope
from goat_core.host import GoatHome, MemoryHost
from goat_core.plugins import PluginSettings, Registry, register_plugin
from goat_core.serve import ServedScope, build_server, resolve_serve_scope
from goat_core.testing import HideReads, RefuseWrites

pytestmark = pytest.mark.anyio
HAS_WIKI = importlib.util.find_spec("goat_wiki") is not None


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def served(home: Path, *policies: object, **scope: Any) -> AsyncIterator[Client]:
    registry = Registry.load(PluginSettings(strict=True))
    for i, policy in enumerate(policies):
        assert register_plugin(registry.pm, policy, f"policy{i}")
    async with MemoryHost(home=GoatHome.at(home), registry=registry) as host:
        if "pen" in scope:
            await host.bind(Scope.pen(scope["pen"]), scope.pop("provider", "markdown"), {})
        served_scope = ServedScope(host, resolve_serve_scope(host.registry, **scope))
        async with Client(build_server(served_scope), mode="legacy") as client:
            yield client


async def _seed(home: Path, **scope: Any) -> str:
    async with served(home, **scope) as client:
        r = await client.call_tool(
            "remember", {"text": "Quokkas sleep through the day.", "title": "Quokka"}
        )
        assert not r.is_error and r.structured_content["status"] == "stored", r.content
        return str(r.structured_content["id"])


async def test_writes_refused_through_mcp(home: Path) -> None:
    refuse = RefuseWrites()
    await _seed(home, global_=True)
    async with served(home, refuse, global_=True) as client:
        r = await client.call_tool("remember", {"text": "Refused words."})
        assert r.structured_content["status"] == "rejected"
        assert r.structured_content["reason"] == "writes are off"
        r = await client.call_tool("feedback", {"text": "Refused feedback."})
        assert r.structured_content["status"] == "rejected"
        assert refuse.seen == ["Refused words.", "Refused feedback."]
        r = await client.call_tool("recall", {"query": "quokkas"})
        assert r.structured_content["items"]  # a write-only policy leaves reads alone
    notes = sorted(p.name for p in (home / "data").rglob("*.md"))
    assert notes == ["Quokka.md"]


async def test_reads_hidden_through_mcp(home: Path) -> None:
    page_id = await _seed(home, global_=True)
    async with served(home, HideReads(), global_=True) as client:
        r = await client.call_tool("recall", {"query": "quokkas"})
        assert not r.is_error and r.structured_content["items"] == []
        r = await client.call_tool("pages", {})
        assert r.structured_content["items"] == [] and r.structured_content["complete"] is False
        r = await client.call_tool("show", {"page": page_id})
        assert r.is_error and r.structured_content["error"]["type"] == "NotFound"
        uris = [str(x.uri) for x in (await client.list_resources()).resources]
        assert not [u for u in uris if u.startswith("goat://page/")]
        with pytest.raises(Exception):  # noqa: B017 - the SDK's error type for a failed read
            await client.read_resource(f"goat://page/{page_id.replace(' ', '%20')}")


@pytest.mark.skipif(not HAS_WIKI, reason="goat-wiki is not installed in this environment")
async def test_a_providers_extra_tools_follow_the_policy_through_mcp(home: Path) -> None:
    refuse = RefuseWrites()
    async with served(home, pen="w", provider="wiki") as client:
        r = await client.call_tool(
            "wiki_write_page", {"title": "concepts/Quokka", "body": "A quokka naps by day."}
        )
        assert not r.is_error and r.structured_content["status"] == "stored", r.content
    async with served(home, refuse, pen="w", provider="wiki") as client:
        r = await client.call_tool("wiki_write_page", {"title": "New", "body": "Secret plan."})
        assert r.structured_content["status"] == "rejected"
        assert refuse.seen == ["Secret plan."]
    async with served(home, HideReads(), pen="w", provider="wiki") as client:
        r = await client.call_tool("wiki_search", {"query": "quokka"})
        assert r.structured_content["items"] == []
        r = await client.call_tool("wiki_list_pages", {})
        assert r.structured_content["items"] == []
        r = await client.call_tool("wiki_read_page", {"page": "concepts/Quokka"})
        assert r.is_error
        assert "naps by day" not in json.dumps(r.structured_content)
