"""``SyncProvider``, the blocking facade of a provider (goat_core/contract/_sync.py): typed,
one method per provider method, no attribute proxy."""

from __future__ import annotations

import inspect
import sys
import typing
from pathlib import Path

import pytest

from goat_core.contract import Binding, MemoryWrite, Provider, ProviderContext, Scope, SyncProvider
from goat_core.host import GoatHome

HERE = Path(__file__).parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import reference_provider as ref  # noqa: E402


def _public(cls: type, predicate: typing.Callable[[object], bool]) -> dict[str, typing.Any]:
    return {name: fn for name, fn in inspect.getmembers(cls, predicate) if not name.startswith("_")}


def test_every_async_provider_method_has_a_typed_blocking_counterpart() -> None:
    """Each public coroutine method of ``Provider`` is a plain method of ``SyncProvider``,
    defined there (not reached through a proxy), taking the same parameters (same kinds and
    defaults; extra optional ones allowed) and returning the same type."""
    methods = _public(Provider, inspect.iscoroutinefunction)
    assert {"remember", "recall", "check", "close", "list_pages", "reindex"} <= set(methods)
    for name, async_fn in methods.items():
        assert name in vars(SyncProvider), f"SyncProvider has no method {name}"
        sync_fn = vars(SyncProvider)[name]
        assert inspect.isfunction(sync_fn) and not inspect.iscoroutinefunction(sync_fn), name
        want = inspect.signature(async_fn).parameters
        have = inspect.signature(sync_fn).parameters
        for param in want.values():
            assert param.name in have, f"SyncProvider.{name} lacks parameter {param.name}"
            got = have[param.name]
            assert (got.kind, got.default) == (param.kind, param.default), (name, param.name)
        for extra in set(have) - set(want):
            assert have[extra].default is not inspect.Parameter.empty, (name, extra)
        want_hints = typing.get_type_hints(async_fn)
        have_hints = typing.get_type_hints(sync_fn)
        assert have_hints["return"] == want_hints["return"], name
        for param in want:
            if param in want_hints:
                assert have_hints[param] == want_hints[param], (name, param)


def test_the_plain_provider_methods_and_properties_are_there_too() -> None:
    plain = _public(Provider, inspect.isfunction)
    plain = {n: f for n, f in plain.items() if not inspect.iscoroutinefunction(f)}
    assert set(plain) <= set(vars(SyncProvider)), set(plain) - set(vars(SyncProvider))
    for prop in ("scope", "spec"):
        assert isinstance(vars(SyncProvider)[prop], property)
    assert "__getattr__" not in vars(SyncProvider)


def test_it_runs_a_provider_and_proxies_nothing_else(tmp_path: Path) -> None:
    """Calls block and return the provider's results; a provider's own coroutine method runs
    through ``call``; a name the facade does not define is an AttributeError; a closed
    facade refuses calls."""
    context = ProviderContext(
        scope=Scope.global_(),
        binding=Binding(id="default", provider="reference"),
        settings=ref.ReferenceSettings(root=str(tmp_path / "store")),
        home=GoatHome.at(tmp_path / "home"),
    )
    sp = SyncProvider(lambda: ref.SPEC.factory(context))
    with sp:
        assert sp.scope == Scope.global_() and sp.spec is ref.SPEC
        assert sp.label() == "Global memory"
        receipt = sp.remember(MemoryWrite(text="quokkas sleep by day", title="Quokka"))
        assert receipt.status.value == "stored"
        assert [i.title for i in sp.recall("quokkas", limit=5).items] == ["Quokka"]
        assert [p.title for p in sp.list_pages(limit=10).items] == ["Quokka"]
        assert sp.get_page("Quokka").body == "quokkas sleep by day"
        assert sp.call(sp.provider.get_page, "Quokka").title == "Quokka"
        assert sp.check().ok
        with pytest.raises(AttributeError):
            sp._load  # noqa: B018 (a provider attribute is not reached through the facade)
    with pytest.raises(RuntimeError, match="SyncProvider is closed"):
        sp.recall("quokkas")
    sp.close()  # idempotent


def test_calls_run_on_the_facade_loop_and_errors_come_back_typed(tmp_path: Path) -> None:
    """A call runs as a task on the facade's own event loop thread (never the caller's), anyio
    works inside it, a provider's typed error reaches the caller as raised, and a call made
    from that loop's own thread is refused rather than waiting on itself."""
    import threading

    import anyio.to_thread

    from goat_core.errors import NotFound

    context = ProviderContext(
        scope=Scope.global_(),
        binding=Binding(id="default", provider="reference"),
        settings=ref.ReferenceSettings(root=str(tmp_path / "store")),
        home=GoatHome.at(tmp_path / "home"),
    )
    with SyncProvider(lambda: ref.SPEC.factory(context)) as sp:
        caller = threading.get_ident()

        async def where() -> tuple[int, int]:
            worker = await anyio.to_thread.run_sync(threading.get_ident)
            return threading.get_ident(), worker

        loop_thread, worker_thread = sp.call(where)
        assert loop_thread != caller and worker_thread not in (caller, loop_thread)
        with pytest.raises(NotFound):
            sp.get_page("no such page")

        async def reenter() -> None:
            sp.check()

        with pytest.raises(RuntimeError, match="its own event loop's thread"):
            sp.call(reenter)
        assert sp.check().ok  # the facade still works after the refusal
