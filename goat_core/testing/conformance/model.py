"""The model of the stateful test (:mod:`goat_core.testing.conformance.stateful`): what
each store holds, the hostile text, and the provider side of its writes and recalls.

Each method awaits the provider on the test's event loop and checks the answer against the
model; the pages, show, feedback, forget, many-matches and fault steps are in
:class:`~goat_core.testing.conformance.stateful.Runner`.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import anyio.from_thread

from goat_core.contract import (
    Capability,
    Consistency,
    MemoryWrite,
    PageList,
    Provider,
    ProviderSpec,
    RecallItem,
    Receipt,
    ReceiptStatus,
    Scope,
)
from goat_core.errors import Ambiguous, BadInput, Conflict, GoatError
from goat_core.testing.conformance.base import eventually, item_text, token
from goat_core.testing.conformance.faults import FaultInjector
from goat_core.testing.conformance.scopes import ACTIVITY, codepoints

__all__ = ["HOSTILE_TEXTS", "HOSTILE_TITLES", "INJECTION_PROBES"]

T = TypeVar("T")

#: Text fragments a store must keep as plain text.
HOSTILE_TEXTS = (
    "she said \"quoted\" and 'single'",
    "100% of 50% _under_score_ a_b",
    "back\\slash C:\\path\\n \\\\ end",
    "x'; DROP TABLE notes; --",
    "{} {0} {title} %s %(name)s",
    "$1 $& $$ ${HOME}",
    "`rm -rf /` ``code``",
    "a%b_c\\d'e\"f",
    unicodedata.normalize("NFD", "caf\u00e9 na\u00efve \u00c5ngstr\u00f6m"),
    "long " + "lorem ipsum dolor sit amet " * 120,
)

#: Titles the stateful test writes (each with the example's tag and a counter appended).
HOSTILE_TITLES = (
    "x' OR '1'='1",
    "quote \"double\" 'single'",
    "100% a_b",
    "back\\slash",
    "semi'; --",
    "braces {} $1",
    "tick `x`",
    unicodedata.normalize("NFD", "Caf\u00e9 \u00c5ngstr\u00f6m"),
    "T" + "itle very long " * 12,
)

#: References that look like an injection; no page is ever titled so, so ``show`` of one is
#: NotFound in every scope.
INJECTION_PROBES = ("x' OR '1'='1", "' OR ''='", '" OR ""="', "%", "_", "*", "\\")

#: The words every untitled "shared" write starts with (after the tag), so their generated
#: titles (the first words or characters of the text) are one title.
_SHARED_LEAD = "shared lead words one two three four five six seven"


def _nfc(text: str | None) -> str:
    return unicodedata.normalize("NFC", text or "")


def _key(text: str | None) -> str:
    return _nfc(text).casefold()


@dataclass
class _Note:
    """One page of the model: what this run wrote into it."""

    id: str
    store: str
    title: str | None  # the title given, or the generated one shown by the provider
    words: list[str] = field(default_factory=list)


@dataclass
class _Store:
    key: str
    provider: Provider
    notes: dict[str, _Note] = field(default_factory=dict)
    earlier: set[str] = field(default_factory=set)  # page ids this example found there
    forgotten: dict[str, list[str]] = field(default_factory=dict)


class _Stopped(Exception):
    """The test ended (its deadline passed) while the machine still ran."""


class _Harm:
    """What a user would suffer: the first words of each failure."""

    LEAK = "a LEAK (one scope's memory shows in another)"
    LIE = "a LIE (the answer says something untrue)"
    LOSS = "a LOSS (memory the user wrote is gone or unreachable)"


class RunnerBase:
    """The provider side of the state machine: every operation is awaited on the test's
    event loop; the model is checked after each one."""

    def __init__(
        self,
        suite: Any,
        spec: ProviderSpec,
        scopes: list[Scope],
        providers: dict[str, Provider],
        faults: FaultInjector | None,
        many: Provider,
    ) -> None:
        self.suite = suite
        #: the largest page-list limit the provider takes (its own bound; see StatefulTests)
        self.page_limit = int(getattr(suite, "stateful_page_limit", 1000))
        self.spec = spec
        self.scopes = scopes
        self.providers = providers
        self.faults = faults
        self.many_provider = many
        self.shared = spec.supports(Capability.SHARED_BANK)
        self.eventual = spec.consistency is Consistency.EVENTUAL
        self.pages = spec.supports(Capability.PAGES)
        self.facts = spec.extracts_facts
        self.forget_supported = True
        self.many_words: tuple[str, str] | None = None
        self.many_ids: set[str] = set()
        self.stores: dict[str, _Store] = {}
        self.tag = ""
        self.common = ""
        self.counter = 0
        self.last: str | None = None
        self.stopped = False

    # -- plumbing -----------------------------------------------------------------------------
    def run(self, fn: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
        """Await ``fn(*args)`` on the test's loop (the machine runs on a worker thread)."""
        if self.stopped:
            raise _Stopped("the test is over (its deadline passed)")
        step = f"{getattr(fn, '__name__', fn)}{args!r}"
        ACTIVITY["now"] = step
        try:
            return anyio.from_thread.run(fn, *args)
        except GoatError as exc:
            raise AssertionError(
                f"{_Harm.LOSS}: the step {step} raised {type(exc).__name__}: {exc}; the user "
                "cannot reach their memory with ordinary (if hostile) input: treat text and "
                "titles as data, bound as parameters, never pasted into a query"
            ) from exc
        finally:
            ACTIVITY["now"] = None

    def store_key(self, scope: Scope) -> str:
        return "bank" if self.shared else scope.key

    def store_of(self, scope: Scope) -> _Store:
        return self.stores[self.store_key(scope)]

    async def settle(self, check: Callable[[], Awaitable[T]]) -> T:
        if self.spec.consistency is Consistency.EVENTUAL:
            suite = self.suite
            return await eventually(check, suite.eventual_timeout, interval=suite.poll_interval)
        return await check()

    def live(self) -> list[_Note]:
        return [n for s in self.stores.values() for n in s.notes.values()]

    def pick(self, index: int) -> _Note | None:
        notes = self.live()
        return notes[index % len(notes)] if notes else None

    def scope(self, index: int) -> Scope:
        return self.scopes[index % len(self.scopes)]

    # -- an example's start: what the stores already hold ------------------------------------
    async def begin(self) -> None:
        self.tag = token("ex")
        self.common = token("common")
        self.counter = 0
        self.last = None
        self.stores = {}
        for scope in self.scopes:
            key = self.store_key(scope)
            if key not in self.stores:
                self.stores[key] = _Store(key, self.providers[scope.key])
        if self.pages:
            for store in self.stores.values():
                earlier = await self._walk_ids(store.provider, self.page_limit)
                store.earlier = set(earlier)

    async def _walk_ids(self, provider: Provider, limit: int) -> list[str]:
        ids: list[str] = []
        cursor: str | None = None
        for _ in range(2000):
            listing = await provider.list_pages(limit=limit, cursor=cursor)
            assert isinstance(listing, PageList)
            ids.extend(p.id for p in listing.items)
            if listing.next_cursor is None:
                return ids
            cursor = listing.next_cursor
        raise AssertionError(f"{_Harm.LIE}: list_pages kept returning a next_cursor")

    # -- finding a word ------------------------------------------------------------------------
    async def hits(self, provider: Provider, word: str) -> list[RecallItem]:
        result = await provider.recall(word, limit=100)
        return [i for i in result.items if _nfc(word) in item_text(i)]

    async def absent_elsewhere(self, key: str, word: str, what: str) -> None:
        """``word`` (written in store ``key``) is recalled by no other store."""
        for other in self.stores.values():
            if other.key == key:
                continue
            found = await self.hits(other.provider, word)
            assert not found, (
                f"{_Harm.LEAK}: {what} in {key}, and {other.key} recalls it "
                f"(item {found[0].id!r}): every read must filter by the provider's own scope, "
                "matching scope keys exactly (never by prefix, glob or a pasted string)"
            )

    async def nowhere(self, word: str, what: str) -> None:
        for store in self.stores.values():
            found = await self.hits(store.provider, word)
            assert not found, (
                f"{_Harm.LIE}: {what}, yet {store.key} recalls it (item {found[0].id!r}): "
                "a write reported as not stored must leave nothing behind"
            )

    async def landed_as(self, store: _Store, word: str, what: str) -> RecallItem:
        """The one item holding ``word`` in ``store`` (within the bounded wait)."""

        async def visible() -> RecallItem:
            found = await self.hits(store.provider, word)
            assert found, (
                f"{_Harm.LOSS}: {what} was answered as written, but recall of {word!r} in "
                f"{store.key} finds nothing: report 'queued' or 'unknown' unless the write is "
                "durable and visible"
            )
            ids = {i.id for i in found}
            if not self.facts:
                assert len(ids) == 1, (
                    f"{_Harm.LIE}: one write ({what}) shows as {len(ids)} notes in "
                    f"{store.key}: {sorted(ids)[:4]}"
                )
            return found[0]

        return await self.settle(visible)

    # -- remember ------------------------------------------------------------------------------
    def text(self, hostile: int, shared: bool, word: str) -> str:
        lead = f"{self.tag} {_SHARED_LEAD} " if shared else ""
        return f"{lead}{word} {self.common} {HOSTILE_TEXTS[hostile % len(HOSTILE_TEXTS)]}"

    def title(self, kind: int, index: int, store: _Store) -> str | None:
        """``kind`` 0: untitled; 1: a hostile title; 2: the title of a note of this store
        (so the write appends to it); 3: an NFD title."""
        self.counter += 1
        if kind == 1:
            return f"{HOSTILE_TITLES[index % len(HOSTILE_TITLES)]} {self.tag}n{self.counter}"
        if kind == 2:
            note = self.pick(index)
            if note is not None and note.store == store.key and note.title is not None:
                return note.title
            return f"{HOSTILE_TITLES[index % len(HOSTILE_TITLES)]} {self.tag}n{self.counter}"
        if kind == 3:
            return unicodedata.normalize("NFD", f"\u00c9t\u00e9 {self.tag} n{self.counter}")
        return None

    async def remember(self, scope: Scope, kind: int, index: int, hostile: int, shared: bool):
        note = self.pick(index)
        if kind == 2 and note is not None:  # append: into the store of a note, by its title
            scope = next(s for s in self.scopes if self.store_key(s) == note.store)
        store = self.store_of(scope)
        word = token()
        title = self.title(kind, index, store)
        text = self.text(hostile, shared and title is None, word)
        what = f"remember({word!r}, title={codepoints(title) if title else None})"
        await self._write(
            store,
            scope,
            MemoryWrite(text=text, title=title, source="stateful"),
            word,
            what,
            self.providers[scope.key].remember,
        )

    async def _write(
        self,
        store: _Store,
        scope: Scope,
        write: MemoryWrite,
        word: str,
        what: str,
        call: Callable[[MemoryWrite], Awaitable[Receipt]],
        on: _Note | None = None,
    ) -> None:
        self.last = store.key
        try:
            receipt = await call(write)
        except Ambiguous as exc:
            self._ambiguous_title(store, write, exc, what)
            await self.nowhere(word, f"{what} raised Ambiguous")
            return
        except (BadInput, Conflict) as exc:
            if write.title is None and on is None:
                raise AssertionError(
                    f"{_Harm.LOSS}: {what} of hostile text in {scope.key} raised "
                    f"{type(exc).__name__}: {exc}; text is user text, stored as given"
                ) from exc
            await self.nowhere(word, f"{what} raised {type(exc).__name__}")
            return
        assert isinstance(receipt, Receipt), f"{what} returned {type(receipt).__name__}"
        assert receipt.scope == scope.key, (
            f"{_Harm.LIE}: {what} in {scope.key} answered a receipt for {receipt.scope!r}"
        )
        if receipt.status is ReceiptStatus.REJECTED and write.title is not None:
            await self.nowhere(word, f"{what} answered 'rejected'")
            return
        assert receipt.status in {ReceiptStatus.STORED, ReceiptStatus.QUEUED}, (
            f"{_Harm.LIE}: an ordinary write ({what}) came back {receipt.status.value!r} "
            f"({receipt.reason})"
        )
        item = await self.landed_as(store, word, what)
        await self.absent_elsewhere(store.key, word, what)
        self.learn(store, item, write, word, on)

    def _ambiguous_title(self, store: _Store, write: MemoryWrite, exc: Ambiguous, what: str):
        """A titled write is ``Ambiguous`` only when several pages carry its title."""
        mine = {n.id for n in store.notes.values() if _key(n.title) == _key(write.title)}
        candidates = set(exc.candidates)
        self._no_strangers(store, candidates, what)
        assert write.title is not None and (len(mine) > 1 or candidates - mine), (
            f"{_Harm.LOSS}: {what} in {store.key} raised Ambiguous ({sorted(candidates)[:3]}), "
            f"though {len(mine)} page(s) carry that title: a write names one page or a new one"
        )
        assert mine <= candidates, (
            f"{_Harm.LIE}: {what} is Ambiguous, but its candidates lack "
            f"{sorted(mine - candidates)[:3]}, pages of that title"
        )

    def learn(
        self, store: _Store, item: RecallItem, write: MemoryWrite, word: str, on: _Note | None
    ) -> None:
        note = store.notes.get(item.id)
        if note is not None:
            same_title = write.title is not None and _key(write.title) == _key(note.title)
            assert same_title or (on is not None and on.id == note.id) or self.facts, (
                f"{_Harm.LOSS}: a write ({word!r}, title {write.title!r}) was merged into "
                f"the page {note.id!r} titled {note.title!r}, which it does not name"
            )
            note.words.append(word)
            return
        assert item.id not in store.earlier or self.facts, (
            f"{_Harm.LIE}: a new write ({word!r}) shows as the page {item.id!r}, which "
            f"{store.key} held before this example began"
        )
        title = write.title if write.title is not None else item.title
        store.notes[item.id] = _Note(item.id, store.key, title, [word])

    # -- recall --------------------------------------------------------------------------------
    async def recall_note(self, scope: Scope, index: int) -> None:
        note = self.pick(index)
        if note is None:
            return
        store = self.store_of(scope)
        self.last = store.key
        word = note.words[-1]
        if note.store == store.key:

            async def found() -> None:
                items = await self.hits(store.provider, word)
                assert items, (
                    f"{_Harm.LOSS}: {store.key} no longer recalls {word!r}, written to its "
                    f"page {note.id!r}"
                )
                if not self.facts:
                    assert note.id in {i.id for i in items}, (
                        f"{_Harm.LIE}: recall of {word!r} in {store.key} shows items "
                        f"{[i.id for i in items][:3]}, not the page {note.id!r} holding it"
                    )

            await self.settle(found)
        else:
            items = await self.hits(store.provider, word)
            assert not items, (
                f"{_Harm.LEAK}: {store.key} recalls {word!r}, written in {note.store} "
                f"(item {items[0].id!r}): filter every read by the provider's own scope"
            )

    async def recall_common(self, scope: Scope, limit: int) -> None:
        store = self.store_of(scope)
        self.last = store.key
        await self.settle(functools.partial(self._common_truthful, store, self.common, limit))

    async def _common_truthful(self, store: _Store, word: str, limit: int) -> None:
        """recall(``word``, limit) against the model: the limit, ``complete``, no leak."""
        ids = set(store.notes)
        result = await store.provider.recall(word, limit=limit)
        assert len(result.items) <= limit, (
            f"{_Harm.LIE}: recall(limit={limit}) in {store.key} returned "
            f"{len(result.items)} items: never more than asked for"
        )
        if self.facts:
            return
        shown = [i.id for i in result.items if _nfc(word) in item_text(i)]
        self._no_strangers(store, shown, f"recall({word!r}, limit={limit})")
        n = len(ids)
        assert len(set(shown)) == len(shown), (
            f"{_Harm.LIE}: recall(limit={limit}) in {store.key} lists one page twice: "
            f"{sorted(i for i in shown if shown.count(i) > 1)[:3]}"
        )
        missing = len(ids - set(shown))
        if n > limit:
            assert not result.complete, (
                f"{_Harm.LIE}: {n} pages of {store.key} match and recall(limit={limit}) "
                f"shows {len(shown)}, yet says complete=True (a silent cap): complete is "
                "true exactly when every match is shown"
            )
            assert len(shown) == limit, (
                f"{_Harm.LOSS}: {n} pages of {store.key} match, recall(limit={limit}) shows "
                f"{len(shown)}"
            )
        else:
            assert not missing, (
                f"{_Harm.LOSS}: {n} pages of {store.key} match, recall(limit={limit}) shows "
                f"{len(shown)} of them (complete={result.complete}): a silent cap below the "
                "limit, a write that never landed, or a forget that removed more than its "
                "receipt lists"
            )
            assert result.complete or result.degraded, (
                f"{_Harm.LIE}: recall(limit={limit}) in {store.key} shows all {n} matches but "
                "says complete=False without a degraded reason: complete is true exactly "
                "when every match is shown"
            )

    def _no_strangers(self, store: _Store, shown: Iterable[str], what: str) -> None:
        """Every id ``what`` showed belongs to ``store``: not another store's, not
        forgotten."""
        for page in shown:
            if page in store.notes or page in store.earlier:
                continue
            held = next((s.key for s in self.stores.values() if page in s.earlier), None)
            if held is not None:
                raise AssertionError(
                    f"{_Harm.LEAK}: {what} in {store.key} shows {page!r}, a page {held} held "
                    "before: every read must filter by the provider's own scope"
                )
            if page in store.forgotten:
                raise AssertionError(
                    f"{_Harm.LIE}: {what} in {store.key} shows {page!r}, which forget said it "
                    "removed"
                )
            owner = next((s.key for s in self.stores.values() if page in s.notes), None)
            if owner is not None:
                raise AssertionError(
                    f"{_Harm.LEAK}: {what} in {store.key} shows {page!r}, a page of {owner}: "
                    "every read must filter by the provider's own scope"
                )
            if self.shared:
                continue  # one bank: the many-matches pages (not listed apart) are in it too
            if page in self.many_ids:
                raise AssertionError(
                    f"{_Harm.LEAK}: {what} in {store.key} shows {page!r}, a page of another "
                    "Pen (pen:many-matches)"
                )
            raise AssertionError(
                f"{_Harm.LIE}: {what} in {store.key} shows {page!r}, which nobody wrote there"
            )
