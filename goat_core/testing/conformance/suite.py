"""The contract tests every provider passes (docs/design.md, The conformance suite).

Each test's docstring ends with a ``Troubleshooting:`` note for provider authors.
"""

from __future__ import annotations

import inspect
import re
import unicodedata
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from goat_core.contract import (
    Capability,
    Connections,
    Consistency,
    Health,
    LinkMap,
    MemoryWrite,
    Provider,
    ProviderSpec,
    Receipt,
    ReceiptStatus,
    Reflection,
    Scope,
    ScopeKind,
)
from goat_core.errors import BadInput, NotSupported, ScopeError, TooLarge
from goat_core.testing.conformance.base import (
    StoreSet,
    _walk_pages,
    find,
    item_text,
    token,
)
from goat_core.testing.conformance.binding import BindingTests
from goat_core.testing.conformance.faulttests import FaultInjectionTests
from goat_core.testing.conformance.secrets import SecretTests
from goat_core.testing.conformance.stateful import StatefulTests, codepoints
from goat_core.testing.conformance.truth import TruthTests

__all__ = ["ProviderConformanceTests", "contract_violations"]

#: Pen ids the suite expects :meth:`Scope.pen` to reject (docs/design.md, Scopes).
BAD_PEN_IDS = ("", " ", "a/b", "a:b", "50%", "../x", "café", "-x", ".x", "x" * 65, "a b", "a\nb")

#: Stored text with query-syntax characters and the query that must find it.
QUERY_SYNTAX_CASES = (
    ("deployment status: done today", "status: done"),
    ("please retry OR give up", "retry OR"),
    ("a* wildcard pattern", "a*"),
    ('he said "quoted words" loudly', '"quoted words"'),
    ("-negative leading dash", "-negative"),
    ("see path/with/slash here", "path/with/slash"),
    ("(parenthesised group) text", "(parenthesised group)"),
    ("col:val AND NOT NEAR(x y) ^caret", "NEAR(x y) ^caret"),
)

#: Operations of each optional capability, as ``(name, call)``.
_OPTIONAL_OPERATIONS: dict[str, tuple[tuple[str, Callable[[Provider], Any]], ...]] = {
    "feedback": (
        ("feedback", lambda p: p.feedback(MemoryWrite(kind="feedback", text="fine", source="t"))),
    ),
    "reflect": (("reflect", lambda p: p.reflect("what do I know?")),),
    "pages": (
        ("list_pages", lambda p: p.list_pages()),
        ("get_page", lambda p: p.get_page("anything")),
    ),
    "map": (
        ("link_map", lambda p: p.link_map()),
        ("connections", lambda p: p.connections("anything")),
    ),
}


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


class ProviderConformanceTests(
    TruthTests, StatefulTests, BindingTests, SecretTests, FaultInjectionTests
):
    """The contract. Subclass it (the name must start with ``Test``) and supply
    :meth:`~ConformanceBase.goat_provider_factory`, :attr:`entry_point_name` and
    :attr:`provider_name`. Tests needing a capability skip when it is not declared; an
    overridden test must be marked ``@pytest.mark.xfail(reason=..., strict=True)``.
    """

    @classmethod
    def goat_contract_violations(cls) -> list[str]:
        """Contract tests this class overrides or removes without a strict xfail (checked
        by the pytest plugin at collection; any violation fails the run)."""
        return contract_violations(cls)

    # -- loading ----------------------------------------------------------------------------
    async def test_entry_point_is_discoverable(self) -> None:
        """The provider loads through the real entry-point loader, strictly and alone.

        Troubleshooting: declare ``[project.entry-points."goat_core.plugins"]`` with
        ``<entry_point_name> = "<package>.plugin"`` and reinstall the distribution (entry
        points are read from installed metadata, not from your source tree).
        """
        from goat_core.plugins import PluginSettings, Registry, make_plugin_manager

        pm = make_plugin_manager(PluginSettings(load=(self.entry_point_name,), strict=True))
        assert pm.has_plugin(self.entry_point_name), (
            f"no entry point {self.entry_point_name!r} in group goat_core.plugins"
        )
        registry = Registry(pm)
        assert self.provider_name in registry.providers(), (
            f"entry point {self.entry_point_name!r} loaded but declares "
            f"{sorted(registry.providers())}, not {self.provider_name!r}"
        )
        assert registry.provider_owner(self.provider_name) == self.entry_point_name
        assert not registry.failures, registry.failures

    async def test_check_returns_health(self, goat_stores: StoreSet) -> None:
        """``check()`` is a cheap probe answering a :class:`Health`.

        Troubleshooting: return ``Health.healthy()`` or ``Health.broken(reason)``; do not
        raise for an unreachable store, report it.
        """
        provider = await goat_stores.open(Scope.global_())
        health = await provider.check()
        assert isinstance(health, Health)
        assert health.ok or health.reason, "a broken health needs a reason"

    # -- writes and reads --------------------------------------------------------------------
    async def test_remember_then_recall_receipt_is_truthful(self, goat_stores: StoreSet) -> None:
        """Remembered text comes back from recall, and the receipt tells the truth.

        Shapes: one line, a titled note, several lines, and 1500 characters. ``stored``
        means findable now (immediate providers) or within ``eventual_timeout``; ``queued``
        carries an operation id and is never reported as ``stored`` before it is.

        Troubleshooting: return ``queued`` (with an operation id) when the write is only
        accepted; make sure long texts are not dropped by a buffer or a request limit below
        ``max_input_chars``; put the matched text in ``snippet`` or ``text``.
        """
        provider = await goat_stores.open(Scope.global_())
        shapes = [
            (None, "{w} a plain single line"),
            ("Titled {w}", "{w} remembered under a title"),
            (None, "{w} first line\n\nsecond paragraph\n- a list item\n"),
            (None, "{w} " + "long text " * 150),
        ]
        for title, template in shapes:
            word = token()
            write = MemoryWrite(
                text=template.format(w=word),
                title=title.format(w=word) if title else None,
                source="test",
            )
            receipt = await provider.remember(write)
            await self.assert_truthful(provider, receipt, word=word)

    async def test_same_text_remembered_twice_is_never_lost(self, goat_stores: StoreSet) -> None:
        """Remembering identical text twice keeps it: two results for
        ``duplicate_policy="keep"``, at least one for ``"merge"``.

        Troubleshooting: do not derive a note's identity from its text or the current second
        alone (the second write overwrites the first); a deduplicating provider declares
        ``duplicate_policy="merge"``.
        """
        spec = goat_stores.spec
        provider = await goat_stores.open(Scope.global_())
        word = token()
        text = f"{word} remembered twice"
        for _ in range(2):
            receipt = await provider.remember(MemoryWrite(text=text, source="test"))
            await self.assert_truthful(provider, receipt, word=word)

        async def both_there() -> None:
            found = await find(provider, word)
            if spec.duplicate_policy == "keep":
                assert len(found) == 2, (
                    f"duplicate_policy='keep' but {len(found)} result(s) after remembering the "
                    "same text twice"
                )
            else:
                assert found, "the text remembered twice is gone"

        await self.settle(spec, both_there)

    async def test_concurrent_identical_remembers_do_not_multiply(
        self, goat_stores: StoreSet
    ) -> None:
        """Ten identical texts remembered concurrently, every receipt truthful, yield exactly
        ten results for ``duplicate_policy="keep"`` (none lost, none multiplied) and one to
        ten for ``"merge"``.

        Troubleshooting: serialise writes per store (a lock or a ``StoreWorker``), make
        sure a retry after a timeout cannot write twice, and never derive a note's identity
        from its text alone (concurrent writes then overwrite each other).
        """
        spec = goat_stores.spec
        provider = await goat_stores.open(Scope.global_())
        word = token()
        text = f"{word} concurrent identical note"
        receipts: list[Receipt] = []

        async def one() -> None:
            receipts.append(await provider.remember(MemoryWrite(text=text, source="test")))

        async with anyio.create_task_group() as tg:
            for _ in range(10):
                tg.start_soon(one)
        assert len(receipts) == 10
        for receipt in receipts:
            assert receipt.status in {ReceiptStatus.STORED, ReceiptStatus.QUEUED}, receipt

        async def bounded() -> None:
            found = await find(provider, word)
            if spec.duplicate_policy == "keep":
                assert len(found) == 10, (
                    f"duplicate_policy='keep' but {len(found)} result(s) after 10 identical "
                    "concurrent remembers (10 expected: none lost, none multiplied)"
                )
            else:
                assert 1 <= len(found) <= 10, (
                    f"duplicate_policy='merge' but {len(found)} result(s) after 10 identical "
                    "concurrent remembers (1 to 10 expected)"
                )

        await self.settle(spec, bounded)

    async def test_oversized_input_rejected_nothing_partial(self, goat_stores: StoreSet) -> None:
        """Text over ``max_input_chars`` raises :class:`TooLarge` with a reason, and nothing
        of it is stored.

        Troubleshooting: check the length before writing anything (not after a first chunk),
        and name the limit in the message.
        """
        spec = goat_stores.spec
        provider = await goat_stores.open(Scope.global_())
        word = token()
        text = f"{word} " + "x" * spec.max_input_chars
        with pytest.raises(TooLarge) as info:
            await provider.remember(MemoryWrite(text=text, source="test"))
        assert str(info.value).strip(), "TooLarge needs a reason"
        assert not await find(provider, word), "part of an oversized input was stored"
        if spec.supports(Capability.PAGES):
            assert not (await provider.list_pages()).items, "an oversized input left a page"

    async def test_forget_removes_what_it_says(self, goat_stores: StoreSet) -> None:
        """``forget`` removes exactly what its receipt lists, and nothing else (an unknown
        reference: ``test_forget_of_unknown_id_is_not_found``).

        Troubleshooting: accept the ``id`` a recall item carries as a reference; list every
        removed id in ``Receipt.removed``. A provider that cannot delete raises
        ``NotSupported`` (this test then skips).
        """
        spec = goat_stores.spec
        provider = await goat_stores.open(Scope.global_())
        gone, kept = token(), token()
        for word in (gone, kept):
            receipt = await provider.remember(
                MemoryWrite(text=f"{word} to forget or keep", title=f"Note {word}", source="t")
            )
            await self.assert_truthful(provider, receipt, word=word)
        target = (await find(provider, gone))[0]
        try:
            receipt = await provider.forget(target.id)
        except NotSupported as exc:
            pytest.skip(f"provider {spec.name!r} does not support forget: {exc}")
        assert receipt.status in {ReceiptStatus.STORED, ReceiptStatus.QUEUED}, receipt
        assert receipt.removed, "a forget receipt must list what it removed"

        async def removed() -> None:
            assert not await find(provider, gone), "forget said it removed it; recall finds it"
            assert await find(provider, kept), "forget removed another note too"

        await self.settle(spec, removed)
        if spec.supports(Capability.PAGES):
            listed = {p.id for p in await _walk_pages(provider, limit=50)}
            assert not listed & set(receipt.removed), "a removed page is still listed"
            for ref in receipt.removed:
                await self.expect_not_found(provider.get_page(ref))

    # -- scopes -----------------------------------------------------------------------------
    @pytest.mark.goat_requires(Capability.SCOPED_STORES)
    async def test_scopes_are_isolated_both_ways(self, goat_stores: StoreSet) -> None:
        """Global, Pen A and Pen B each see only their own writes, in recall, page lists and
        ``get_page``.

        Troubleshooting: derive every store location from ``context.scope`` (Global and each
        Pen get their own root or namespace); never search a parent folder or a shared index
        without filtering by scope.
        """
        spec = goat_stores.spec
        scopes = [Scope.global_(), Scope.pen("pen-a"), Scope.pen("pen-b")]
        words: dict[str, str] = {}
        for scope in scopes:
            provider = await goat_stores.open(scope)
            word = token()
            receipt = await provider.remember(
                MemoryWrite(text=f"{word} belongs to {scope.key}", title=f"Own {word}", source="t")
            )
            await self.assert_truthful(provider, receipt, word=word)
            words[scope.key] = word
        for scope in scopes:
            provider = await goat_stores.open(scope)
            assert provider.label() == (
                "Global memory" if scope.is_global else f"Pen `{scope.pen_id}` memory"
            )
            for other, word in words.items():
                if other == scope.key:
                    continue
                assert not await find(provider, word), f"{scope.key} recalls a note of {other}"
            if spec.supports(Capability.PAGES):
                pages = await _walk_pages(provider, limit=50)
                shown = " ".join(p.title + " " + (p.path or "") + " " + p.id for p in pages)
                for other, word in words.items():
                    if other != scope.key:
                        assert word not in shown, f"{scope.key} lists a page of {other}"

    @pytest.mark.goat_requires(Capability.SHARED_BANK)
    async def test_shared_bank_label_whatever_scope(self, goat_stores: StoreSet) -> None:
        """A shared-bank provider is one bank whatever scope selected it, labelled
        "shared bank `<bank>` on `<server>`", never as Global or Pen memory.

        Troubleshooting: override ``label()``; do not derive the bank or any tag from the
        scope.
        """
        spec = goat_stores.spec
        glob = await goat_stores.open(Scope.global_())
        pen = await goat_stores.open(Scope.pen("pen-a"))
        pattern = re.compile(r"shared bank `[^`]+` on `[^`]+`")
        for provider in (glob, pen):
            assert pattern.fullmatch(provider.label()), provider.label()
        assert glob.label() == pen.label()
        word = token()
        receipt = await glob.remember(MemoryWrite(text=f"{word} in the bank", source="test"))
        await self.assert_truthful(glob, receipt, word=word)

        async def shared() -> None:
            assert await find(pen, word), "one bank: a write via Global must be seen via a Pen"

        await self.settle(spec, shared)

    async def test_invalid_pen_ids_rejected(
        self, goat_stores: StoreSet, goat_provider_factory: Any
    ) -> None:
        """Invalid Pen ids are rejected, never widened; a forged scope with an invalid id
        makes the factory or the first operation raise :class:`BadInput`.

        Troubleshooting: validate ``context.scope.pen_id`` with
        ``goat_core.contract.normalize_pen_id`` before using it in a path or a key.
        """
        for bad in BAD_PEN_IDS:
            with pytest.raises(ScopeError):
                Scope.pen(bad)
        assert Scope.pen("Notes") == Scope.pen("notes")
        glob = await goat_stores.open(Scope.global_())
        forged = Scope.model_construct(kind=ScopeKind.PEN, pen_id="../escape")
        word = token()
        try:
            provider = await goat_provider_factory(forged)
        except BadInput:
            provider = None
        if provider is not None:
            try:
                with pytest.raises(BadInput):
                    await provider.remember(MemoryWrite(text=f"{word} escaped", source="t"))
            finally:
                await provider.close()
        assert not await find(glob, word), "a write for a forged Pen landed in Global"

    # -- pages ------------------------------------------------------------------------------
    @pytest.mark.goat_requires(Capability.PAGES)
    async def test_page_lists_complete_or_paginated(self, goat_stores: StoreSet) -> None:
        """47 pages are all reachable through ``next_cursor`` (limits 10, 50 and 100); a
        list is never silently capped.

        Troubleshooting: when more pages exist than returned, set ``next_cursor`` and
        ``complete=False``; never stop at an internal maximum without saying so.
        """
        spec = goat_stores.spec
        provider = await goat_stores.open(Scope.global_())
        words = [token() for _ in range(47)]
        for i, word in enumerate(words):
            await provider.remember(
                MemoryWrite(text=f"{word} page {i}", title=f"Page {i:02d} {word}", source="t")
            )

        async def all_reachable() -> None:
            for limit in (10, 50, 100):
                requests = 0

                async def counted(_list: Any = provider.list_pages, **kw: Any) -> Any:
                    nonlocal requests
                    requests += 1
                    return await _list(**kw)

                pages = await _walk_pages(_Counting(provider, counted), limit=limit)
                ids = [p.id for p in pages]
                assert len(ids) == len(set(ids)), f"limit={limit}: a page was listed twice"
                shown = " ".join(f"{p.id} {p.title} {p.path or ''}" for p in pages)
                missing = [w for w in words if w not in shown]
                if missing and requests > 1:
                    raise AssertionError(
                        f"limit={limit}: {len(missing)} of 47 pages never listed although the "
                        f"walk followed next_cursor through {requests} pages: the cursor skips "
                        "pages (it must continue right after the last item returned)"
                    )
                assert not missing, (
                    f"limit={limit}: {len(missing)} of 47 pages unreachable ({len(pages)} "
                    "listed, no next_cursor): a silent cap"
                )

        await self.settle(spec, all_reachable)

    @pytest.mark.goat_requires(Capability.PAGES)
    async def test_get_page_of_every_listed_page(self, goat_stores: StoreSet) -> None:
        """Every listed page opens with ``get_page(summary.id)``; an unknown reference is
        :class:`NotFound`.

        Troubleshooting: the ``id`` in a :class:`PageSummary` must be a reference
        ``get_page`` accepts as is.
        """
        spec = goat_stores.spec
        provider = await goat_stores.open(Scope.global_())
        words = [token() for _ in range(5)]
        for word in words:
            await provider.remember(MemoryWrite(text=f"{word} body", title=f"T {word}", source="t"))

        async def opens() -> None:
            pages = await _walk_pages(provider, limit=50)
            assert len(pages) >= 5
            bodies = []
            for summary in pages:
                page = await provider.get_page(summary.id)
                assert page.id == summary.id, (page.id, summary.id)
                assert page.title == summary.title
                bodies.append(_nfc(page.body))
            for word in words:
                assert any(word in body for body in bodies), f"no page body holds {word}"

        await self.settle(spec, opens)
        await self.expect_not_found(provider.get_page(f"no-such-page-{token()}"))

    # -- text fidelity ----------------------------------------------------------------------
    async def test_recall_query_syntax_is_plain_text(self, goat_stores: StoreSet) -> None:
        """Stored text with query-syntax characters (``status: done``, ``retry OR``, ``a*``,
        quotes, a leading ``-``, ``/``, parentheses) is found by that text, without error.

        Troubleshooting: treat a query as user text, never as query syntax: tokenise it and
        quote each term (SQLite FTS5: ``"term"``), or escape every operator.
        """
        spec = goat_stores.spec
        provider = await goat_stores.open(Scope.global_())
        words = []
        for text, _query in QUERY_SYNTAX_CASES:
            word = token()
            words.append(word)
            await provider.remember(MemoryWrite(text=f"{word} {text}", source="test"))
        for word, (_text, query) in zip(words, QUERY_SYNTAX_CASES, strict=True):

            async def found(w: str = word, q: str = query) -> None:
                result = await provider.recall(q, limit=10)
                assert any(w in item_text(i) for i in result.items), (
                    f"recall({q!r}) did not find the note containing it"
                )

            await self.settle(spec, found)

    async def test_unicode_round_trips(self, goat_stores: StoreSet) -> None:
        """NFC and NFD spellings find the same note; emoji and CJK come back intact.

        Troubleshooting: normalise text to NFC when storing and when querying; keep text as
        UTF-8 end to end (no ``errors="ignore"``).
        """
        spec = goat_stores.spec
        provider = await goat_stores.open(Scope.global_())
        word = token()
        nfd = unicodedata.normalize("NFD", f"{word} café 東京タワー 🐐 naïve")
        receipt = await provider.remember(MemoryWrite(text=nfd, title=f"Uni {word}", source="t"))
        await self.assert_truthful(provider, receipt, word=word)

        async def round_trip() -> None:
            for query in ("café", unicodedata.normalize("NFD", "café"), "東京タワー"):
                result = await provider.recall(query, limit=10)
                hits = [i for i in result.items if word in item_text(i)]
                assert hits, (
                    f"a LOSS: recall({codepoints(query)}) did not find the note written as "
                    f"{codepoints(nfd[len(word) + 1 :][:5])}: normalise text to NFC when "
                    "storing and when querying"
                )
            shown = item_text((await find(provider, word))[0])
            for part in ("café", "東京タワー", "🐐"):
                assert part in shown, (
                    f"a LOSS: {codepoints(part)} did not round-trip; the recall shows "
                    f"{codepoints(shown[len(word) + 1 :][:12])}"
                )

        await self.settle(spec, round_trip)
        if spec.supports(Capability.PAGES):
            pages = await _walk_pages(provider, limit=50)
            page = await provider.get_page(next(p.id for p in pages if word in p.title))
            assert _nfc(nfd) in _nfc(page.body), (
                f"a LOSS: the page body does not hold the text written; it begins "
                f"{codepoints(page.body[:20])}"
            )

    # -- optional capabilities --------------------------------------------------------------
    @pytest.mark.goat_requires(Capability.FEEDBACK)
    async def test_feedback_receipt_is_truthful(self, goat_stores: StoreSet) -> None:
        """Feedback is an explicit write with a truthful receipt for the provider's scope.

        Troubleshooting: return the same kinds of receipt as ``remember``.
        """
        provider = await goat_stores.open(Scope.global_())
        word = token()
        receipt = await provider.feedback(
            MemoryWrite(kind="feedback", text=f"{word} that answer was right", source="test")
        )
        await self.assert_truthful(provider, receipt, word=word, accept_unknown=True)

    @pytest.mark.goat_requires(Capability.REFLECT)
    async def test_reflect_answers_for_its_scope(self, goat_stores: StoreSet) -> None:
        """``reflect`` returns a :class:`Reflection` for the provider's scope.

        Troubleshooting: set ``Reflection.scope`` to ``context.scope.key``.
        """
        provider = await goat_stores.open(Scope.global_())
        await provider.remember(MemoryWrite(text=f"{token()} the sky is blue", source="t"))
        reflection = await provider.reflect("what colour is the sky?")
        assert isinstance(reflection, Reflection)
        assert reflection.scope == provider.scope.key
        assert isinstance(reflection.text, str)

    @pytest.mark.goat_requires(Capability.MAP)
    async def test_map_has_pages_and_links(self, goat_stores: StoreSet) -> None:
        """The link map lists pages as nodes and a ``[[wikilink]]`` as an edge from its
        page; ``connections`` of that page opens it.

        Troubleshooting: node ids are page ids (what ``get_page`` accepts); an edge to a
        missing page has ``target=None`` and ``resolution="missing"``.
        """
        spec = goat_stores.spec
        provider = await goat_stores.open(Scope.global_())
        a, b = token(), token()
        await provider.remember(MemoryWrite(text=f"{b} target", title=f"Beta {b}", source="t"))
        await provider.remember(
            MemoryWrite(text=f"{a} links to [[Beta {b}]]", title=f"Alpha {a}", source="t")
        )

        async def mapped() -> None:
            link_map = await provider.link_map()
            assert isinstance(link_map, LinkMap)
            alpha = next((n for n in link_map.nodes if a in n.title), None)
            beta = next((n for n in link_map.nodes if b in n.title), None)
            assert alpha is not None and beta is not None, "pages missing from the map"
            edges = [e for e in link_map.edges if e.source == alpha.id and b in e.raw]
            assert edges, "the wikilink is not an edge of its page"
            conns = await provider.connections(alpha.id)
            assert isinstance(conns, Connections)
            assert conns.page.id == alpha.id
            if edges[0].target == beta.id:
                back = await provider.connections(beta.id)
                assert any(e.source == alpha.id for e in back.backlinks), "backlink missing"

        await self.settle(spec, mapped)

    @pytest.mark.parametrize("capability", sorted(_OPTIONAL_OPERATIONS))
    async def test_undeclared_capability_raises_not_supported(
        self, goat_stores: StoreSet, goat_spec: ProviderSpec, capability: str
    ) -> None:
        """Every operation of a capability the spec does not declare raises
        :class:`NotSupported` (not ``NotImplementedError``, not an empty answer).

        Troubleshooting: do not override operations you do not declare; the ``Provider``
        base class raises ``NotSupported`` for them.
        """
        if goat_spec.supports(capability):
            pytest.skip(
                f"provider {goat_spec.name!r} declares {capability!r}, so the NotSupported "
                "check for an undeclared capability does not apply"
            )
        provider = await goat_stores.open(Scope.global_())
        for operation, call in _OPTIONAL_OPERATIONS[capability]:
            with pytest.raises(NotSupported) as info:
                await call(provider)
            assert goat_spec.name in str(info.value) or capability in str(info.value), (
                f"{operation}: NotSupported should name the provider or the capability"
            )

    async def test_consistency_declared_honestly(self, goat_stores: StoreSet) -> None:
        """An ``immediate`` provider shows a ``stored`` write to the very next recall.

        Troubleshooting: declare ``consistency=Consistency.EVENTUAL`` when writes land
        asynchronously; the suite then polls with a bounded wait.
        """
        spec = goat_stores.spec
        provider = await goat_stores.open(Scope.global_())
        word = token()
        receipt = await provider.remember(MemoryWrite(text=f"{word} consistency", source="t"))
        if spec.consistency is Consistency.IMMEDIATE and receipt.status is ReceiptStatus.STORED:
            assert await find(provider, word), "immediate consistency declared, write not visible"
        else:
            await self.assert_truthful(provider, receipt, word=word)


class _Counting:
    """A provider whose ``list_pages`` goes through ``counted`` (to count requests)."""

    def __init__(self, provider: Provider, counted: Callable[..., Any]) -> None:
        self._provider = provider
        self.list_pages = counted


def _contract_names() -> list[str]:
    return sorted(
        name
        for name in dir(ProviderConformanceTests)
        if name.startswith("test_") and callable(getattr(ProviderConformanceTests, name))
    )


def _strict_xfail(fn: Any) -> bool:
    marks = getattr(fn, "pytestmark", [])
    return any(m.name == "xfail" and m.kwargs.get("strict") is True for m in marks)


def contract_violations(cls: type) -> list[str]:
    """Contract tests ``cls`` overrides or removes without a strict xfail marker."""
    problems = []
    for name in _contract_names():
        original = getattr(ProviderConformanceTests, name)
        own = getattr(cls, name, None)
        if own is original:
            continue
        where = f"{cls.__module__}.{cls.__qualname__}.{name}"
        if own is None or not (inspect.isfunction(own) or inspect.ismethod(own)):
            problems.append(f"{where} removes a contract test")
        elif not _strict_xfail(own):
            problems.append(f"{where} overrides a contract test without xfail(strict=True)")
    return problems
