"""A scripted model drives the wiki through the host's tools: ingest (by the user), then the
model reads sources, writes pages, lints and queries. The tools are the ones a host hands a
model for one chat (``MemoryContext.tools()``): bound to one scope, validated on every call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from wiki_helpers import write_tree

import goat_wiki.plugin
from goat_core.contract import Scope
from goat_core.host import Chat, GoatHome, MemoryHost
from goat_core.plugins import PluginSettings, Registry, make_plugin_manager, register_plugin
from goat_wiki.provider import WikiProvider

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def registry() -> Registry:
    pm = make_plugin_manager(PluginSettings(autoload=False))
    assert register_plugin(pm, goat_wiki.plugin, "wiki")
    return Registry(pm)


class ScriptedModel:
    """A fake model: each step looks at what earlier tool calls returned and picks the next
    call, as a model would; every call and result is kept in :attr:`transcript`."""

    def __init__(self, tools: Any) -> None:
        self.tools = tools
        self.transcript: list[tuple[str, dict[str, Any], dict[str, Any]]] = []

    async def call(self, name: str, **args: Any) -> dict[str, Any]:
        result = await self.tools.call(name, args)
        self.transcript.append((name, args, result))
        return result

    async def ok(self, name: str, **args: Any) -> dict[str, Any]:
        result = await self.call(name, **args)
        assert "error" not in result, (name, args, result)
        return result


async def test_ingest_then_write_then_query(tmp_path: Path) -> None:
    host = MemoryHost(home=GoatHome.at(tmp_path / "home"), registry=registry())
    try:
        await host.bind(Scope.pen("research"), "wiki", {})
        context = host.context_for(Chat(project_id="research"))
        docs = write_tree(
            tmp_path / "papers",
            {
                "attention/readme.md": "Attention lets a model weigh every token of its input.",
                "rnn/readme.md": "Recurrent networks read tokens one at a time.",
            },
        )
        assert isinstance(context._provider, WikiProvider)
        ingested = await context.run_operation("ingest", docs)
        assert len(ingested["added"]) == 2

        tools = context.tools()
        defs = {d.name: d for d in tools.definitions}
        assert {
            "wiki_read_page",
            "wiki_write_page",
            "wiki_search",
            "wiki_list_pages",
            "wiki_lint",
            "wiki_ingest_status",
        } <= set(defs)
        assert defs["wiki_write_page"].annotations == {
            "readOnlyHint": False,
            "destructiveHint": True,
        }
        for name in (
            "wiki_read_page",
            "wiki_search",
            "wiki_list_pages",
            "wiki_lint",
            "wiki_ingest_status",
        ):
            assert defs[name].annotations["readOnlyHint"] is True

        model = ScriptedModel(tools)
        status = await model.ok("wiki_ingest_status")
        assert sorted(status["uncited"]) == ["papers/attention/readme.md", "papers/rnn/readme.md"]
        index = await model.ok("wiki_read_page", page="index")
        assert index["read_only"] is True
        for ident in status["uncited"]:
            source = await model.ok("wiki_read_page", page=f"raw/{ident}")
            topic = ident.split("/")[1].upper()
            await model.ok(
                "wiki_write_page",
                title=f"{topic} paper",
                section="source",
                body=f"{source['text']}\n\nRelated: [[concepts/Sequence models]].\n",
                summary=f"Summary of the {topic} readme",
                sources=[ident],
            )
        await model.ok(
            "wiki_write_page",
            title="Sequence models",
            section="concepts",
            body="Two ways to read tokens: [[sources/ATTENTION paper]] and "
            "[[sources/RNN paper]].\n",
            sources=status["uncited"],
        )
        lint = await model.ok("wiki_lint")
        assert [f for f in lint["findings"] if f["severity"] != "info"] == [], lint
        assert lint["complete"] is True

        # An update must carry the etag the model read.
        page = await model.ok("wiki_read_page", page="Sequence models")
        stale = await model.call("wiki_write_page", title="Sequence models", body="changed\n")
        assert stale["error"]["type"] == "Conflict"
        await model.ok(
            "wiki_write_page",
            title="Sequence models",
            body=page["body"] + "\nAttention replaced recurrence.\n",
            etag=page["etag"],
        )

        # Misbehaviour is refused with a typed error; nothing is written.
        refusals = [
            {"title": "../escape", "body": "x"},
            {"title": "x", "body": "x", "section": "../../outside"},
            {"title": "index", "body": "overwrite the index"},
            {"title": "log", "body": "rewrite history", "section": "concepts"},
            {"title": "tampered", "body": "x", "section": "raw"},
            {"title": "x", "body": "x", "path": "/etc/passwd"},
            {"title": "x", "body": "x", "sources": "not-a-list"},
        ]
        for args in refusals:
            result = await model.call("wiki_write_page", **args)
            assert result["error"]["type"] in {"BadInput", "PathError"}, (args, result)
        escape = await model.call("wiki_read_page", page="../../etc/passwd")
        assert escape["error"]["type"] in {"PathError", "NotFound"}

        # Query: the model's search tool and the core recall both find the written pages.
        found = await model.ok("wiki_search", query="replaced recurrence")
        assert found["items"][0]["id"] == "concepts/Sequence models.md"
        recalled = await model.ok("recall", query="weigh every token")
        assert "sources/ATTENTION paper.md" in [i["id"] for i in recalled["items"]]
        listed = await model.ok("wiki_list_pages")
        assert [i["id"] for i in listed["items"]] == [
            "concepts/Sequence models.md",
            "sources/ATTENTION paper.md",
            "sources/RNN paper.md",
        ]
        after = await model.ok("wiki_ingest_status")
        assert after["uncited"] == []
        final = await context._provider.lint()
        assert [f.code for f in final.findings if f.severity != "info"] == []
        root = context._provider.root
        log = (root / "log.md").read_text()
        assert log.count("## [") == 5  # ingest, three writes, one update
        assert not list(root.glob("escape*")) and not (root / "raw" / "tampered.md").exists()
    finally:
        await host.aclose()
