"""The one policy path for a provider's extras (docs/design.md, Policy path): extra model
tools and provider operations get a PolicyGate, declare read or write, and are held to it."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from goat_core import hookimpl
from goat_core.contract import (
    Access,
    MemoryWrite,
    ModelTool,
    PageSummary,
    PolicyGate,
    ProviderOperation,
    RecallResult,
    Receipt,
    Scope,
)
from goat_core.errors import ConfigError, NotSupported
from goat_core.host import Chat, GoatHome, MemoryHost, memory_tools
from goat_core.plugins import register_plugin
from goat_core.testing import HideByName, RefuseWrites

HERE = Path(__file__).parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import reference_provider as ref  # noqa: E402

pytestmark = pytest.mark.anyio
OBJ = {"type": "object", "properties": {}, "additionalProperties": False}


class Shout:
    @hookimpl
    def goat_inspect_remember(self, scope: Scope, write: MemoryWrite) -> MemoryWrite | None:
        return write.model_copy(update={"text": write.text.upper()})


class HideAll:
    @hookimpl
    def goat_filter_browse(
        self, scope: Scope, items: Sequence[PageSummary]
    ) -> Sequence[PageSummary] | None:
        return []


def _plugin(tools: Sequence[ModelTool] = (), ops: Sequence[ProviderOperation] = ()) -> Any:
    cls = type(
        "ExtrasProvider",
        (ref.ReferenceProvider,),
        {"model_tools": lambda self: list(tools), "operations": lambda self: list(ops)},
    )
    _spec, plugin = ref._make("markdown", cls)
    return plugin


async def _host(tmp_path: Path, plugin: Any, *policies: object) -> MemoryHost:
    registry = ref.make_registry(plugin)
    for i, policy in enumerate(policies):
        assert register_plugin(registry.pm, policy, f"policy{i}")
    return MemoryHost(home=GoatHome.at(tmp_path), registry=registry)


async def _noop(arguments: dict[str, Any], gate: PolicyGate) -> dict[str, Any]:
    return {"ok": True}


async def test_an_extra_without_access_is_refused_at_registration(tmp_path: Path) -> None:
    host = await _host(tmp_path, _plugin([ModelTool("plain", "d", OBJ, _noop)]))
    with pytest.raises(ConfigError, match="declares no access"):
        memory_tools(host.context_for(Chat()))
    await host.aclose()


async def test_read_only_and_write_disagreeing_is_refused(tmp_path: Path) -> None:
    tool = ModelTool("mixed", "d", OBJ, _noop, read_only=True, access=Access.WRITE)
    host = await _host(tmp_path, _plugin([tool]))
    with pytest.raises(ConfigError, match="read_only but declares access 'write'"):
        memory_tools(host.context_for(Chat()))
    await host.aclose()


async def test_annotations_follow_the_declared_access(tmp_path: Path) -> None:
    tools = [
        ModelTool("peek", "d", OBJ, _noop, access=Access.READ),
        ModelTool("put", "d", OBJ, _noop, access=Access.WRITE, destructive=True),
    ]
    host = await _host(tmp_path, _plugin(tools))
    defs = {d.name: d for d in memory_tools(host.context_for(Chat())).definitions}
    assert defs["peek"].annotations == {"readOnlyHint": True, "destructiveHint": False}
    assert defs["put"].annotations == {"readOnlyHint": False, "destructiveHint": True}
    await host.aclose()


async def test_a_read_that_passes_no_read_policy_is_not_shown(tmp_path: Path) -> None:
    async def leak(arguments: dict[str, Any], gate: PolicyGate) -> dict[str, Any]:
        return {"secret": "shown without any filter"}

    host = await _host(tmp_path, _plugin([ModelTool("leak", "d", OBJ, leak, access=Access.READ)]))
    out = await memory_tools(host.context_for(Chat())).call("leak", {})
    assert out["error"]["type"] == "ConfigError"
    assert "passed no read policy" in out["error"]["message"]
    assert "secret" not in str(out)
    await host.aclose()


async def test_a_read_that_tries_to_write_is_refused(tmp_path: Path) -> None:
    async def sneaky(arguments: dict[str, Any], gate: PolicyGate) -> dict[str, Any]:
        gate.inspect(MemoryWrite(text="x"))
        return {}

    tool = ModelTool("sneaky", "d", OBJ, sneaky, access=Access.READ)
    host = await _host(tmp_path, _plugin([tool]))
    out = await memory_tools(host.context_for(Chat())).call("sneaky", {})
    assert out["error"]["type"] == "ConfigError" and "tried to write" in out["error"]["message"]
    await host.aclose()


async def test_a_write_passes_inspect_with_its_exact_text(tmp_path: Path) -> None:
    refuse = RefuseWrites()
    stored: list[str] = []

    async def put(arguments: dict[str, Any], gate: PolicyGate) -> dict[str, Any]:
        async def store(write: MemoryWrite) -> dict[str, Any]:
            stored.append(write.text)
            return {"status": "stored"}

        result = await gate.write(MemoryWrite(text=arguments["text"]), store)
        return result.to_json() if isinstance(result, Receipt) else result

    schema = {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": False,
    }
    tool = ModelTool("put", "d", schema, put, access=Access.WRITE)
    host = await _host(tmp_path, _plugin([tool]), refuse)
    out = await memory_tools(host.context_for(Chat())).call("put", {"text": "the words"})
    assert out["status"] == "rejected" and out["reason"] == "writes are off"
    assert refuse.seen == ["the words"] and stored == []
    await host.aclose()

    host = await _host(tmp_path, _plugin([tool]), Shout())
    out = await memory_tools(host.context_for(Chat())).call("put", {"text": "the words"})
    assert out == {"status": "stored"} and stored == ["THE WORDS"]  # the inspected text
    await host.aclose()


async def test_a_read_extra_is_filtered(tmp_path: Path) -> None:
    host = await _host(tmp_path, ref._make("markdown", ref.ReferenceProvider)[1], HideAll())
    ctx = host.context_for(Chat())
    await ctx.remember("one note", title="One")
    tools = memory_tools(ctx)
    assert "count_notes" in tools.names
    assert await tools.call("count_notes", {}) == {"count": 0}
    await host.aclose()


async def test_operations_run_through_the_gate(tmp_path: Path) -> None:
    seen: ClassVar[list[str]] = []

    async def show(gate: PolicyGate, ref_: str) -> tuple[PageSummary, ...]:
        seen.append(gate.scope.key)
        return gate.browse([PageSummary(id=ref_, title=ref_)])

    async def unfiltered(gate: PolicyGate) -> str:
        return "raw"

    ops = [
        ProviderOperation("show", Access.READ, show),
        ProviderOperation("unfiltered", Access.READ, unfiltered),
        ProviderOperation("undeclared", None, unfiltered),  # type: ignore[arg-type]
    ]
    host = await _host(tmp_path, _plugin(ops=ops), HideAll())
    ctx = host.context_for(Chat())
    assert await ctx.run_operation("show", "a.md") == ()
    assert seen == ["global"]
    with pytest.raises(ConfigError, match="passed no read policy"):
        await ctx.run_operation("unfiltered")
    with pytest.raises(ConfigError, match="declares no access"):
        await ctx.run_operation("undeclared")
    with pytest.raises(NotSupported, match="no operation 'nope'"):
        await ctx.run_operation("nope")
    await host.aclose()


class EmptyRecall:
    @hookimpl
    def goat_filter_recall(
        self, scope: Scope, query: str, result: RecallResult
    ) -> RecallResult | None:
        return result.model_copy(update={"items": ()})


async def test_reflect_passes_the_recall_policy(tmp_path: Path) -> None:
    """An answer based on items the policy hides is withheld, and says why."""
    plugin = ref._make("markdown", ref.ReferenceProvider)[1]
    host = await _host(tmp_path, plugin)
    await host.context_for(Chat()).remember("the ferry leaves at nine", title="Ferry")
    open_answer = await host.context_for(Chat()).reflect("when does the ferry leave?")
    assert open_answer.text and open_answer.based_on
    await host.aclose()

    host = await _host(tmp_path, plugin, EmptyRecall())
    answer = await host.context_for(Chat()).reflect("when does the ferry leave?")
    assert answer.text == "" and answer.based_on == ()
    assert any("hidden by policy; the answer is withheld" in d for d in answer.degraded)
    tool = await memory_tools(host.context_for(Chat())).call(
        "reflect", {"query": "when does the ferry leave?"}
    )
    assert tool["text"] == "" and "nine" not in str(tool)
    await host.aclose()


async def test_connections_leave_out_links_to_and_from_hidden_pages(tmp_path: Path) -> None:
    """As link_map drops a hidden page's edges, connections drops its links and says so."""
    plugin = ref._make("markdown", ref.ReferenceProvider)[1]
    host = await _host(tmp_path, plugin)
    ctx = host.context_for(Chat())
    await ctx.remember("see [[Secret plan]]", title="Visible")
    await ctx.remember("back to [[Visible]]", title="Secret plan")
    whole = await ctx.connections("Visible")
    assert whole.outgoing and whole.backlinks and whole.degraded == ()
    await host.aclose()

    class HideSecret:
        @hookimpl
        def goat_filter_browse(
            self, scope: Scope, items: Sequence[PageSummary]
        ) -> Sequence[PageSummary] | None:
            return [p for p in items if "secret" not in f"{p.id} {p.title}".casefold()]

    host = await _host(tmp_path, plugin, HideSecret())
    conns = await host.context_for(Chat()).connections("Visible")
    assert conns.outgoing == () and conns.backlinks == ()
    assert conns.degraded == ("2 links hidden by policy",)
    assert "secret" not in json.dumps(conns.to_json()).casefold()
    await host.aclose()


async def _seeded_secret(tmp_path: Path) -> tuple[Any, list[tuple[str, str, str]]]:
    """A Global reference store holding the pages ``Secret plan`` and ``Visible``; returns
    its plugin and the pages as (id, title, body)."""
    plugin = ref._make("markdown", ref.ReferenceProvider)[1]
    host = await _host(tmp_path, plugin)
    ctx = host.context_for(Chat())
    assert (await ctx.remember("launch code 1234", title="Secret plan")).status.value == "stored"
    assert (await ctx.remember("public notes", title="Visible")).status.value == "stored"
    pages = await _all_pages(host)
    await host.aclose()
    return plugin, pages


async def _all_pages(host: MemoryHost) -> list[tuple[str, str, str]]:
    ctx = host.context_for(Chat())
    listing = await ctx.list_pages(limit=1000)
    return sorted([(p.id, p.title, (await ctx.get_page(p.id)).body) for p in listing.items])


async def test_remember_onto_a_hidden_page_is_rejected_and_writes_nothing(
    tmp_path: Path,
) -> None:
    """``remember`` titled as a page the browse policy hides is a ``rejected`` receipt that
    says so, whatever the case of the title; the page keeps its text and no second page of
    that title appears. A visible title is written as before."""
    from goat_core.testing import HidePages

    plugin, before = await _seeded_secret(tmp_path)
    host = await _host(tmp_path, plugin, HidePages("Secret plan"))
    ctx = host.context_for(Chat())
    for title in ("Secret plan", "secret PLAN"):
        receipt = await ctx.remember("more secrets", title=title)
        assert receipt.status.value == "rejected", receipt
        assert receipt.reason == (
            f"a page titled {title!r} is hidden by policy and cannot be written through; "
            "nothing was written"
        )
    visible = await ctx.remember("more public notes", title="Visible")
    assert visible.status.value == "stored"
    await host.aclose()

    host = await _host(tmp_path, plugin)
    after = await _all_pages(host)
    await host.aclose()
    assert [p for p in after if p[1] == "Secret plan"] == [
        p for p in before if p[1] == "Secret plan"
    ]
    assert len(after) == len(before) + 1  # the reference store keeps each titled write


async def test_feedback_on_a_hidden_page_is_not_found_and_writes_nothing(
    tmp_path: Path,
) -> None:
    """``feedback`` on a page the browse policy hides answers as for a page that does not
    exist (``NotFound``, as ``show`` and ``forget`` do) and stores nothing; feedback on a
    visible page is stored."""
    from goat_core.errors import NotFound
    from goat_core.testing import HidePages

    plugin, before = await _seeded_secret(tmp_path)
    host = await _host(tmp_path, plugin, HidePages("Secret plan"))
    ctx = host.context_for(Chat())
    with pytest.raises(NotFound) as hidden:
        await ctx.feedback("it leaks", on="Secret plan")
    assert str(hidden.value) == "no page 'Secret plan' in Global memory"
    with pytest.raises(NotFound) as shown:
        await ctx.get_page("Secret plan")
    assert str(shown.value) == str(hidden.value)  # the answer ``show`` gives for it
    assert (await ctx.feedback("fine", on="Visible")).status.value == "stored"
    await host.aclose()

    host = await _host(tmp_path, plugin)
    after = await _all_pages(host)
    await host.aclose()
    assert not [p for p in after if p[2] == "it leaks"]
    assert [p for p in after if p[1] == "Secret plan"] == [
        p for p in before if p[1] == "Secret plan"
    ]
    assert [p for p in after if p[2] == "fine"]


async def test_the_model_tools_keep_writes_off_a_hidden_page(tmp_path: Path) -> None:
    """The ``remember`` and ``feedback`` tools answer as the API does: a ``rejected``
    receipt, and a ``NotFound`` tool error; the hidden page is unchanged."""
    from goat_core.testing import HidePages

    plugin, before = await _seeded_secret(tmp_path)
    host = await _host(tmp_path, plugin, HidePages("Secret plan"))
    tools = memory_tools(host.context_for(Chat()))
    out = await tools.call("remember", {"text": "more secrets", "title": "Secret plan"})
    assert out["status"] == "rejected" and "hidden by policy" in out["reason"]
    out = await tools.call("feedback", {"text": "it leaks", "on": "Secret plan"})
    assert out["error"]["type"] == "NotFound"
    assert out["error"]["message"] == "no page 'Secret plan' in Global memory"
    await host.aclose()
    host = await _host(tmp_path, plugin)
    assert await _all_pages(host) == before
    await host.aclose()


async def test_a_write_onto_a_hidden_page_needs_no_lookup_without_a_browse_policy(
    tmp_path: Path,
) -> None:
    """Without a ``goat_filter_browse`` plugin, a titled remember does not look the title
    up first, nor list the pages (a remote store pays no extra request)."""
    calls: list[str] = []

    class Counting(ref.ReferenceProvider):
        async def get_page(self, ref_: str) -> Any:
            calls.append(ref_)
            return await super().get_page(ref_)

        async def list_pages(self, *, limit: int = 50, cursor: str | None = None) -> Any:
            calls.append("list_pages")
            return await super().list_pages(limit=limit, cursor=cursor)

    plugin = ref._make("markdown", Counting)[1]
    host = await _host(tmp_path, plugin, Shout())  # a policy plugin that filters no browsing
    ctx = host.context_for(Chat())
    assert (await ctx.remember("x", title="T")).status.value == "stored"
    assert (await ctx.feedback("y", on="T")).status.value == "stored"
    assert calls == []
    await host.aclose()


def test_the_cli_keeps_writes_off_a_hidden_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``goat remember --title`` of a hidden page exits 5 saying why, ``goat feedback --on``
    it exits 3 as for a missing page, and the page is unchanged."""
    from click.testing import CliRunner

    from goat_core.cli import cli
    from goat_core.plugins import Registry
    from goat_core.testing import HidePages

    plugin = ref._make("markdown", ref.ReferenceProvider)[1]
    policies: list[object] = []

    def load(cls: type[Registry], settings: Any = None) -> Registry:
        return ref.make_registry(plugin, *policies)

    monkeypatch.setattr(Registry, "load", classmethod(load))
    monkeypatch.setenv("GOAT_HOME", str(tmp_path / "home"))

    def goat(*args: str) -> Any:
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)

    assert goat("remember", "launch code 1234", "--title", "Secret plan").exit_code == 0
    shown = goat("show", "Secret plan", "--json")
    assert shown.exit_code == 0, shown.output
    policies.append(HidePages("Secret plan"))

    remembered = goat("remember", "more secrets", "--title", "Secret plan")
    assert remembered.exit_code == 5, remembered.output
    assert "'Secret plan' is hidden by policy" in remembered.stderr
    feedback = goat("feedback", "it leaks", "--on", "Secret plan")
    assert feedback.exit_code == 3, feedback.output
    assert "no page 'Secret plan' in Global memory" in feedback.stderr

    policies.clear()
    assert goat("show", "Secret plan", "--json").stdout == shown.stdout
    pages = json.loads(goat("pages", "--json").stdout)
    assert [p["title"] for p in pages["items"]] == ["Secret plan"]


async def test_a_decoy_id_is_no_way_onto_a_hidden_page(tmp_path: Path) -> None:
    """A visible note whose ``id`` is the hidden page's title (the provider opens ids before
    titles) does not let ``remember`` titled as the hidden page through: ``rejected``, and
    no second page of that title appears; ``feedback`` on that name is ``NotFound``."""
    from goat_core.errors import NotFound

    plugin, _ = await _seeded_secret(tmp_path)
    store = tmp_path / "data" / "stores" / "global" / "notes.json"
    notes = json.loads(store.read_text("utf-8"))
    notes["notes"].append(
        {"id": "Secret plan", "title": "Decoy", "text": "d", "kind": "remember", "on": None,
         "source": "api", "tags": []}
    )  # fmt: skip
    store.write_text(json.dumps(notes), "utf-8")
    before = store.read_bytes()
    host = await _host(tmp_path, plugin, HideByName("Secret plan"))
    ctx = host.context_for(Chat())
    assert [p.title for p in (await ctx.list_pages()).items] == ["Decoy", "Visible"]
    receipt = await ctx.remember("INJECTED", title="Secret plan")
    assert receipt.status.value == "rejected", receipt
    assert receipt.reason == (
        "a page titled 'Secret plan' is hidden by policy and cannot be written through; "
        "nothing was written"
    )
    with pytest.raises(NotFound, match=r"^no page 'Secret plan' in Global memory$"):
        await ctx.feedback("INJECTED", on="Secret plan")
    await host.aclose()
    assert store.read_bytes() == before
