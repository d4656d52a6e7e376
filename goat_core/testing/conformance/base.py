"""Machinery of the conformance suite: the store set, bounded polling, capability skips.

Nothing here is a contract test; :mod:`goat_core.testing.conformance.suite` holds those.
"""

from __future__ import annotations

import unicodedata
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import anyio
import pytest

from goat_core.contract import (
    Binding,
    Capability,
    Consistency,
    GoatHome,
    MemoryWrite,
    PageList,
    PageSummary,
    Provider,
    ProviderContext,
    ProviderSpec,
    RecallItem,
    Receipt,
    ReceiptStatus,
    Scope,
)
from goat_core.errors import GoatError, NotFound
from goat_core.testing.conformance.faults import FaultInjector

__all__ = [
    "ConformanceBase",
    "ProviderFactory",
    "StoreSet",
    "eventually",
    "find",
    "spec_factory",
    "token",
]

T = TypeVar("T")

#: ``await make(scope) -> Provider``: see :meth:`ConformanceBase.goat_provider_factory`.
ProviderFactory = Callable[[Scope], Awaitable[Provider]]


def spec_factory(
    spec: ProviderSpec,
    home: GoatHome,
    *,
    settings: Mapping[str, Any] | None = None,
    binding_id: str = "test",
    get_credential: Callable[[str], str | None] | None = None,
    http_client: Callable[..., Any] | None = None,
    connect: Callable[..., Awaitable[Any]] | None = None,
) -> ProviderFactory:
    """A factory building providers the way a host does, for the suite's fixture.

    :param spec: the provider's spec (e.g. from your plugin module).
    :param home: the test's GOAT home (``GoatHome.at(tmp_path)``), so the world is empty.
    :param settings: raw binding settings, validated by ``spec.settings_model``.
    :param get_credential: ``get_credential(name) -> str | None`` (default: no secrets).
    :param http_client: for a ``network=True`` provider, the ``context.http_client``
        factory. Default: an egress-guarded ``httpx2.AsyncClient`` allowing exactly
        ``spec.egress_urls(settings)``, as an explicit ``goat bind`` does. Pass your own to
        inject a transport (``httpx2.MockTransport``): the guard then only sees what reaches it.
    :param connect: for a ``network=True`` provider, ``context.connect``. Default: the
        guarded connection a host gives, allowing ``spec.egress_urls(settings)``.
    :returns: ``async def make(scope) -> Provider`` calling ``spec.factory``.
    """
    raw = dict(settings or {})
    validated = spec.settings_model.model_validate(raw)
    egress: tuple[str, ...] = ()
    if spec.network and spec.egress_urls is not None:
        egress = tuple(spec.egress_urls(validated))
    binding = Binding(id=binding_id, provider=spec.name, settings=raw, egress=egress)
    authorize = None
    if spec.network:
        http_client, connect, authorize = _guarded(binding, http_client, connect)

    async def make(scope: Scope) -> Provider:
        context = ProviderContext(
            scope=scope,
            binding=binding,
            settings=validated,
            home=home,
            get_credential=get_credential or (lambda name: None),
            http_client=http_client,
            connect=connect,
            authorize=authorize,
        )
        return spec.factory(context)

    # What the settings round trip binds (ProviderConformanceTests.test_settings_round_trip).
    make.goat_bind = BindInfo(spec=spec, settings=raw, home=home)  # type: ignore[attr-defined]
    return make


@dataclass(frozen=True)
class BindInfo:
    """What :func:`spec_factory` was given, for the settings round trip through ``bind``."""

    spec: ProviderSpec
    settings: Mapping[str, Any]
    home: GoatHome


def _guarded(
    binding: Binding,
    http_client: Callable[..., Any] | None,
    connect: Callable[..., Awaitable[Any]] | None,
) -> tuple[Callable[..., Any], Callable[..., Awaitable[Any]], Callable[[str], Awaitable[Any]]]:
    """The host's guarded client, connection and ``authorize`` for ``binding`` (the first
    two unless given)."""
    from goat_core.host import GuardedConnect, check_egress, guarded_http_client
    from goat_core.plugins import PluginSettings, Registry, make_plugin_manager

    registry = Registry(make_plugin_manager(PluginSettings(autoload=False)))
    if http_client is None:

        def http_client(**kwargs: Any) -> Any:
            return guarded_http_client(registry, binding, **kwargs)

    guarded = GuardedConnect(lambda url: check_egress(registry, binding, url))
    return http_client, connect or guarded, guarded.authorize


async def eventually(
    fn: Callable[[], Awaitable[T]], timeout: float, *, interval: float = 0.05
) -> T:
    """Await ``fn()`` until it returns without :class:`AssertionError`; bounded wait.

    :param fn: an async check that raises ``AssertionError`` while not yet true.
    :param timeout: seconds to keep trying; the last ``AssertionError`` is re-raised after.
    :param interval: seconds between attempts.
    :returns: what ``fn`` returned on its first success.
    """
    deadline = anyio.current_time() + timeout
    while True:
        try:
            return await fn()
        except AssertionError:
            if anyio.current_time() >= deadline:
                raise
        await anyio.sleep(interval)


def token(prefix: str = "zq") -> str:
    """A unique word (ASCII letters and digits) to find one write again."""
    return f"{prefix}{uuid.uuid4().hex[:12]}"


def _nfc(text: str | None) -> str:
    return unicodedata.normalize("NFC", text or "")


def item_text(item: RecallItem) -> str:
    """Everything a recall item shows, NFC-normalised."""
    return " ".join(_nfc(t) for t in (item.title, item.snippet, item.text) if t)


class StoreSet:
    """The stores one test opened: one provider per scope, all in the test's one world.

    :meth:`open` calls the author's factory once per scope and checks what it returned;
    :meth:`verify_isolation` and :meth:`aclose` run after the test.
    """

    def __init__(self, factory: ProviderFactory, spec: ProviderSpec, suite: ConformanceBase):
        self._factory = factory
        self.spec = spec
        self._suite = suite
        self._providers: dict[str, Provider] = {}
        self._extra: list[Provider] = []
        #: Set once the isolation check ran (at the end of a contract test's call).
        self.verified = False

    @property
    def scopes(self) -> list[str]:
        return list(self._providers)

    async def open(self, scope: Scope) -> Provider:
        """The provider of ``scope``'s store (built on first use, then the same instance).

        Checks the factory's contract: a :class:`Provider` of the spec under test, bound to
        exactly ``scope``, whose store is empty (when it declares ``pages``).
        """
        if scope.key in self._providers:
            return self._providers[scope.key]
        provider = await self._factory(scope)
        self._extra.append(provider)  # closed even if a check below fails
        assert isinstance(provider, Provider), (
            f"goat_provider_factory returned {type(provider).__name__}, not a Provider"
        )
        assert provider.spec.name == self.spec.name, (
            f"goat_provider_factory built provider {provider.spec.name!r}, but the entry point "
            f"declares {self.spec.name!r}"
        )
        assert provider.spec.capabilities == self.spec.capabilities, (
            "the provider instance declares other capabilities than the spec its entry point "
            "registers"
        )
        assert provider.scope == scope, (
            f"goat_provider_factory was asked for {scope.key} and built a provider for "
            f"{provider.scope.key}"
        )
        if self.spec.supports(Capability.PAGES):
            listing = await provider.list_pages(limit=5)
            if listing.items:
                await self._not_empty(scope, [p.id for p in listing.items])
        self._extra.remove(provider)
        self._providers[scope.key] = provider
        return provider

    async def _not_empty(self, scope: Scope, ids: list[str]) -> None:
        """Fail with the likely cause: scopes sharing one store, or a non-empty world."""
        for key, other in self._providers.items():
            shown = {p.id for p in (await other.list_pages(limit=50)).items}
            if shown & set(ids):
                raise AssertionError(
                    f"{scope.key} lists pages written in {key} during this test "
                    f"({sorted(shown & set(ids))[:3]}): the scopes share one store, or reads "
                    "of one reach another. Derive the store (folder, key prefix, database) "
                    "from context.scope, so Global and each Pen get their own"
                )
        raise AssertionError(
            f"goat_provider_factory must yield an EMPTY store per scope; {scope.key} already "
            f"lists {ids} before this test wrote anything. Build each test's world fresh "
            "(a GOAT home under tmp_path, a new bank or namespace per test)"
        )

    #: Look-alike Pen ids the after-test isolation check adds to the scopes a test opened.
    PROBE_PENS: ClassVar[tuple[str, ...]] = ("a", "ab")

    async def verify_isolation(self, test: str | None = None) -> None:
        """After a passing test that opened a scope: a fresh write in each opened scope, and
        in the look-alike Pens ``a`` and ``ab``, stays in that scope.

        Only for ``scoped_stores`` providers; a leak is reported once per test class (later
        tests skip the check, so one defect is not reported by every test). Contract tests
        run it at the end of their own call, so the leak fails the test that opened those
        stores (``test`` names it); other tests that use ``goat_stores`` get it at teardown.
        """
        self.verified = True
        if not self.spec.supports(Capability.SCOPED_STORES) or not self._providers:
            return
        if getattr(self._suite, "_goat_leak_reported", False):
            return
        try:
            await self._verify_isolation(test)
        except AssertionError:
            type(self._suite)._goat_leak_reported = True
            raise

    async def _verify_isolation(self, test: str | None) -> None:
        opened = ", ".join(self._providers)
        for pen in self.PROBE_PENS:
            await self.open(Scope.pen(pen))
        sentinels: dict[str, str] = {}
        for key, provider in self._providers.items():
            word = token("sentinel")
            await provider.remember(MemoryWrite(text=f"{word} isolation sentinel", source="test"))
            sentinels[key] = word
        for key, provider in self._providers.items():
            own = sentinels[key]

            async def sees_own(p: Provider = provider, w: str = own) -> None:
                assert await find(p, w), f"{p.scope.key} lost its own isolation sentinel"

            await self._suite.settle(self.spec, sees_own)
            for other, word in sentinels.items():
                if other != key and await find(provider, word):
                    who = f"{test} opened {opened}; then " if test else ""
                    raise AssertionError(
                        f"a LEAK (one scope's memory shows in another): {who}{key} sees a "
                        f"write made in {other}: stores are not isolated (checked once per "
                        "class, right after a passing test; " + _leak_hint(key, other) + ")"
                    )

    async def aclose(self) -> None:
        for provider in [*self._providers.values(), *self._extra]:
            await provider.close()
        self._providers.clear()
        self._extra.clear()


def _leak_hint(key: str, other: str) -> str:
    a, b = key.removeprefix("pen:"), other.removeprefix("pen:")
    if a != key and b != other and (a.startswith(b) or b.startswith(a)):
        return (
            "the two Pen ids share a prefix: match a scope's keys or files exactly, never by "
            "prefix or glob (pen:a* also matches pen:ab)"
        )
    return "derive every store location from context.scope"


async def find(provider: Provider, word: str, *, limit: int = 100) -> list[RecallItem]:
    """Recall ``word`` and keep only the items that show it."""
    result = await provider.recall(word, limit=limit)
    return [item for item in result.items if _nfc(word) in item_text(item)]


async def receipt_opens_its_page(
    provider: Provider, receipt: Receipt, word: str, what: str
) -> None:
    """A ``stored`` receipt's ``id`` opens the page holding ``word`` (providers with
    ``pages`` that keep the text; an ``id`` of ``None`` says nothing)."""
    from goat_core.errors import NotFound

    spec = provider.spec
    if receipt.id is None or not spec.supports(Capability.PAGES) or spec.extracts_facts:
        return
    try:
        page = await provider.get_page(receipt.id)
    except NotFound as exc:
        raise AssertionError(
            f"a LIE: {what} answered 'stored' with id {receipt.id!r}, which opens no page "
            f"({exc}): a receipt's id names the page that holds the write"
        ) from exc
    assert _nfc(word) in _nfc(page.body), (
        f"a LIE: {what} answered 'stored' with id {receipt.id!r}, but that page does not hold "
        "the write: the id must come from the write itself, never from a guess or the "
        "scope's latest page"
    )


async def _walk_pages(provider: Any, *, limit: int) -> list[PageSummary]:
    """Every page reachable by following ``next_cursor`` (at most 1000 requests)."""
    seen: list[PageSummary] = []
    cursor: str | None = None
    for _ in range(1000):
        listing = await provider.list_pages(limit=limit, cursor=cursor)
        assert isinstance(listing, PageList)
        assert len(listing.items) <= limit, (
            f"list_pages(limit={limit}) returned {len(listing.items)} items"
        )
        seen.extend(listing.items)
        if listing.next_cursor is None:
            assert listing.complete or listing.degraded, (
                "a last page with complete=False must say why in degraded"
            )
            return seen
        assert not listing.complete, "a page with a next_cursor cannot be complete"
        cursor = listing.next_cursor
    raise AssertionError("list_pages kept returning a next_cursor after 1000 pages")


class ConformanceBase:
    """Fixtures and helpers shared by every contract test.

    Subclasses set :attr:`entry_point_name` and :attr:`provider_name` and override
    :meth:`goat_provider_factory`.
    """

    #: The entry-point name in group ``goat_core.plugins`` that registers the provider.
    entry_point_name: ClassVar[str]
    #: The provider name the plugin declares (``ProviderSpec.name``).
    provider_name: ClassVar[str]
    #: Bounded wait (seconds) for ``consistency="eventual"`` providers to show a write.
    eventual_timeout: ClassVar[float] = 30.0
    #: Seconds between polls of an eventual-consistency provider.
    poll_interval: ClassVar[float] = 0.1
    #: The deadline of each contract test, in seconds (``--goat-deadline`` overrides it; an
    #: eventual provider's tests get at least ``2 * eventual_timeout + 10``).
    contract_deadline: ClassVar[float] = 30.0

    pytestmark: ClassVar[list[pytest.MarkDecorator]] = [pytest.mark.anyio]
    #: Set once the after-test isolation check reported a leak (reported once per class).
    _goat_leak_reported: ClassVar[bool] = False

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture
    def goat_provider_factory(self) -> ProviderFactory:
        """Override: return ``async def make(scope: Scope) -> Provider``.

        Within one test every call shares one backing world (one GOAT home, one server)
        that starts EMPTY. ``make(scope)`` returns a provider bound to ``scope``'s store in
        that world; the suite calls it at most once per scope per test and closes what it
        returns. A scope whose Pen id is invalid must make the factory or the provider's
        first operation raise :class:`~goat_core.errors.BadInput`.
        """
        pytest.fail(
            f"{type(self).__name__} must override the goat_provider_factory fixture "
            "(see docs/authors.md)",
            pytrace=False,
        )

    @pytest.fixture
    def goat_faults(self) -> FaultInjector | None:
        """Override to opt in to fault injection: return a
        :class:`~goat_core.testing.conformance.faults.FaultInjector` (docs/authors.md, Fault
        injection). ``None`` (the default) skips the fault tests, saying why."""
        return None

    @pytest.fixture(scope="class")
    @classmethod
    def goat_spec(cls) -> ProviderSpec:
        """The spec as a host sees it: loaded through the real entry-point loader."""
        from goat_core.plugins import PluginSettings, Registry, make_plugin_manager

        try:
            pm = make_plugin_manager(PluginSettings(load=(cls.entry_point_name,), strict=True))
            return Registry(pm).get_provider(cls.provider_name)
        except GoatError as exc:
            pytest.fail(
                f"cannot load provider {cls.provider_name!r} through entry point "
                f"{cls.entry_point_name!r} of group goat_core.plugins: {exc}",
                pytrace=False,
            )

    @pytest.fixture(autouse=True)
    def _goat_requires(self, request: pytest.FixtureRequest, goat_spec: ProviderSpec) -> None:
        need = {str(c) for m in request.node.iter_markers("goat_requires") for c in m.args}
        missing = sorted(need - {c.value for c in goat_spec.capabilities})
        if missing:
            pytest.skip(
                f"provider {goat_spec.name!r} does not declare capability "
                + ", ".join(repr(m) for m in missing)
            )

    @pytest.fixture
    async def goat_stores(
        self,
        request: pytest.FixtureRequest,
        goat_provider_factory: ProviderFactory,
        goat_spec: ProviderSpec,
    ) -> AsyncIterator[StoreSet]:
        """The stores of this test; isolation is re-checked after a passing test."""
        from goat_core.testing.pytest_plugin import call_passed

        stores = StoreSet(goat_provider_factory, goat_spec, self)
        try:
            yield stores
            if call_passed(request.node) and not stores.verified:
                await stores.verify_isolation()
        finally:
            await stores.aclose()

    # -- helpers ---------------------------------------------------------------------------
    async def settle(self, spec: ProviderSpec, check: Callable[[], Awaitable[T]]) -> T:
        """Run ``check`` once for immediate providers; poll it (bounded) for eventual ones."""
        if spec.consistency is Consistency.EVENTUAL:
            return await eventually(check, self.eventual_timeout, interval=self.poll_interval)
        return await check()

    async def assert_truthful(
        self, provider: Provider, receipt: Receipt, *, word: str, accept_unknown: bool = False
    ) -> None:
        """A receipt tells the truth: ``stored`` is findable now (immediate providers) or
        within the bounded wait (eventual); ``queued`` carries an operation id and refreshes
        to ``queued``/``stored``/``failed`` of the same operation."""
        assert isinstance(receipt, Receipt), f"remember returned {type(receipt).__name__}"
        assert receipt.scope == provider.scope.key, (
            f"receipt scope {receipt.scope!r} is not the provider's scope {provider.scope.key!r}"
        )
        allowed = {ReceiptStatus.STORED, ReceiptStatus.QUEUED}
        if accept_unknown:
            allowed.add(ReceiptStatus.UNKNOWN)
        assert receipt.status in allowed, (
            f"an ordinary write came back {receipt.status.value!r} (reason: {receipt.reason})"
        )
        spec = provider.spec
        if receipt.status is ReceiptStatus.STORED:
            if spec.consistency is Consistency.IMMEDIATE:
                assert await find(provider, word), (
                    f"receipt says 'stored' but recall of {word!r} finds nothing: a dropped or "
                    "queued write must not be reported as stored"
                )
                await receipt_opens_its_page(provider, receipt, word, "an ordinary write")
            else:

                async def visible() -> None:
                    assert await find(provider, word), (
                        f"receipt says 'stored' but {word!r} never became visible within "
                        f"{self.eventual_timeout}s"
                    )

                await eventually(visible, self.eventual_timeout, interval=self.poll_interval)
        elif receipt.status is ReceiptStatus.QUEUED:
            refreshed = await provider.refresh(receipt)
            assert refreshed.status in {
                ReceiptStatus.QUEUED,
                ReceiptStatus.STORED,
                ReceiptStatus.FAILED,
            }, f"refresh of a queued receipt answered {refreshed.status.value!r}"
            if refreshed.status is not ReceiptStatus.FAILED:

                async def lands() -> None:
                    assert await find(provider, word), (
                        f"queued write {receipt.operation_id} never became visible within "
                        f"{self.eventual_timeout}s"
                    )

                await eventually(lands, self.eventual_timeout, interval=self.poll_interval)

    @staticmethod
    async def expect_not_found(coro: Awaitable[Any]) -> None:
        with pytest.raises(NotFound):
            await coro
