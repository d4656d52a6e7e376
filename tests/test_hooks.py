"""One test per hook spec, through :class:`Registry`, plus meta-tests that every hook is
tested, documented and typed (the datasette and pytest house rules; docs/design.md, Plugins
and hooks)."""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from pydantic import BaseModel

from goat_core import hookimpl, hookspecs
from goat_core.contract import (
    Binding,
    Capability,
    Derivation,
    MemoryWrite,
    PageSummary,
    Provider,
    ProviderContext,
    ProviderSpec,
    RecallItem,
    RecallResult,
    Receipt,
    ReceiptStatus,
    Scope,
    ScopeRequest,
    ScopeResolution,
)
from goat_core.errors import NotFound, Rejected, ScopeError
from goat_core.plugins import PluginSettings, Registry, make_plugin_manager, register_plugin

DOCS = Path(__file__).resolve().parents[1] / "docs" / "hooks.md"
PEN = Scope.pen("client-x")


def never_built(context: ProviderContext) -> Provider:
    raise AssertionError("this test declares a provider but never builds it")


@pytest.fixture
def reg() -> Registry:
    return Registry(make_plugin_manager(PluginSettings(autoload=False)))


def add(reg: Registry, plugin: object, name: str) -> None:
    assert register_plugin(reg.pm, plugin, name), reg.pm.failures


def spec(name: str) -> ProviderSpec:
    return ProviderSpec(
        name=name,
        display_name=name.title(),
        version="1.0",
        capabilities=frozenset({Capability.SCOPED_STORES}),
        settings_model=BaseModel,
        factory=never_built,
    )


def hook_failures(reg: Registry) -> dict[str, str]:
    return {f.plugin: f.error for f in reg.pm.failures if f.kind == "hook"}


def item(id_: str, score: float) -> RecallItem:
    return RecallItem(id=id_, title=id_, score=score, snippet=f"about {id_}")


# -- goat_register_providers -----------------------------------------------------------


def test_hook_goat_register_providers(reg: Registry) -> None:
    class Alpha:
        @hookimpl
        def goat_register_providers(self) -> list[ProviderSpec]:
            return [spec("alpha"), spec("shared")]

    class Beta:
        @hookimpl
        def goat_register_providers(self) -> list[ProviderSpec]:
            return [spec("beta"), spec("shared")]

    class Broken:
        @hookimpl
        def goat_register_providers(self) -> list[ProviderSpec]:
            raise RuntimeError("cannot declare")

    class WrongType:
        @hookimpl
        def goat_register_providers(self) -> list[str]:
            return ["not a spec"]

    for plugin, name in ((Alpha(), "alpha-plugin"), (Broken(), "broken"), (Beta(), "beta-plugin")):
        add(reg, plugin, name)
    add(reg, WrongType(), "wrong")
    providers = reg.providers()
    assert set(providers) == {"alpha", "beta", "shared"}
    assert reg.provider_owner("alpha") == "alpha-plugin"
    assert reg.provider_owner("beta") == "beta-plugin"
    assert reg.provider_owner("shared") == "alpha-plugin"  # the first registered wins
    failures = hook_failures(reg)
    assert failures["broken"] == "goat_register_providers: RuntimeError: cannot declare"
    duplicate = "provider 'shared' is already declared by plugin 'alpha-plugin'"
    assert duplicate in failures["beta-plugin"]
    assert "expected ProviderSpec, got str" in failures["wrong"]
    assert reg.get_provider("beta").display_name == "Beta"
    with pytest.raises(NotFound, match="no provider named 'gamma'"):
        reg.get_provider("gamma")


def test_hook_goat_register_embedders(reg: Registry) -> None:
    from goat_core.contract import EmbedderSpec

    def embedder(name: str) -> EmbedderSpec:
        return EmbedderSpec(
            name=name,
            dimensions=8,
            languages=("en",),
            source="test",
            factory=lambda cache: None,  # type: ignore[arg-type,return-value]
            available=lambda cache: True,
        )

    class One:
        @hookimpl
        def goat_register_embedders(self) -> list[EmbedderSpec]:
            return [embedder("small"), embedder("shared")]

    class Two:
        @hookimpl
        def goat_register_embedders(self) -> list[EmbedderSpec]:
            return [embedder("shared")]

    class WrongType:
        @hookimpl
        def goat_register_embedders(self) -> list[str]:
            return ["not a spec"]

    add(reg, One(), "one")
    add(reg, Two(), "two")
    add(reg, WrongType(), "wrong")
    assert set(reg.embedders()) == {"small", "shared"}
    failures = hook_failures(reg)
    assert "embedder 'shared' is already declared" in failures["two"]
    assert "expected EmbedderSpec, got str" in failures["wrong"]
    assert reg.get_embedder("small").dimensions == 8
    with pytest.raises(NotFound, match="no embedder named 'big'"):
        reg.get_embedder("big")


def test_hook_goat_register_rerankers(reg: Registry) -> None:
    """Rerankers are declared like embedders: by name, the first plugin keeping a name, a
    wrong type or a duplicate recorded against the plugin that made it."""
    from goat_core.contract import Reranker, RerankerSpec
    from goat_core.testing import rerankers

    class Two:
        @hookimpl
        def goat_register_rerankers(self) -> list[RerankerSpec]:
            return [rerankers.goat_register_rerankers()[0]]  # "overlap" again

    class WrongType:
        @hookimpl
        def goat_register_rerankers(self) -> list[str]:
            return ["not a spec"]

    add(reg, rerankers, "tests")
    add(reg, Two(), "two")
    add(reg, WrongType(), "wrong")
    assert set(reg.rerankers()) == {"overlap", "reverse", "failing", "slow", "absent"}
    failures = hook_failures(reg)
    assert "reranker 'overlap' is already declared" in failures["two"]
    assert "expected RerankerSpec, got str" in failures["wrong"]
    model = reg.get_reranker("overlap").factory(Path("unused"))
    assert isinstance(model, Reranker)
    assert list(model.rerank("red apple", ["an apple", "a red apple", "pear"])) == [1.0, 2.0, 0.0]
    with pytest.raises(NotFound, match=r"no reranker named 'big' is installed \(installed: "):
        reg.get_reranker("big")


@pytest.mark.parametrize("floor", [float("nan"), float("inf"), 1.5, -2.0, "0.3", True])
def test_an_embedder_spec_with_a_bad_semantic_floor_is_the_plugins_failure(
    reg: Registry, floor: object
) -> None:
    """``EmbedderSpec(semantic_floor=...)`` takes None or a finite number within [-1.2, 1.2]
    (a note's vector score: a cosine plus 0.2 times another); anything else is a ValueError,
    which the registry reports as the declaring plugin's failure."""
    from goat_core.contract import EmbedderSpec

    def spec(floor: object) -> EmbedderSpec:
        return EmbedderSpec(
            name="floored",
            dimensions=8,
            languages=("en",),
            source="test",
            factory=lambda cache: None,  # type: ignore[arg-type,return-value]
            available=lambda cache: True,
            semantic_floor=floor,  # type: ignore[arg-type]
        )

    assert spec(0.3).semantic_floor == 0.3 and spec(None).semantic_floor is None
    assert spec(-1.2).semantic_floor == -1.2 and spec(1).semantic_floor == 1

    class Bad:
        @hookimpl
        def goat_register_embedders(self) -> list[EmbedderSpec]:
            return [spec(floor)]

    add(reg, Bad(), "bad")
    assert reg.embedders() == {}
    assert "semantic_floor must be a number within [-1.2, 1.2]" in hook_failures(reg)["bad"]


# -- goat_resolve_scope ----------------------------------------------------------------


def test_hook_goat_resolve_scope(reg: Registry) -> None:
    calls: list[str] = []

    class Abstains:
        @hookimpl(tryfirst=True)
        def goat_resolve_scope(self, request: ScopeRequest) -> ScopeResolution | None:
            calls.append("abstains")
            return None

    class Pinner:
        @hookimpl
        def goat_resolve_scope(self, request: ScopeRequest) -> ScopeResolution | None:
            calls.append("pinner")
            if request.pin == "skip":
                return None
            return ScopeResolution(scope=Scope.pen("team"), derivation=Derivation.PINNED)

    add(reg, Abstains(), "abstains")
    add(reg, Pinner(), "pinner")
    # firstresult: the first non-None answer wins, the built-in (trylast) never runs
    assert reg.resolve_scope(ScopeRequest()).scope == Scope.pen("team")
    assert calls == ["abstains", "pinner"]
    # everyone abstains: the built-in resolver answers
    r = reg.resolve_scope(ScopeRequest(pin="skip"))
    assert (r.scope, r.derivation) == (Scope.pen("skip"), Derivation.PINNED)
    # a project id always decides: a plugin disagreeing is a ScopeError
    with pytest.raises(ScopeError, match="answered pen:team for a chat whose project id"):
        reg.resolve_scope(ScopeRequest(project_id="client-x"))


def test_resolve_scope_agreeing_plugin_and_bad_answers(reg: Registry) -> None:
    class Agrees:
        @hookimpl
        def goat_resolve_scope(self, request: ScopeRequest) -> Any:
            if request.project_id:
                return ScopeResolution(scope=Scope.pen("CLIENT-X"), derivation=Derivation.PROJECT)
            return "global"

    add(reg, Agrees(), "agrees")
    assert reg.resolve_scope(ScopeRequest(project_id="Client-X")).scope == PEN
    with pytest.raises(ScopeError, match="plugin 'agrees' returned str"):
        reg.resolve_scope(ScopeRequest())
    with pytest.raises(ScopeError, match="it is empty"):
        reg.resolve_scope(ScopeRequest(project_id=""))


# -- goat_register_commands ------------------------------------------------------------


def test_hook_goat_register_commands(reg: Registry) -> None:
    @click.group()
    def cli() -> None:
        pass

    @cli.command("status")
    def status() -> None:
        click.echo("core status")

    class Wiki:
        @hookimpl
        def goat_register_commands(self, cli: click.Group) -> None:
            @cli.group("wiki")
            def wiki() -> None:
                pass

            @wiki.command("lint")
            def lint() -> None:
                click.echo("wiki lint ok")

    class Hijack:
        @hookimpl
        def goat_register_commands(self, cli: click.Group) -> None:
            @cli.command("status")
            def status() -> None:
                click.echo("hijacked")

    class Broken:
        @hookimpl
        def goat_register_commands(self, cli: click.Group) -> None:
            raise RuntimeError("no commands today")

    add(reg, Wiki(), "wiki")
    add(reg, Hijack(), "hijack")
    add(reg, Broken(), "broken")
    reg.register_commands(cli)
    runner = CliRunner()
    assert runner.invoke(cli, ["wiki", "lint"]).output == "wiki lint ok\n"
    assert runner.invoke(cli, ["status"]).output == "core status\n"
    failures = hook_failures(reg)
    assert "command 'status' already exists and was not replaced" in failures["hijack"]
    assert "RuntimeError: no commands today" in failures["broken"]


# -- goat_inspect_remember -------------------------------------------------------------


def test_hook_goat_inspect_remember(reg: Registry) -> None:
    seen: list[tuple[str, str]] = []

    class Redact:
        @hookimpl(tryfirst=True)
        def goat_inspect_remember(self, scope: Scope, write: MemoryWrite) -> MemoryWrite:
            seen.append(("redact", write.text))
            return write.model_copy(update={"text": write.text.replace("sk-123", "[redacted]")})

    class Tagger:
        @hookimpl
        def goat_inspect_remember(self, scope: Scope, write: MemoryWrite) -> MemoryWrite:
            seen.append(("tagger", write.text))
            return write.model_copy(update={"tags": (*write.tags, scope.key)})

    class Watcher:
        @hookimpl(trylast=True)
        def goat_inspect_remember(self, write: MemoryWrite) -> None:  # fewer args is fine
            seen.append(("watcher", write.text))

    add(reg, Watcher(), "watcher")
    add(reg, Tagger(), "tagger")
    add(reg, Redact(), "redact")
    out = reg.inspect_remember(PEN, MemoryWrite(text="key sk-123"))
    assert out == MemoryWrite(text="key [redacted]", tags=("pen:client-x",))
    assert seen == [
        ("redact", "key sk-123"),
        ("tagger", "key [redacted]"),
        ("watcher", "key [redacted]"),
    ]


def test_inspect_remember_refusal_is_a_rejected_receipt(reg: Registry) -> None:
    class Refuser:
        @hookimpl
        def goat_inspect_remember(self, scope: Scope, write: MemoryWrite) -> MemoryWrite | None:
            if "password" in write.text:
                raise Rejected("refused", reason="the text contains a password")
            return None

    class Confused:
        @hookimpl
        def goat_inspect_remember(self, scope: Scope, write: MemoryWrite) -> MemoryWrite | None:
            if "scope" in write.text:
                raise ScopeError("wrong scope")
            return None

    add(reg, Refuser(), "refuser")
    add(reg, Confused(), "confused")
    assert reg.inspect_remember(PEN, MemoryWrite(text="fine")) == MemoryWrite(text="fine")
    with pytest.raises(Rejected) as info:
        reg.inspect_remember(PEN, MemoryWrite(text="my password is x"))
    receipt = Receipt(status=ReceiptStatus.REJECTED, reason=info.value.reason, scope=PEN.key)
    assert receipt.to_json()["reason"] == "the text contains a password"
    with pytest.raises(Rejected, match="refused by plugin 'confused': wrong scope"):
        reg.inspect_remember(PEN, MemoryWrite(text="scope"))


# -- goat_filter_recall ----------------------------------------------------------------


def test_hook_goat_filter_recall(reg: Registry) -> None:
    class DropPrivate:
        @hookimpl(tryfirst=True)
        def goat_filter_recall(self, result: RecallResult) -> RecallResult:
            keep = tuple(i for i in result.items if not i.id.startswith("private"))
            return result.model_copy(update={"items": keep, "degraded": ("private filtered",)})

    class Rerank:
        @hookimpl
        def goat_filter_recall(self, scope: Scope, query: str, result: RecallResult) -> Any:
            assert (scope, query) == (PEN, "deploy")
            ranked = sorted(result.items, key=lambda i: i.score, reverse=True)
            return result.model_copy(update={"items": tuple(ranked)})

    add(reg, Rerank(), "rerank")
    add(reg, DropPrivate(), "drop-private")
    result = RecallResult(
        scope=PEN.key, items=(item("a", 0.1), item("private-b", 0.9), item("c", 0.5))
    )
    out = reg.filter_recall(PEN, "deploy", result)
    assert [i.id for i in out.items] == ["c", "a"]
    assert out.degraded == ("private filtered",)
    assert out.complete


# -- goat_filter_browse ----------------------------------------------------------------


def test_hook_goat_filter_browse(reg: Registry) -> None:
    class HideDrafts:
        @hookimpl
        def goat_filter_browse(
            self, scope: Scope, items: Sequence[PageSummary]
        ) -> Sequence[PageSummary]:
            assert scope == PEN
            return [p for p in items if not p.path or not p.path.startswith("drafts/")]

    class Abstain:
        @hookimpl
        def goat_filter_browse(self, items: Sequence[PageSummary]) -> None:
            return None

    add(reg, HideDrafts(), "hide-drafts")
    add(reg, Abstain(), "abstain")
    pages = [
        PageSummary(id="a.md", title="A", path="a.md"),
        PageSummary(id="drafts/b.md", title="B", path="drafts/b.md"),
    ]
    assert [p.id for p in reg.filter_browse(PEN, pages)] == ["a.md"]


# -- goat_authorize_egress -------------------------------------------------------------


def test_hook_goat_authorize_egress(reg: Registry) -> None:
    bound = Binding(id="hs", provider="hindsight", egress=("https://mem.example.com/mcp/bank/",))
    url = "https://mem.example.com/mcp/bank/tools"
    assert reg.authorize_egress(bound, url)  # the built-in rule: explicitly bound URL
    assert not reg.authorize_egress(bound, "https://evil.example.com/mcp/bank/")
    assert not reg.authorize_egress(bound.model_copy(update={"enabled": False}), url)
    assert not reg.authorize_egress(Binding(id="md", provider="markdown"), url)

    class Veto:
        @hookimpl
        def goat_authorize_egress(self, binding: Binding, url: str) -> bool | None:
            return False if "/tools" in url else None

    add(reg, Veto(), "veto")
    assert not reg.authorize_egress(bound, url)
    assert reg.authorize_egress(bound, "https://mem.example.com/mcp/bank/")


# -- awaitables are refused, naming the plugin -----------------------------------------


class AsyncImpls:
    """A plugin whose every hook implementation is (wrongly) a coroutine function."""

    @hookimpl
    async def goat_register_providers(self) -> list[ProviderSpec]:
        return []

    @hookimpl
    async def goat_resolve_scope(self, request: ScopeRequest) -> None:
        return None

    @hookimpl
    async def goat_register_embedders(self) -> list[object]:
        return []

    @hookimpl
    async def goat_register_rerankers(self) -> list[object]:
        return []

    @hookimpl
    async def goat_register_commands(self, cli: click.Group) -> None:
        return None

    @hookimpl
    async def goat_inspect_remember(self, scope: Scope, write: MemoryWrite) -> None:
        return None

    @hookimpl
    async def goat_filter_recall(self, scope: Scope, query: str, result: RecallResult) -> None:
        return None

    @hookimpl
    async def goat_filter_browse(self, scope: Scope, items: Sequence[PageSummary]) -> None:
        return None

    @hookimpl
    async def goat_authorize_egress(self, binding: Binding, url: str) -> None:
        return None


def _async_plugin(hook: str) -> object:
    """A plugin implementing only ``hook``, as a coroutine function."""
    plugin = type("AsyncPlugin", (), {hook: getattr(AsyncImpls, hook)})
    return plugin()


CALLS: dict[str, Callable[[Registry], Any]] = {
    "goat_resolve_scope": lambda r: r.resolve_scope(ScopeRequest()),
    "goat_inspect_remember": lambda r: r.inspect_remember(PEN, MemoryWrite(text="x")),
    "goat_filter_recall": lambda r: r.filter_recall(PEN, "q", RecallResult(scope=PEN.key)),
    "goat_filter_browse": lambda r: r.filter_browse(PEN, []),
    "goat_authorize_egress": lambda r: r.authorize_egress(
        Binding(id="b", provider="p"), "https://x.example/"
    ),
}
COLLECTIONS: dict[str, Callable[[Registry], Any]] = {
    "goat_register_providers": lambda r: r.providers(),
    "goat_register_commands": lambda r: r.register_commands(click.Group("goat")),
    "goat_register_embedders": lambda r: r.embedders(),
    "goat_register_rerankers": lambda r: r.rerankers(),
}


@pytest.mark.parametrize("hook", sorted(CALLS))
def test_awaitable_result_raises_type_error_naming_the_plugin(reg: Registry, hook: str) -> None:
    add(reg, _async_plugin(hook), "asyncy")
    with pytest.raises(TypeError, match=f"plugin 'asyncy' returned an awaitable from {hook}"):
        CALLS[hook](reg)


@pytest.mark.parametrize("hook", sorted(COLLECTIONS))
def test_awaitable_from_a_collection_hook_is_recorded_against_the_plugin(
    reg: Registry, hook: str
) -> None:
    add(reg, _async_plugin(hook), "asyncy")
    COLLECTIONS[hook](reg)  # other plugins still answer
    [failure] = [f for f in reg.pm.failures if f.plugin == "asyncy"]
    assert failure.kind == "hook"
    assert f"TypeError: plugin 'asyncy' returned an awaitable from {hook}" in failure.error


def test_every_hook_kind_is_covered_by_the_awaitable_tests() -> None:
    assert set(CALLS) | set(COLLECTIONS) == set(_spec_names())


# -- meta-tests ------------------------------------------------------------------------


def _spec_names() -> list[str]:
    marker = f"{hookspecs.PROJECT_NAME}_spec"
    return sorted(
        name
        for name, fn in vars(hookspecs).items()
        if inspect.isfunction(fn) and hasattr(fn, marker)
    )


def _params(name: str) -> list[str]:
    return list(inspect.signature(getattr(hookspecs, name)).parameters)


def test_hookspecs_are_the_managers_hooks() -> None:
    pm = make_plugin_manager(PluginSettings(autoload=False, builtins=False))
    assert _spec_names() == sorted(n for n in dir(pm.hook) if n.startswith("goat_"))
    assert all(re.fullmatch(r"goat_[a-z]+_[a-z_]+", n) for n in _spec_names())


@pytest.mark.parametrize("name", _spec_names())
def test_every_hook_has_a_test(name: str) -> None:
    tests = {n for n, f in vars(sys.modules[__name__]).items() if inspect.isfunction(f)}
    assert f"test_hook_{name}" in tests


@pytest.mark.parametrize("name", _spec_names())
def test_every_hook_is_documented_with_its_signature(name: str) -> None:
    text = DOCS.read_text(encoding="utf-8")
    signature = f"{name}({', '.join(_params(name))})"
    assert f"`{signature}`" in text
    assert f"## {name}" in text


@pytest.mark.parametrize("name", _spec_names())
def test_every_hook_is_typed_with_a_param_line_per_argument(name: str) -> None:
    fn = getattr(hookspecs, name)
    doc = inspect.getdoc(fn) or ""
    for param in _params(name):
        assert f":param {param}:" in doc
    annotations = fn.__annotations__
    assert set(annotations) == {*_params(name), "return"}
    assert ":returns:" in doc or annotations["return"] == "None"
