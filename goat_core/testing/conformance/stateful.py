"""The model-based contract test: random sequences of operations checked against a model
(docs/design.md, Scopes; Writes and outcomes; Reads and truth; Browsing and links).

Hypothesis drives a :class:`~hypothesis.stateful.RuleBasedStateMachine` whose rules
remember (titled and untitled), recall, walk the pages to the end, show by id and by title,
give feedback and forget, each only where the provider declares the capability. Several
scopes with look-alike ids are open at once, and the text is hostile (quotes, ``%``, ``_``,
``\\``, ``'; --``, ``{}``, ``$1``, backticks, very long strings, NFD titles, many pages
sharing one title). A model in memory says what each store holds; every rule checks the
provider against it, and an invariant re-checks the store the last rule touched.

The machine runs on a worker thread and awaits each provider call on the test's event loop
(``anyio.from_thread.run``), so the runtime guards watch the provider as in every contract
test. The test's world is shared by every example Hypothesis runs (one world per test), so
each example starts by listing what the stores already hold: those pages are the model's
"earlier" pages, and everything the example writes carries its own tag.
"""

from __future__ import annotations

import functools
import unicodedata
from typing import ClassVar, TypeVar

import anyio
import anyio.from_thread
import pytest

from goat_core.contract import (
    Capability,
    MemoryWrite,
    Page,
    Provider,
    ProviderSpec,
    Receipt,
    ReceiptStatus,
    Scope,
)
from goat_core.errors import (
    Ambiguous,
    BadInput,
    GoatError,
    NotFound,
    NotSupported,
    StoreUnwritable,
)
from goat_core.testing.conformance.base import (
    ConformanceBase,
    StoreSet,
    item_text,
    token,
)
from goat_core.testing.conformance.faults import Fault, FaultInjector
from goat_core.testing.conformance.model import (
    _SHARED_LEAD,
    HOSTILE_TEXTS,
    INJECTION_PROBES,
    RunnerBase,
    _Harm,
    _key,
    _nfc,
    _Note,
    _Store,
)
from goat_core.testing.conformance.scopes import (
    codepoints,
    stateful_scopes,
)

__all__ = ["StatefulTests"]

T = TypeVar("T")


class Runner(RunnerBase):
    """The rest of the provider side of the state machine: pages, show, feedback, forget,
    the many-matches rule and writes under a fault."""

    # -- pages ---------------------------------------------------------------------------------
    async def walk(self, scope: Scope, limit: int) -> None:
        store = self.store_of(scope)
        self.last = store.key

        async def walked() -> None:
            await self._walk_exactly(store.provider, store.key, limit, store)

        await self.settle(walked)

    async def _walk_exactly(
        self,
        provider: Provider,
        key: str,
        limit: int,
        store: _Store | None,
        count: int = 0,
    ) -> None:
        """Walk the pages to the end: each page once, none missing, none foreign."""
        listed: list[str] = []
        titles: dict[str, str] = {}
        cursor: str | None = None
        requests = 0
        while True:
            listing = await provider.list_pages(limit=limit, cursor=cursor)
            requests += 1
            assert len(listing.items) <= limit, (
                f"{_Harm.LIE}: list_pages(limit={limit}) in {key} returned "
                f"{len(listing.items)} items"
            )
            for p in listing.items:
                titles[p.id] = p.title
            listed.extend(p.id for p in listing.items)
            if listing.next_cursor is None:
                last_complete = listing.complete or bool(listing.degraded)
                break
            assert not listing.complete, (
                f"{_Harm.LIE}: a page of {key}'s listing with a next_cursor says complete=True"
            )
            cursor = listing.next_cursor
            assert requests < 3000, f"{_Harm.LIE}: list_pages in {key} never ends"
        twice = sorted({i for i in listed if listed.count(i) > 1})
        assert not twice, (
            f"{_Harm.LIE}: the walk of {key} (limit={limit}) lists {twice[:3]} more than once "
            f"(titles {[titles[i] for i in twice[:3]]}): make the cursor name the last "
            "(title, id) listed"
        )
        if store is None:  # the many-matches Pen: exactly its pages, counted
            assert len(listed) >= count, (
                f"{_Harm.LOSS}: the walk of {key} (limit={limit}, {requests} requests) lists "
                f"{len(listed)} of its {count} pages: the cursor skips pages (pages sharing a "
                "title at a page boundary?) or the list is silently capped; continue right "
                "after the last (title, id) listed"
            )
        else:
            missing = sorted(set(store.notes) - set(listed))
            if missing:
                shared = [n.title for n in store.notes.values() if n.id in missing]
                raise AssertionError(
                    f"{_Harm.LOSS}: the walk of {key} (limit={limit}, {requests} requests) "
                    f"never lists {len(missing)} of its {len(store.notes)} pages "
                    f"({missing[:3]}, titled {shared[:2]}): the cursor skips pages (pages "
                    "sharing a title at a page boundary?) or the list is silently capped; "
                    "continue right after the last (title, id) listed"
                )
        assert last_complete, (
            f"{_Harm.LIE}: the last page of {key}'s listing says complete=False without a reason"
        )
        if store is not None:
            self._no_strangers(store, listed, f"list_pages(limit={limit})")

    def where(self, scope: Scope, note: _Note, same: bool) -> tuple[_Store, _Note | None]:
        """The note's own store (``same``), else the store of ``scope``, and the note as that
        store knows it: ids are per store (two folder stores may both hold ``x.md``), so
        another store's page of the same id is that store's own page (``None``: one it held
        before this sequence, which the step leaves alone)."""
        store = self.stores[note.store] if same else self.store_of(scope)
        if store.key == note.store:
            return store, note
        if note.id in store.notes:
            return store, store.notes[note.id]
        if note.id in store.earlier:
            return store, None
        return store, note

    async def show_id(self, scope: Scope, index: int, same: bool) -> None:
        picked = self.pick(index)
        if picked is None:
            return
        store, note = self.where(scope, picked, same)
        if note is None:
            return
        self.last = store.key
        if note.store == store.key:

            async def opens() -> None:
                page = await store.provider.get_page(note.id)
                assert isinstance(page, Page)
                assert page.id == note.id, (
                    f"{_Harm.LIE}: get_page({note.id!r}) in {store.key} opened {page.id!r}"
                )
                if not self.facts:
                    body = _nfc(page.body)
                    lost = [w for w in note.words if w not in body]
                    assert not lost, (
                        f"{_Harm.LOSS}: the page {note.id!r} of {store.key} lacks {lost[:3]}, "
                        "written to it"
                    )

            await self.settle(opens)
            return
        try:
            page = await store.provider.get_page(note.id)
        except NotFound:
            return
        raise AssertionError(
            f"{_Harm.LEAK}: get_page({note.id!r}) in {store.key} opened {page.id!r}, a page of "
            f"{note.store}: show by id must keep the scope filter (show and forget act only "
            "inside the provider's scope)"
        )

    async def show_title(self, scope: Scope, index: int, variant: int, source: int) -> None:
        """``source`` 0: a titled note's title, in its own store; 1: the same, in the store
        of ``scope``; 2: an injection probe, in the store of ``scope``."""
        titled = [n for n in self.live() if n.title]
        if source < 2 and titled:
            note = titled[index % len(titled)]
            store, _ = self.where(scope, note, source == 0)
            base = note.title or ""
        else:
            store = self.store_of(scope)
            base = INJECTION_PROBES[index % len(INJECTION_PROBES)]
        self.last = store.key
        ref = (base, base.upper(), unicodedata.normalize("NFD", base.lower()))[variant % 3]
        mine = {n.id for n in store.notes.values() if _key(n.title) == _key(ref)}
        what = f"get_page({codepoints(ref)})"

        async def shown() -> None:
            try:
                page = await store.provider.get_page(ref)
            except Ambiguous as exc:
                candidates = set(exc.candidates)
                self._no_strangers(store, candidates, what)
                assert len(mine) > 1 or (candidates - mine - store.earlier), (
                    f"{_Harm.LIE}: {what} is Ambiguous ({sorted(candidates)[:3]}) though "
                    f"{len(mine)} page(s) carry that title"
                )
                assert mine <= candidates, (
                    f"{_Harm.LIE}: {what} is Ambiguous but its candidates lack "
                    f"{sorted(mine - candidates)[:3]}, pages of that title"
                )
                return
            except NotFound:
                assert not mine, (
                    f"{_Harm.LOSS}: {what} is NotFound, but {sorted(mine)[:3]} carry that "
                    "title (case-insensitive, NFC): whatever remember accepts as a title, "
                    f"show finds by it; the title is {codepoints(ref)}"
                )
                return
            self._no_strangers(store, [page.id], what)
            if mine:
                assert page.id in mine or page.id in store.earlier, (
                    f"{_Harm.LIE}: {what} opened {page.id!r}, not one of the pages "
                    f"{sorted(mine)[:3]} of that title"
                )

        await self.settle(shown)

    # -- feedback ------------------------------------------------------------------------------
    async def feedback(self, scope: Scope, index: int, target: int) -> None:
        store = self.store_of(scope)
        provider = self.providers[scope.key]
        word = token()
        on: _Note | None = None
        mine = list(store.notes.values())
        others = [n for n in self.live() if n.store != store.key and n.id not in store.notes]
        others = [n for n in others if n.id not in store.earlier]
        if target == 1 and mine and self.pages:
            on = mine[index % len(mine)]
        elif target == 2 and others and self.pages:
            on = others[index % len(others)]
        write = MemoryWrite(
            kind="feedback",
            text=f"{word} {self.common} feedback {HOSTILE_TEXTS[index % len(HOSTILE_TEXTS)]}",
            on=on.id if on else None,
            source="stateful",
        )
        what = f"feedback({word!r}, on={on.id if on else None!r})"
        if on is None or on.store == store.key:
            await self._write(store, scope, write, word, what, provider.feedback, on)
            if on is not None and not self.facts:
                await self._tied(store, on, word, what)
            return
        self.last = store.key
        try:
            receipt = await provider.feedback(write)
        except (NotFound, BadInput):
            await self.nowhere(word, f"{what} in {store.key} about a page of {on.store} raised")
            return
        assert receipt.status in {ReceiptStatus.STORED, ReceiptStatus.QUEUED}, receipt
        body = _nfc((await self.stores[on.store].provider.get_page(on.id)).body)
        assert word not in body, (
            f"{_Harm.LEAK}: {what} given in {store.key} was written into the page {on.id!r} "
            f"of {on.store}: resolve on= as get_page does, inside the provider's own scope"
        )
        await self.absent_elsewhere(store.key, word, what)
        item = await self.landed_as(store, word, what)
        self.learn(store, item, write, word, None)

    async def _tied(self, store: _Store, on: _Note, word: str, what: str) -> None:
        async def tied() -> None:
            if word in _nfc((await store.provider.get_page(on.id)).body):
                if word not in on.words:
                    on.words.append(word)
                return
            items = await self.hits(store.provider, word)
            if any(i.id == on.id for i in items):
                return
            for item in items:
                try:
                    holder = await store.provider.get_page(item.id)
                except NotFound:
                    continue
                names = {
                    str(v) for v in (*holder.frontmatter.values(), *holder.provenance.values())
                }
                if {on.id, on.title or ""} & names:
                    return
            raise AssertionError(
                f"{_Harm.LOSS}: {what} in {store.key} is not tied to its page: the page does "
                "not hold it, no recalled item carries its id, no page holding it names it"
            )

        await self.settle(tied)

    # -- forget --------------------------------------------------------------------------------
    async def forget(self, scope: Scope, index: int, same: bool, twin: bool) -> None:
        """Forget a note (``twin``: one of the pages sharing a title, where there are)."""
        note = self.pick(index)
        twins = [
            n
            for s in self.stores.values()
            for n in s.notes.values()
            if n.title and sum(_key(m.title) == _key(n.title) for m in s.notes.values()) > 1
        ]
        if twin and twins:
            note = twins[index % len(twins)]
        if note is None or not self.forget_supported:
            return
        store, known = self.where(scope, note, same)
        if known is None:
            return
        note = known
        self.last = store.key
        try:
            receipt = await store.provider.forget(note.id)
        except NotSupported:
            self.forget_supported = False
            return
        except NotFound:
            assert note.store != store.key, (
                f"{_Harm.LOSS}: forget({note.id!r}) in {store.key} is NotFound, yet the page "
                "is there"
            )
            owner = self.stores[note.store]

            async def kept() -> None:
                assert await self.hits(owner.provider, note.words[-1]), (
                    f"{_Harm.LOSS}: forget({note.id!r}) in {store.key} was NotFound, yet the "
                    f"page of {note.store} holding {note.words[-1]!r} is gone"
                )

            await self.settle(kept)
            return
        if note.store != store.key:
            raise AssertionError(
                f"{_Harm.LOSS}: forget({note.id!r}) in {store.key} answered "
                f"{receipt.status.value!r} removing {list(receipt.removed)}: the page belongs "
                f"to {note.store}; forget must act only inside the provider's scope (NotFound)"
            )
        assert receipt.status in {ReceiptStatus.STORED, ReceiptStatus.QUEUED}, receipt
        removed = set(receipt.removed)
        assert note.id in removed, (
            f"{_Harm.LIE}: forget({note.id!r}) in {store.key} lists {sorted(removed)} as "
            "removed, not the page"
        )
        others = removed - {note.id}
        assert not others, (
            f"{_Harm.LOSS}: forget({note.id!r}) in {store.key} also removed {sorted(others)}"
        )
        del store.notes[note.id]
        store.forgotten[note.id] = note.words

        async def gone() -> None:
            for word in note.words:  # (a title made from its text may name it: not it)
                still = [i.id for i in await self.hits(store.provider, word) if i.id == note.id]
                assert not still, (
                    f"{_Harm.LIE}: forget said it removed {note.id!r}; recall of {word!r} still "
                    "finds it"
                )
            if self.pages:
                try:
                    page = await store.provider.get_page(note.id)
                except NotFound:
                    return
                # The reference may now resolve to another page (a twin's title): not it.
                assert page.id != note.id, (
                    f"{_Harm.LIE}: forget said it removed {note.id!r}; get_page still opens it"
                )

        await self.settle(gone)

    # -- many matches: more than any plausible cap ---------------------------------------------
    async def many(self, below: int) -> None:
        if self.many_words is None:
            await self._fill_many()
        assert self.many_words is not None
        word, some = self.many_words
        provider = self.many_provider
        n, k = self.suite.stateful_many, self.suite.stateful_many_subset
        key = "pen:many-matches" if not self.shared else "bank"

        async def truthful() -> None:
            for limit in (below, 100):
                result = await provider.recall(word, limit=limit)
                assert len(result.items) <= limit, (
                    f"{_Harm.LIE}: recall(limit={limit}) returned {len(result.items)} items"
                )
                if self.facts:
                    continue
                shown = [i for i in result.items if word in item_text(i)]
                assert not result.complete, (
                    f"{_Harm.LIE}: {n} pages of {key} match and recall(limit={limit}) shows "
                    f"{len(shown)}, yet says complete=True: a silent cap answered as complete"
                )
                assert len(shown) == limit, (
                    f"{_Harm.LOSS}: {n} pages match, recall(limit={limit}) shows {len(shown)}"
                )
            if not self.facts:
                result = await provider.recall(some, limit=100)
                subset = {i.id for i in result.items if some in item_text(i)}
                assert len(subset) == k, (
                    f"{_Harm.LOSS}: {k} pages of {key} match, recall(limit=100) shows "
                    f"{len(subset)} of them (complete={result.complete})"
                )
                assert result.complete or result.degraded, (
                    f"{_Harm.LIE}: recall(limit=100) shows all {k} matches but says "
                    "complete=False without a reason"
                )
            if self.pages and not self.shared:
                for limit in (below, self.page_limit):
                    await self._walk_exactly(provider, key, limit, None, n)

        await self.settle(truthful)

    async def _fill_many(self) -> None:
        """Once per test: ``stateful_many`` pages sharing one word, a quarter of them one
        title, ``stateful_many_subset`` of them a second word."""
        word, some = token("many"), token("some")
        provider = self.many_provider
        n, k = self.suite.stateful_many, self.suite.stateful_many_subset
        for i in range(n):
            extra = some if i < k else ""
            unique = token()
            if i % 4 == 0:  # untitled with one lead: one generated title
                text = f"{word} {_SHARED_LEAD} {extra} {unique}"
                title = None
            else:
                text = f"{word} {extra} {unique} page {i}"
                title = f"Many {i:03d} {word}"
            receipt = await provider.remember(MemoryWrite(text=text, title=title, source="t"))
            assert receipt.status in {ReceiptStatus.STORED, ReceiptStatus.QUEUED}, receipt
            self.counter += 1
        self.many_words = (word, some)
        if self.pages and not self.shared:

            async def listed() -> None:
                self.many_ids = set(await self._walk_ids(provider, self.page_limit))
                assert len(self.many_ids) >= n or not self.eventual, "not listed yet"

            await self.settle(listed)

    # -- faults: against a store that already holds notes --------------------------------------
    async def fault(self, index: int, which: int) -> None:
        """A write under a fault into the store of a note (so a store that holds notes)."""
        injector = self.faults
        assert injector is not None
        kinds = sorted(injector.kinds, key=lambda f: f.value)
        fault = kinds[which % len(kinds)]
        note = self.pick(index)
        if note is None:
            return  # a fault step runs against a store that holds notes
        store = self.stores[note.store]
        provider = store.provider
        self.last = store.key
        before = set(store.notes)
        word = token()
        write = MemoryWrite(text=f"{word} {self.common} under {fault.value}", source="stateful")
        receipt: Receipt | None = None
        error: BaseException | None = None
        with injector.inject(fault, provider):
            try:
                receipt = await provider.remember(write)
            except GoatError as exc:
                error = exc
            except Exception as exc:
                raise AssertionError(
                    f"{_Harm.LIE}: under {fault.value}, remember in {store.key} (holding "
                    f"{len(before)} notes) raised an untyped {type(exc).__name__}: {exc}"
                ) from exc
            await self._read_under_fault(store, fault)
        if fault in (Fault.READ_ONLY, Fault.DISK_FULL) and error is not None:
            assert isinstance(error, StoreUnwritable), (
                f"under {fault.value}, remember raised {type(error).__name__}: {error}; a full "
                "or read-only store is StoreUnwritable"
            )
        said = (
            f"raised {type(error).__name__}"
            if error is not None
            else f"answered {receipt.status.value!r}"
            if receipt is not None
            else "returned"
        )
        if error is not None or (
            receipt is not None and receipt.status in {ReceiptStatus.REJECTED, ReceiptStatus.FAILED}
        ):
            await self.nowhere(word, f"under {fault.value}, remember in {store.key} {said}")
            return
        assert receipt is not None
        if receipt.status is ReceiptStatus.UNKNOWN:
            found = await self.hits(store.provider, word)
            if found:
                self.learn(store, found[0], write, word, None)
            return
        what = (
            f"under {fault.value}, remember in {store.key} (already holding {len(before)} "
            f"notes) {said}"
        )

        async def landed() -> None:
            found = await self.hits(store.provider, word)
            assert found, (
                f"{_Harm.LIE}: {what}, but the write never landed: a lost answer must be "
                "'unknown' (or checked against the write itself, never settled by the "
                "scope's latest write)"
            )

        await self.settle(landed)
        item = await self.landed_as(store, word, what)
        if receipt.id is not None and self.pages and not self.facts:
            assert receipt.id not in before, (
                f"{_Harm.LIE}: {what} with the id {receipt.id!r} of an earlier note: the "
                "answer was settled by the scope's latest write, not by this write"
            )
        await self.absent_elsewhere(store.key, word, what)
        self.learn(store, item, write, word, None)

    async def _read_under_fault(self, store: _Store, fault: Fault) -> None:
        if self.facts:
            return
        try:
            result = await store.provider.recall(self.common, limit=100)
        except GoatError:
            return
        shown = [i for i in result.items if self.common in item_text(i)]
        if not shown:
            assert result.degraded or not result.complete, (
                f"{_Harm.LIE}: under {fault.value}, recall in {store.key} (holding "
                f"{len(store.notes)} notes) answered an empty complete=True result: a "
                "silent empty"
            )

    # -- after every step ----------------------------------------------------------------------
    async def check_last(self) -> None:
        """The store the last step touched holds exactly the model's pages."""
        if self.last is None or self.facts:
            return
        store = self.stores[self.last]
        if len(store.notes) > 100:
            return
        await self.settle(functools.partial(self._common_truthful, store, self.common, 100))


def _machine(runner: Runner, spec: ProviderSpec, faults: FaultInjector | None) -> type:
    """The state machine class for one test (its rules gated on the spec)."""
    from hypothesis import strategies as st
    from hypothesis.stateful import (
        RuleBasedStateMachine,
        initialize,
        invariant,
        precondition,
        rule,
    )

    n_scopes = len(runner.scopes)
    # Global and the first Pen come up more often, so writes meet in one store (pages
    # sharing a title, forgets among them); every scope still comes up.
    scopes = st.sampled_from([0, 1, 0, 1, *range(n_scopes)])
    picks = st.integers(0, 63)
    hostiles = st.integers(0, len(HOSTILE_TEXTS) - 1)
    pages = spec.supports(Capability.PAGES)
    feedback = spec.supports(Capability.FEEDBACK)
    titles = bool(spec.title_lookup) and pages
    fault_kinds = bool(faults is not None and faults.kinds)

    def named(scope: int) -> Scope:
        return runner.scope(scope)

    class ProviderModel(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.many_done = False
            runner.run(runner.begin)

        # Every sequence starts from notes in three stores (two sharing a generated
        # title, one with an NFD title), so reads, shows, forgets and faults meet pages.
        @initialize(hostile=hostiles)
        def seed_notes(self, hostile: int) -> None:
            glob, pen = named(0), named(1)
            runner.run(runner.remember, glob, 0, 0, hostile, True)
            runner.run(runner.remember, glob, 0, 1, hostile + 1, True)
            runner.run(runner.remember, pen, 3, 0, hostile, False)
            runner.run(runner.remember, named(2), 1, hostile, hostile, False)

        # Writes come up twice as often as any other step: two rules.
        @rule(scope=scopes, index=picks, hostile=hostiles, shared=st.booleans())
        def remember(self, scope: int, index: int, hostile: int, shared: bool) -> None:
            runner.run(runner.remember, named(scope), 0, index, hostile, shared)

        @rule(scope=scopes, title=st.sampled_from([1, 2, 2, 3]), index=picks, hostile=hostiles)
        def remember_titled(self, scope: int, title: int, index: int, hostile: int) -> None:
            runner.run(runner.remember, named(scope), title, index, hostile, False)

        @precondition(lambda self: bool(runner.live()))
        @rule(scope=scopes, note=picks)
        def recall(self, scope: int, note: int) -> None:
            runner.run(runner.recall_note, named(scope), note)

        @rule(scope=scopes, limit=st.sampled_from([1, 2, 3, 5, 10, 100]))
        def recall_limit(self, scope: int, limit: int) -> None:
            runner.run(runner.recall_common, named(scope), limit)

        @precondition(lambda self: pages)
        @rule(scope=scopes, limit=st.sampled_from([1, 2, 3, 7, 50, 1000]))
        def walk_pages(self, scope: int, limit: int) -> None:
            runner.run(runner.walk, named(scope), min(limit, runner.page_limit))

        @precondition(lambda self: pages and bool(runner.live()))
        @rule(scope=scopes, note=picks, same=st.booleans())
        def show_by_id(self, scope: int, note: int, same: bool) -> None:
            runner.run(runner.show_id, named(scope), note, same)

        @precondition(lambda self: titles)
        @rule(scope=scopes, ref=picks, variant=st.integers(0, 2), source=st.integers(0, 2))
        def show_by_title(self, scope: int, ref: int, variant: int, source: int) -> None:
            runner.run(runner.show_title, named(scope), ref, variant, source)

        @precondition(lambda self: feedback)
        @rule(scope=scopes, note=picks, about=st.integers(0, 2))
        def feedback(self, scope: int, note: int, about: int) -> None:
            runner.run(runner.feedback, named(scope), note, about)

        @precondition(lambda self: runner.forget_supported and bool(runner.live()))
        @rule(scope=scopes, note=picks, same=st.booleans(), twin=st.booleans())
        def forget(self, scope: int, note: int, same: bool, twin: bool) -> None:
            runner.run(runner.forget, named(scope), note, same, twin)

        @precondition(lambda self: not self.many_done)
        @rule(below=st.sampled_from([7, 20, 50]))
        def many_matches(self, below: int) -> None:
            self.many_done = True  # once per sequence: it reads hundreds of pages
            runner.run(runner.many, below)

        @precondition(lambda self: fault_kinds and bool(runner.live()))
        @rule(note=picks, fault=st.integers(0, 4))
        def fault_write(self, note: int, fault: int) -> None:
            runner.run(runner.fault, note, fault)

        @invariant()
        def last_store_matches_the_model(self) -> None:
            runner.run(runner.check_last)

    ProviderModel.__name__ = f"{spec.name.title().replace('_', '')}Model"
    return ProviderModel


def _run_machine(
    runner: Runner,
    spec: ProviderSpec,
    faults: FaultInjector | None,
    examples: int,
    steps: int,
    shrink_seconds: float,
) -> None:
    from hypothesis import HealthCheck, settings
    from hypothesis.internal.conjecture import engine
    from hypothesis.stateful import run_state_machine_as_test

    budget = settings(
        max_examples=examples,
        stateful_step_count=steps,
        derandomize=True,
        database=None,
        deadline=None,
        print_blob=False,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
    )
    # Shrinking replays sequences against a real store; bound its time (Hypothesis's own
    # bound is five minutes). The shortest sequence found by then is reported.
    before = getattr(engine, "MAX_SHRINKING_SECONDS", None)
    if before is not None:
        engine.MAX_SHRINKING_SECONDS = shrink_seconds  # type: ignore[assignment]
    try:
        run_state_machine_as_test(_machine(runner, spec, faults), settings=budget)
    finally:
        if before is not None:
            engine.MAX_SHRINKING_SECONDS = before


class StatefulTests(ConformanceBase):
    """Mixed into :class:`~goat_core.testing.ProviderConformanceTests`."""

    #: Examples (sequences) Hypothesis runs, and the steps in each. The run is derandomized
    #: (a fixed seed from the test's name), so CI sees the same sequences every time.
    stateful_max_examples: ClassVar[int] = 6
    stateful_step_count: ClassVar[int] = 18
    #: Pages the "many matches" rule writes once per test (more than any plausible cap), and
    #: how many of them share a second word (fewer than the largest recall limit, 100).
    stateful_many: ClassVar[int] = 210
    stateful_many_subset: ClassVar[int] = 40
    #: The deadline of the stateful test (seconds): it runs many operations.
    stateful_deadline: ClassVar[float] = 600.0
    #: How long Hypothesis may shrink a failing sequence (seconds).
    stateful_shrink_seconds: ClassVar[float] = 60.0
    #: The largest ``list_pages`` limit the provider takes (a remote API's own bound, such
    #: as 100): page walks use at most this, so a limit above 210 matches needs one >= 211.
    stateful_page_limit: ClassVar[int] = 1000

    async def test_model_based_sequences(
        self, goat_stores: StoreSet, goat_faults: FaultInjector | None
    ) -> None:
        """Random sequences of remember (titled and untitled), recall, page walks, show by id
        and by title, feedback, forget and (with a fault fixture) writes under a fault,
        across Global and look-alike Pens (``a``, ``ab``, ``a_b``, ``a.b``, ``a-b``; ``a%b``
        and the NFC/NFD twins ``café`` are refused by the Pen rule and skipped) with hostile
        text, checked against a model after every step: each write is visible exactly in
        its scope, ``show`` and ``forget`` act only inside it, feedback lands where given, a
        walk lists each page once, and ``complete`` is true exactly when every match is
        shown, also with 210 matches and limits below and above them. Hypothesis shrinks a
        failure to the shortest sequence and prints it.

        Troubleshooting: read the printed sequence from the top; its last step failed. Run
        it by hand against your provider. "a LEAK" means a read, ``show`` or ``forget``
        reached another scope (filter every query by the scope, with parameters, never
        pasted text); "a LIE" means an answer said something untrue (``complete``, a
        receipt, a removed list); "a LOSS" means a write went missing (a cursor that skips,
        a cap, a merge).
        """
        import importlib.util

        if importlib.util.find_spec("hypothesis") is None:
            pytest.skip("the stateful test needs hypothesis (goat-core[testing] installs it)")
        spec = goat_stores.spec
        scopes, _refused = stateful_scopes()
        providers = {s.key: await goat_stores.open(s) for s in scopes}
        many = await goat_stores.open(Scope.pen("many-matches"))
        runner = Runner(self, spec, scopes, providers, goat_faults, many)
        # Hypothesis is imported and run on a worker thread: a first import takes seconds,
        # which on the loop would trip the lag guard.
        run = functools.partial(
            _run_machine,
            runner,
            spec,
            goat_faults,
            self.stateful_max_examples,
            self.stateful_step_count,
            self.stateful_shrink_seconds,
        )
        try:
            await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        except Exception as exc:
            parts = list(getattr(exc, "exceptions", ())) or [exc]
            sources = [exc] if parts == [exc] else [exc, *parts]
            notes = "\n".join(
                dict.fromkeys(n for e in sources for n in getattr(e, "__notes__", []))
            )
            what = "\n".join(
                str(e) if isinstance(e, AssertionError) else f"{type(e).__name__}: {e}"
                for e in parts
            )
            raise AssertionError(
                f"{what}\n\nThe shortest sequence Hypothesis found (its last step failed):\n{notes}"
            ) from None
        finally:
            runner.stopped = True


StatefulTests.test_model_based_sequences.goat_deadline_attr = "stateful_deadline"  # type: ignore[attr-defined]
