"""Contract tests of the truth of reads and writes: ``limit`` and ``complete``, the exact
``max_input_chars`` round trip, look-alike Pen ids, the paginated walk under writes, feedback
tied to its page, ``forget`` of an unknown id, and title lookup (docs/design.md, Writes and
outcomes; Reads and truth; Browsing and links).

Each test's docstring ends with a ``Troubleshooting:`` note for provider authors.
"""

from __future__ import annotations

import unicodedata

import pytest

from goat_core.contract import (
    Capability,
    MemoryWrite,
    PageSummary,
    ReceiptStatus,
    Scope,
)
from goat_core.errors import NotFound, NotSupported, TooLarge
from goat_core.testing.conformance.base import (
    ConformanceBase,
    StoreSet,
    _walk_pages,
    find,
    item_text,
    token,
)

__all__ = ["LOOKALIKE_PEN_IDS", "TruthTests"]

#: Pen ids that look alike; each is its own store (docs/design.md, The conformance suite).
LOOKALIKE_PEN_IDS = ("a", "ab", "a-b", "a.b", "a_b", "a0")


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _exact_text(size: int, head: str, tail: str) -> str:
    """ASCII text of exactly ``size`` characters: ``head`` first, ``tail`` in the last 100."""
    filler_words = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf")
    parts: list[str] = [head]
    length = len(head)
    n = 0
    budget = size - len(tail) - 60  # the tail goes inside the last 100 characters
    while length < budget:
        word = filler_words[n % len(filler_words)]
        sep = "\n" if n % 12 == 11 else " "
        parts.append(sep + word)
        length += 1 + len(word)
        n += 1
    text = "".join(parts) + " " + tail
    pad = size - len(text)
    if pad > 0:
        text += " " + "z" * (pad - 1) if pad > 1 else "z"
    return text[:size]


class TruthTests(ConformanceBase):
    """Mixed into :class:`~goat_core.testing.ProviderConformanceTests`."""

    # -- limit and complete -------------------------------------------------------------------
    async def test_recall_honours_limit_and_complete(self, goat_stores: StoreSet) -> None:
        """``recall(q, limit=n)`` never returns more than ``n`` items, and ``complete`` is
        ``False`` whenever more matched; a ``complete=True`` answer holds every match.

        Twelve notes share one word; recall runs with limits 1, 5 and 50.

        Troubleshooting: pass ``limit`` to your query (``LIMIT ?``, ``top_k``), and compute
        ``complete`` from whether more matched (ask for ``limit + 1`` and drop the last), not
        from ``len(items) < some internal cap``. A provider declaring ``extracts_facts`` is
        only held to the limit (its facts need not map one to one onto the notes).
        """
        spec = goat_stores.spec
        provider = await goat_stores.open(Scope.global_())
        word = token()
        for i in range(12):
            await provider.remember(
                MemoryWrite(text=f"{word} shared note {i} {token('u')}", source="test")
            )

        async def honoured() -> None:
            for limit in (1, 5, 50):
                result = await provider.recall(word, limit=limit)
                assert len(result.items) <= limit, (
                    f"recall(limit={limit}) returned {len(result.items)} items: limit is "
                    "ignored (never return more than asked for)"
                )
                if spec.extracts_facts:
                    continue
                hits = [i for i in result.items if word in item_text(i)]
                if limit < 12:
                    assert len(hits) == limit, (
                        f"recall(limit={limit}) returned {len(hits)} of 12 matching notes"
                    )
                    assert not result.complete, (
                        f"recall(limit={limit}) returned {len(result.items)} items while 12 "
                        "notes matched, yet says complete=True: complete must be False "
                        "whenever more matched"
                    )
                elif result.complete:
                    assert len(hits) == 12, (
                        f"recall(limit={limit}) says complete=True but returned {len(hits)} "
                        "of the 12 matching notes: a silent cap (say complete=False, or "
                        "return them all)"
                    )

        await self.settle(spec, honoured)

    @pytest.mark.goat_requires(Capability.PAGES)
    async def test_page_list_complete_is_truthful(self, goat_stores: StoreSet) -> None:
        """Every page of a listing holds at most ``limit`` items; ``complete=True`` only on
        the last page (no ``next_cursor``) and only when it holds everything; the walk sees
        each of 12 pages exactly once.

        Troubleshooting: ``complete = next_cursor is None and nothing was skipped``; a page
        that was cut by a cap carries a ``next_cursor``.
        """
        spec = goat_stores.spec
        provider = await goat_stores.open(Scope.global_())
        words = [token() for _ in range(12)]
        for i, word in enumerate(words):
            await provider.remember(MemoryWrite(text=f"{word} page", title=f"C{i:02d} {word}"))

        async def truthful() -> None:
            first = await provider.list_pages(limit=5)
            assert len(first.items) <= 5, f"list_pages(limit=5) returned {len(first.items)}"
            assert not first.complete, (
                "list_pages(limit=5) of 12 pages says complete=True: complete is true only on "
                "the last page with nothing skipped"
            )
            assert first.next_cursor, "list_pages(limit=5) of 12 pages gave no next_cursor"
            whole = await provider.list_pages(limit=50)
            if whole.complete:
                shown = " ".join(f"{p.id} {p.title}" for p in whole.items)
                missing = [w for w in words if w not in shown]
                assert not missing, (
                    f"list_pages(limit=50) says complete=True but lacks {len(missing)} of 12 "
                    "pages: a silent cap"
                )
            pages = await _walk_pages(provider, limit=5)
            ids = [p.id for p in pages]
            dupes = sorted({i for i in ids if ids.count(i) > 1})
            assert not dupes, f"the walk (limit=5) listed {dupes} more than once"

        await self.settle(spec, truthful)

    # -- ranking --------------------------------------------------------------------------------
    async def test_ranking_puts_every_term_first(self, goat_stores: StoreSet) -> None:
        """For a query of three words, a page holding all of them in its title and body ranks
        above a page holding one of them once, and above a page holding none (which need not
        be listed at all). Items are listed best first.

        Troubleshooting: sort by score descending (``ORDER BY rank``: FTS5's ``bm25()`` is
        lower-is-better, so negate it or sort ascending on it), and give the title weight.
        A provider declaring ``extracts_facts`` ranks its own facts and is exempt.
        """
        spec = goat_stores.spec
        if spec.extracts_facts:
            pytest.skip(
                f"provider {spec.name!r} declares extracts_facts: it ranks the facts it "
                "extracted, not the pages the test wrote"
            )
        provider = await goat_stores.open(Scope.global_())
        t1, t2, t3 = token("rka"), token("rkb"), token("rkc")
        best, one, none = token("best"), token("one"), token("none")
        writes = [
            (f"{t1} {t2} {t3}", f"{best} {t1} {t2} {t3} all of the words here"),
            (f"Other {one}", f"{one} mentions {t1} once among unrelated words"),
            (f"Nothing {none}", f"{none} holds none of the query words at all"),
        ]
        for title, text in writes:
            receipt = await provider.remember(MemoryWrite(text=text, title=title, source="t"))
            assert receipt.status in {ReceiptStatus.STORED, ReceiptStatus.QUEUED}, receipt

        async def ranked() -> None:
            items = (await provider.recall(f"{t1} {t2} {t3}", limit=10)).items
            order = [next((m for m in (best, one, none) if m in item_text(i)), "") for i in items]
            assert best in order, (
                f"a LOSS: recall of three words does not find the page holding all three "
                f"(it lists {len(items)} items)"
            )
            for worse, what in ((one, "one of them once"), (none, "none of them")):
                if worse in order:
                    assert order.index(best) < order.index(worse), (
                        f"a LIE: the page holding every query word in its title and body ranks "
                        f"below a page holding {what} (positions {order.index(best)} and "
                        f"{order.index(worse)}): items must be listed best first; is the "
                        "ranking reversed (bm25 is lower-is-better)?"
                    )

        await self.settle(spec, ranked)

    # -- the exact size limit -------------------------------------------------------------------
    async def test_max_input_chars_round_trip(self, goat_stores: StoreSet) -> None:
        """A text of exactly ``max_input_chars`` is stored whole: ``get_page`` returns it byte
        for byte and recall finds a word from its last 100 characters; one character more is
        :class:`TooLarge` with nothing stored.

        Troubleshooting: compare with ``>`` (not ``>=``) against ``max_input_chars``; make sure
        no buffer, column type, request limit or display cut shortens a text below it (a
        ``get_page`` body cut at a few thousand characters fails here). A provider that keeps
        extracted facts instead of the text declares ``extracts_facts=True``.
        """
        spec = goat_stores.spec
        if spec.extracts_facts:
            pytest.skip(
                f"provider {spec.name!r} declares extracts_facts: it keeps facts, not the whole "
                "text, so the byte-for-byte round trip does not apply"
            )
        provider = await goat_stores.open(Scope.global_())
        head, tail = token("head"), token("tail")
        text = _exact_text(spec.max_input_chars, head, tail)
        assert len(text) == spec.max_input_chars and tail in text[-100:]
        receipt = await provider.remember(MemoryWrite(text=text, title=f"Max {head}", source="t"))
        assert receipt.status in {ReceiptStatus.STORED, ReceiptStatus.QUEUED}, (
            f"a text of exactly max_input_chars ({spec.max_input_chars}) came back "
            f"{receipt.status.value!r} ({receipt.reason}): the limit is inclusive"
        )

        async def whole() -> None:
            assert await find(provider, tail), (
                f"recall of a word in the last 100 characters of a {len(text)}-character text "
                "finds nothing: the text was truncated or dropped when stored or indexed"
            )
            if spec.supports(Capability.PAGES):
                pages = await _walk_pages(provider, limit=50)
                summary = next((p for p in pages if head in p.title), None)
                assert summary is not None, f"no page titled 'Max {head}' is listed"
                body = (await provider.get_page(summary.id)).body
                assert text in body, (
                    f"get_page returns {len(body)} characters of a {len(text)}-character text"
                    + (f", cut after {_common(text, body)}" if text not in body else "")
                    + ": nothing may be truncated when stored or shown"
                )

        await self.settle(spec, whole)
        over = token("over")
        with pytest.raises(TooLarge):
            await provider.remember(
                MemoryWrite(text=over + " " + "y" * (spec.max_input_chars - len(over)), source="t")
            )
        assert not await find(provider, over), "a text one character over the limit was stored"

    # -- look-alike Pen ids ---------------------------------------------------------------------
    @pytest.mark.goat_requires(Capability.SCOPED_STORES)
    async def test_lookalike_pen_ids_are_isolated(self, goat_stores: StoreSet) -> None:
        """Pens ``a``, ``ab``, ``a-b``, ``a.b``, ``a_b`` and ``a0`` are six stores: none
        recalls or lists another's note.

        Troubleshooting: match a scope's keys, files or rows exactly, never by prefix or glob
        (``pen:a*`` also matches ``pen:ab``); do not map ``-``, ``.`` and ``_`` to one
        character when building a key or a folder name.
        """
        spec = goat_stores.spec
        words: dict[str, str] = {}
        for pen in LOOKALIKE_PEN_IDS:
            provider = await goat_stores.open(Scope.pen(pen))
            word = token()
            await provider.remember(MemoryWrite(text=f"{word} of pen {pen}", title=f"In {word}"))
            words[pen] = word

        async def isolated() -> None:
            for pen in LOOKALIKE_PEN_IDS:
                provider = await goat_stores.open(Scope.pen(pen))
                assert await find(provider, words[pen]), f"pen {pen!r} lost its own note"
                listed = ""
                if spec.supports(Capability.PAGES):
                    pages = await _walk_pages(provider, limit=50)
                    listed = " ".join(f"{p.id} {p.title}" for p in pages)
                for other, word in words.items():
                    if other == pen:
                        continue
                    leak = bool(await find(provider, word)) or word in listed
                    assert not leak, (
                        f"pen {pen!r} sees the note of pen {other!r}: look-alike Pen ids share "
                        "a store. Match scope keys exactly, never by prefix or glob"
                    )

        await self.settle(spec, isolated)

    # -- the paginated walk under writes -------------------------------------------------------
    @pytest.mark.goat_requires(Capability.PAGES)
    async def test_paginated_walk_under_writes(self, goat_stores: StoreSet) -> None:
        """A walk over 15 pages (limit 4) with two new pages written between each request
        lists every page that existed throughout exactly once and each new one at most once,
        or a page of the listing reports ``degraded``.

        Troubleshooting: make the cursor a position in the order (the last id or path seen),
        not an offset: an offset shifts when a page is inserted before it, so a page is
        listed twice or skipped.
        """
        spec = goat_stores.spec
        provider = await goat_stores.open(Scope.global_())
        old = [token() for _ in range(15)]
        for i, word in enumerate(old):
            await provider.remember(MemoryWrite(text=f"{word} old page", title=f"M{i:02d} {word}"))

        async def present() -> None:
            shown = " ".join(p.title for p in await _walk_pages(provider, limit=4))
            assert all(w in shown for w in old), "the 15 pages are not all listed yet"

        await self.settle(spec, present)
        seen: list[PageSummary] = []
        degraded: list[str] = []
        cursor: str | None = None
        new_words: list[str] = []
        for step in range(200):
            listing = await provider.list_pages(limit=4, cursor=cursor)
            seen.extend(listing.items)
            degraded.extend(listing.degraded)
            if listing.next_cursor is None:
                break
            cursor = listing.next_cursor
            if step < 3:
                for title in ("A", "Z"):  # one sorts before the cursor, one after
                    word = token()
                    new_words.append(word)
                    await provider.remember(
                        MemoryWrite(text=f"{word} new page", title=f"{title}{step} {word}")
                    )
        if degraded:
            return
        for word in old:
            count = sum(word in p.title for p in seen)
            assert count == 1, (
                f"a page that existed throughout the walk was listed {count} times "
                "with writes between requests and no degraded reason: use a cursor that "
                "names a position in the order (the last path or id), not an offset"
            )
        for word in new_words:
            count = sum(word in p.title for p in seen)
            assert count <= 1, f"a page written during the walk was listed {count} times"

    # -- feedback, forget, titles ---------------------------------------------------------------
    @pytest.mark.goat_requires(Capability.FEEDBACK, Capability.PAGES)
    async def test_feedback_is_tied_to_its_page(self, goat_stores: StoreSet) -> None:
        """Feedback ``on`` a page is tied to that page: the page's body holds it, a recalled
        item of it carries the page's id, or the page holding it names the page in its
        frontmatter or provenance.

        Troubleshooting: resolve ``write.on`` as ``get_page`` does and attach the feedback
        there (append to the page, or store it with the page's id); never drop ``on``.
        """
        spec = goat_stores.spec
        if spec.extracts_facts:
            pytest.skip(
                f"provider {spec.name!r} declares extracts_facts: it keeps its own facts, not "
                "the page a test wrote, so which memory feedback is about is the provider's "
                "own to test"
            )
        provider = await goat_stores.open(Scope.global_())
        about = token()
        await provider.remember(MemoryWrite(text=f"{about} the answer", title=f"About {about}"))
        page = next(p for p in await _walk_pages(provider, limit=50) if about in p.title)
        word = token()
        receipt = await provider.feedback(
            MemoryWrite(kind="feedback", text=f"{word} that answer was right", on=page.id)
        )
        assert receipt.status in {ReceiptStatus.STORED, ReceiptStatus.QUEUED, ReceiptStatus.UNKNOWN}

        async def tied() -> None:
            if word in (await provider.get_page(page.id)).body:
                return
            items = await find(provider, word)
            assert items, "the feedback cannot be recalled"
            if any(item.id == page.id for item in items):
                return
            for item in items:
                try:
                    holder = await provider.get_page(item.id)
                except NotFound:
                    continue
                names = {
                    str(v) for v in (*holder.frontmatter.values(), *holder.provenance.values())
                }
                if {page.id, page.title} & names:
                    return
            raise AssertionError(
                f"feedback on page {page.id!r} is not tied to it: the page does not hold it, "
                "no recalled item carries its id, and no page holding it names it "
                "(write.on was dropped)"
            )

        await self.settle(spec, tied)

    async def test_forget_of_unknown_id_is_not_found(self, goat_stores: StoreSet) -> None:
        """``forget`` of an id the store never issued raises :class:`NotFound`.

        Troubleshooting: look the reference up first and raise ``NotFound`` naming it; never
        answer ``stored`` with nothing removed. A provider that cannot delete raises
        ``NotSupported`` (this test then skips).
        """
        spec = goat_stores.spec
        provider = await goat_stores.open(Scope.global_())
        await provider.remember(MemoryWrite(text=f"{token()} something to keep", source="t"))
        ref = f"no-such-note-{token()}"
        try:
            await provider.forget(ref)
        except NotSupported as exc:
            pytest.skip(f"provider {spec.name!r} does not support forget: {exc}")
        except NotFound:
            return
        raise AssertionError(
            f"forget({ref!r}) of an id the store never issued did not raise NotFound"
        )

    @pytest.mark.goat_requires(Capability.PAGES)
    async def test_title_lookup_where_declared(self, goat_stores: StoreSet) -> None:
        """A provider declaring ``title_lookup`` opens a page by its unique title, in any
        case and in NFC or NFD.

        Troubleshooting: compare ``casefold()`` of NFC-normalised titles; several matches
        are ``Ambiguous`` with the candidates.
        """
        spec = goat_stores.spec
        if not spec.title_lookup:
            pytest.skip(f"provider {spec.name!r} does not declare title_lookup")
        provider = await goat_stores.open(Scope.global_())
        word = token()
        title = f"Café Lookup {word}"
        await provider.remember(MemoryWrite(text=f"{word} found by title", title=title))

        async def by_title() -> None:
            for ref in (title, title.upper(), unicodedata.normalize("NFD", title.lower())):
                try:
                    page = await provider.get_page(ref)
                except NotFound as exc:
                    raise AssertionError(
                        f"get_page({ref!r}) of a page titled {title!r} is NotFound ({exc}): "
                        "title lookup must ignore case and Unicode normalisation"
                    ) from None
                assert word in page.body, f"get_page({ref!r}) opened another page"

        await self.settle(spec, by_title)


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
