"""The in-tree reference provider (tests only, never shipped) and its seeded-defect variants.

``reference`` keeps each scope's notes in one JSON file under the GOAT home and declares
every optional capability; it passes the whole conformance suite. ``reference_bank`` is a
shared-bank, eventual-consistency, network-declaring variant whose writes are ``queued``.
The defect variants each break one rule:

- ``reference_leak``  a Pen's reads also return Global's notes;
- ``reference_cap``   page lists stop at 20 items without a ``next_cursor``;
- ``reference_drop``  texts over 1000 characters are dropped but reported ``stored``;
- ``reference_dedup`` identical text is silently merged while declaring ``keep``.
- ``reference_retry`` a write overlapping another is stored twice (a lost-ack retry).
- ``reference_dropraise`` a write whose request was cut part-way (and landed) raises
  ``ProviderUnavailable``, as if nothing had been stored, instead of answering ``unknown``.

The variants in :data:`DEFECTS` break the rules of the newer tests; among them the kinds a
SQL provider written from the docs alone had while the suite passed (``reference_sqltitle``
pastes a title into its query text, ``reference_idscope`` opens an id in any scope,
``reference_cap20`` fetches 20 rows and answers complete, ``reference_reverse`` ranks worst
first, ``reference_titlecursor`` skips pages sharing a title at a page boundary,
``reference_latest`` settles a failed write by the scope's latest note, ``reference_hang``
awaits forever, ``reference_alias`` has an aliased settings field), and kinds chosen from
docs/design.md (``reference_rawtitle``, ``reference_forgettitle``,
``reference_feedbackscope``, ``reference_mergeuntitled``).

:func:`install_entry_points` writes a throwaway ``.dist-info`` so the real loader finds them.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import socket
import time
import unicodedata
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import anyio
from pydantic import BaseModel, ConfigDict, Field

from goat_core import hookimpl
from goat_core.contract import (
    Access,
    Capability,
    Connections,
    Consistency,
    CredentialSpec,
    Edge,
    Health,
    Link,
    LinkMap,
    LinkResolution,
    MemoryWrite,
    ModelTool,
    Page,
    PageList,
    PageSummary,
    PolicyGate,
    Provider,
    ProviderContext,
    ProviderSpec,
    RecallItem,
    RecallResult,
    Receipt,
    ReceiptStatus,
    Reflection,
    Scope,
    normalize_pen_id,
)
from goat_core.errors import (
    Ambiguous,
    AuthError,
    GoatError,
    NotFound,
    ProviderUnavailable,
    StoreUnwritable,
    TooLarge,
)
from goat_core.plugins import PluginSettings, Registry, make_plugin_manager, register_plugin
from goat_core.testing.conformance.faults import Fault, FaultInjector, filesystem_fault

WIKILINK = re.compile(r"\[\[([^\]|#]+)(?:#[^\]|]*)?(?:\|[^\]]*)?\]\]")
WORD = re.compile(r"\w+")


def _norm(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _words(text: str) -> set[str]:
    return {w.casefold() for w in WORD.findall(_norm(text))}


class ReferenceSettings(BaseModel):
    """``root``: a folder for the JSON files (default: the scope's folder under the home)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    root: str | None = Field(default=None, description="folder holding the JSON store")


class BankSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    server: str = Field(pattern=r"^https?://[^/\s]+$", description="base server URL")
    bank: str = Field(pattern=r"^[a-z0-9_-]{1,64}$", description="bank id")


class ReferenceProvider(Provider):
    """Notes in ``<root>/notes.json``: ``{"notes": [{id, title, text, kind, ...}]}``."""

    spec: ClassVar[ProviderSpec]
    list_cap: ClassVar[int | None] = None
    drop_over: ClassVar[int | None] = None
    dedup: ClassVar[bool] = False
    leak_global: ClassVar[bool] = False
    retry_when_busy: ClassVar[bool] = False
    leak_prefix: ClassVar[bool] = False
    ignore_limit: ClassVar[bool] = False
    recall_cap: ClassVar[int | None] = None
    fetch_cap: ClassVar[int | None] = None  # recall fetches at most this many rows
    show_cap: ClassVar[int | None] = None
    skip_cursor: ClassVar[bool] = False
    offset_cursor: ClassVar[bool] = False
    drop_on: ClassVar[bool] = False
    forget_unknown_ok: ClassVar[bool] = False
    titles_case_sensitive: ClassVar[bool] = False
    swallow_errors: ClassVar[bool] = False
    raw_os_errors: ClassVar[bool] = False
    raise_on_drop: ClassVar[bool] = False
    check_defect: ClassVar[str | None] = None
    #: Defects a PostgreSQL provider written from the docs alone had (the suite passed it)
    #: and kinds chosen from docs/design.md's rules; each is caught by the suite.
    sql_titles: ClassVar[bool] = False  # show pastes the title into "SQL" over every scope
    id_any_scope: ClassVar[bool] = False  # show by id drops the scope filter
    reverse_rank: ClassVar[bool] = False  # recall ranks worst first
    title_cursor: ClassVar[bool] = False  # the cursor names the last title only
    settle_latest: ClassVar[bool] = False  # a failed write "settled" by the latest note
    hang_check: ClassVar[bool] = False  # check() awaits an event nobody sets
    raw_titles: ClassVar[bool] = False  # titles kept as given (NFD), looked up as NFC
    forget_same_title: ClassVar[bool] = False  # forget also removes its title's twins
    feedback_any_scope: ClassVar[bool] = False  # feedback on= resolved in every scope
    merge_untitled: ClassVar[bool] = False  # an untitled write joins the note of its title
    #: The armed fault (``"before"``, ``"after"`` or ``"mid"``-way through the next write),
    #: set by the fault fixture.
    fault: ClassVar[str | None] = None
    #: How many writes the ``"mid"`` fault cut (read by the fault fixture).
    cuts: ClassVar[int] = 0
    _in_flight: ClassVar[int] = 0
    _locks: ClassVar[dict[Path, anyio.Lock]] = {}

    def __init__(self, context: ProviderContext) -> None:
        super().__init__(context)
        if context.scope.pen_id is not None:
            normalize_pen_id(context.scope.pen_id)  # ScopeError for a forged scope
        self.path = self._root(context.scope) / "notes.json"

    def _root(self, scope: Scope) -> Path:
        settings: Any = self.context.settings
        if getattr(settings, "root", None):
            base = Path(settings.root)
            return base if scope.is_global else base / "pens" / str(scope.pen_id)
        return self.context.home.default_store_dir(scope)

    # -- storage (on a worker thread, never on the event loop) -------------------------------
    @staticmethod
    def _read(path: Path) -> list[dict[str, Any]]:
        if not path.exists():
            return []
        return list(json.loads(path.read_text("utf-8"))["notes"])

    async def _load(self, path: Path | None = None) -> list[dict[str, Any]]:
        return await anyio.to_thread.run_sync(self._read, path or self.path)

    def _write_file(self, notes: list[dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"notes": notes}, ensure_ascii=False), "utf-8")
        tmp.replace(self.path)

    async def _save(self, notes: list[dict[str, Any]]) -> None:
        fault, type(self).fault = type(self).fault, None
        if fault == "before" and self.settle_latest and len(notes) > 1:
            # The seeded defect: the write failed, and the provider "checks the store" by
            # its latest note, which exists (an earlier one), so the write counts as stored.
            raise _Settled(notes[-2])
        if fault == "before" and not self.swallow_errors:
            raise ProviderUnavailable(f"{self.label()}: the write failed before it was sent")
        if fault == "before":
            return  # the seeded defect: the error is swallowed and the caller says stored
        try:
            await anyio.to_thread.run_sync(self._write_file, notes)
        except OSError as exc:
            if self.raw_os_errors:
                raise  # the seeded defect: an untyped OSError escapes
            typed = StoreUnwritable.from_os_error(exc, self.path.parent)
            if typed is None:
                raise ProviderUnavailable(f"cannot write {self.path}: {exc.strerror}") from exc
            if self.swallow_errors:
                return  # the seeded defect: the error is swallowed and the caller says stored
            raise typed from exc
        if fault == "after":
            raise _LostAnswer
        if fault == "mid":  # the request ran; the connection dropped before the answer
            type(self).cuts += 1
            if self.raise_on_drop:  # the seeded defect: a dropped connection read as "failed"
                raise ProviderUnavailable(f"{self.label()}: the connection dropped; not stored")
            raise _LostAnswer

    async def _visible(self) -> list[dict[str, Any]]:
        notes = [n for n in await self._load() if n.get("visible_at", 0) <= time.time()]
        if self.leak_global and not self.scope.is_global:
            notes += await self._load(self._root(Scope.global_()) / "notes.json")
        if self.leak_prefix and not self.scope.is_global:
            pens = self.path.parent.parent  # the seeded defect: Pen folders matched by prefix
            for other in await anyio.to_thread.run_sync(_pen_folders, pens):
                if other.name != self.scope.pen_id and other.name.startswith(
                    str(self.scope.pen_id)
                ):
                    notes += await self._load(other / "notes.json")
        return notes

    def _receipt(self, note: dict[str, Any]) -> Receipt:
        return Receipt(status=ReceiptStatus.STORED, id=note["id"], scope=self.scope.key)

    # -- writes -------------------------------------------------------------------------------
    def _lock(self) -> anyio.Lock:
        return self._locks.setdefault(self.path, anyio.Lock())

    async def _write(self, write: MemoryWrite) -> Receipt:
        if len(write.text) > self.spec.max_input_chars:
            raise TooLarge(
                f"text is {len(write.text)} characters; {self.spec.name} accepts at most "
                f"{self.spec.max_input_chars}"
            )
        type(self)._in_flight += 1
        try:
            async with self._lock():
                receipt = await self._write_locked(write)
            if self.retry_when_busy and type(self)._in_flight > 1:
                await self._retry(receipt)
            return receipt
        except _Settled as settled:
            return self._receipt(settled.note)
        except _LostAnswer:
            return Receipt(
                status=ReceiptStatus.UNKNOWN,
                reason="the store did not confirm the write",
                scope=self.scope.key,
            )
        finally:
            type(self)._in_flight -= 1

    async def _retry(self, receipt: Receipt) -> None:
        # The seeded defect: a write that overlapped another one "retries" as if its
        # acknowledgement had been lost, and so is stored twice.
        async with self._lock():
            notes = await self._load()
            note = next(n for n in notes if n["id"] == receipt.id)
            notes.append({**note, "id": f"n-{uuid.uuid4().hex[:12]}"})
            await self._save(notes)

    async def _write_locked(self, write: MemoryWrite) -> Receipt:
        text = _norm(write.text)
        notes = await self._load()
        if self.dedup:
            for note in notes:
                if note["text"] == text:
                    return self._receipt(note)
        title = _norm(write.title) if write.title else text.strip().splitlines()[0][:60]
        if self.raw_titles and write.title:
            title = write.title  # the seeded defect: an NFD title kept as NFD
        if self.merge_untitled and not write.title:
            twin = next((n for n in notes if n["title"].casefold() == title.casefold()), None)
            if twin is not None:  # the seeded defect: a write joins a note it never named
                twin["text"] += "\n\n" + text
                await self._save(notes)
                return self._receipt(twin)
        note = {
            "id": f"n-{uuid.uuid4().hex[:12]}",
            "title": title,
            "text": text,
            "kind": write.kind,
            "on": None if self.drop_on else write.on,
            "source": write.source,
            "tags": list(write.tags),
        }
        if self.drop_over is not None and len(text) > self.drop_over:
            return self._receipt(note)  # the seeded defect: claims stored, writes nothing
        notes.append(note)
        await self._save(notes)
        return self._receipt(note)

    async def remember(self, write: MemoryWrite) -> Receipt:
        return await self._write(write)

    async def feedback(self, write: MemoryWrite) -> Receipt:
        if self.feedback_any_scope and write.on:
            # The seeded defect: ``on`` is looked up in every scope, and the feedback is
            # appended to that page wherever it lives.
            for row in await self._every_scope():
                if row["id"] == write.on and row["scope"] != self.scope.key:
                    return await self._append_elsewhere(row, write)
        return await self._write(write.model_copy(update={"kind": "feedback"}))

    async def _append_elsewhere(self, row: dict[str, Any], write: MemoryWrite) -> Receipt:
        scope = Scope.global_() if row["scope"] == "global" else Scope.pen(row["scope"][4:])
        path = self._root(scope) / "notes.json"
        notes = await self._load(path)
        for note in notes:
            if note["id"] == row["id"]:
                note["text"] += "\n\n" + _norm(write.text)
        data = json.dumps({"notes": notes}, ensure_ascii=False)
        await anyio.to_thread.run_sync(path.write_text, data, "utf-8")
        return Receipt(status=ReceiptStatus.STORED, id=row["id"], scope=self.scope.key)

    async def forget(self, ref: str) -> Receipt:
        try:
            note = await self._find(ref)
        except NotFound:
            if not self.forget_unknown_ok:
                raise
            return Receipt(status=ReceiptStatus.STORED, scope=self.scope.key)  # the defect

        def doomed(n: dict[str, Any]) -> bool:
            if self.forget_same_title:  # the seeded defect: "DELETE ... WHERE title = ?"
                return bool(n["title"].casefold() == note["title"].casefold())
            return bool(n["id"] == note["id"])

        async with self._lock():
            await self._save([n for n in await self._load() if not doomed(n)])
        return Receipt(
            status=ReceiptStatus.STORED, id=note["id"], scope=self.scope.key, removed=(note["id"],)
        )

    # -- reads --------------------------------------------------------------------------------
    async def recall(self, query: str, *, limit: int = 10) -> RecallResult:
        wanted = _words(query)
        scored = []
        for order, note in enumerate(await self._visible()):
            score = len(wanted & _words(note["title"] + " " + note["text"]))
            if score:
                scored.append((score, order, note))
        scored.sort(key=lambda s: (-s[0], -s[1]))
        if self.reverse_rank:  # the seeded defect: bm25 is lower-is-better, sorted the wrong way
            scored.reverse()
        if self.fetch_cap is not None:  # the seeded defect: "LIMIT 20" in the query, and
            scored = scored[: self.fetch_cap]  # complete judged from the rows fetched
        items = tuple(
            RecallItem(
                id=n["id"],
                title=n["title"],
                score=float(score),
                snippet=n["text"][:200],
                text=n["text"],
                source=self.label(),
            )
            for score, _, n in (scored if self.ignore_limit else scored[:limit])
        )
        complete = len(scored) <= limit
        if self.recall_cap is not None:  # the seeded defect: a cap reported as complete
            items, complete = items[: self.recall_cap], True
        return RecallResult(scope=self.scope.key, items=items, complete=complete)

    async def reflect(self, query: str) -> Reflection:
        result = await self.recall(query, limit=5)
        text = " ".join(i.snippet for i in result.items) or "Nothing remembered about that."
        return Reflection(scope=self.scope.key, text=text, based_on=result.items)

    async def _summaries(self) -> list[PageSummary]:
        notes = sorted(await self._visible(), key=lambda n: (n["title"].casefold(), n["id"]))
        return [PageSummary(id=n["id"], title=n["title"]) for n in notes]

    async def list_pages(self, *, limit: int = 50, cursor: str | None = None) -> PageList:
        pages = await self._summaries()
        if self.offset_cursor:  # the seeded defect: an offset shifts under inserts
            start = int(cursor[2:]) if cursor else 0
        else:  # the cursor names the last (title, id) listed
            after = tuple(json.loads(cursor[2:])) if cursor else None
            start = 0
            if after is not None and self.title_cursor:  # the seeded defect: title only
                start = sum(1 for p in pages if p.title.casefold() <= after[0])
            elif after is not None:
                start = sum(1 for p in pages if (p.title.casefold(), p.id) <= after)
        if self.skip_cursor and cursor:
            start += 1  # the seeded defect: the cursor skips one page
        chunk = pages[start : start + limit]
        if self.list_cap is not None:
            chunk = chunk[: self.list_cap]  # the seeded defect: a silent cap
        more = start + limit < len(pages)
        last = pages[start + limit - 1] if more else None
        if self.offset_cursor:
            token = f"o:{start + limit}"
        else:
            token = "k:" + json.dumps([last.title.casefold(), last.id]) if last else ""
        return PageList(
            items=tuple(chunk),
            next_cursor=token if more else None,
            complete=not more,
        )

    async def _every_scope(self) -> list[dict[str, Any]]:
        """Every scope's notes, each with its ``scope`` key: one "table" for the defects that
        forget the scope filter."""
        home_root = self._root(Scope.global_())
        rows = [{**n, "scope": "global"} for n in await self._load(home_root / "notes.json")]
        for folder in await anyio.to_thread.run_sync(_pen_folders, self._pens()):
            for n in await self._load(folder / "notes.json"):
                rows.append({**n, "scope": f"pen:{folder.name}"})
        return rows

    def _pens(self) -> Path:
        if self.scope.is_global:
            return self._root(Scope.pen("x")).parent
        return self.path.parent.parent

    async def _find(self, ref: str) -> dict[str, Any]:
        notes = await self._visible()
        for note in notes:
            if note["id"] == ref:
                return note
        if self.id_any_scope:  # the seeded defect: "WHERE id = ?" without "AND scope = ?"
            for note in await self._every_scope():
                if note["id"] == ref:
                    return note
        if self.sql_titles:  # the seeded defect: the title pasted into the query text
            sql = f"scope = '{self.scope.key}' AND title = '{_norm(ref).casefold()}'"
            rows = await self._every_scope()
            by_title = [n for n in rows if _sql_where(sql, {**n, "title": n["title"].casefold()})]
        elif self.raw_titles:  # the seeded defect: titles stored as given, looked up as NFC
            by_title = [n for n in notes if n["title"].casefold() == _norm(ref).casefold()]
        elif self.titles_case_sensitive:  # the seeded defect
            by_title = [n for n in notes if n["title"] == ref]
        else:
            by_title = [n for n in notes if n["title"].casefold() == _norm(ref).casefold()]
        if len(by_title) > 1:
            raise Ambiguous(
                f"{len(by_title)} notes are titled {ref!r}", candidates=[n["id"] for n in by_title]
            )
        if not by_title:
            raise NotFound(f"no note {ref!r} in {self.label()}")
        return by_title[0]

    async def get_page(self, ref: str) -> Page:
        note = await self._find(ref)
        body = note["text"]
        if self.show_cap is not None:
            body = body[: self.show_cap]  # the seeded defect: a display cut
        return Page(
            id=note["id"],
            title=note["title"],
            body=body,
            provenance={"source": note["source"], "kind": note["kind"], "on": note.get("on")},
        )

    def _links(self, note: dict[str, Any], notes: list[dict[str, Any]]) -> list[Link]:
        by_title = {n["title"].casefold(): n["id"] for n in notes}
        links = []
        for lineno, line in enumerate(note["text"].splitlines(), start=1):
            for m in WIKILINK.finditer(line):
                target = by_title.get(m.group(1).strip().casefold())
                links.append(
                    Link(
                        raw=m.group(0),
                        kind="wikilink",
                        target_text=m.group(1).strip(),
                        target=target,
                        line=lineno,
                        resolution=LinkResolution.EXACT if target else LinkResolution.MISSING,
                    )
                )
        return links

    async def link_map(self) -> LinkMap:
        notes = await self._visible()
        edges = [
            Edge(source=n["id"], target=link.target, raw=link.raw, resolution=link.resolution)
            for n in notes
            for link in self._links(n, notes)
        ]
        return LinkMap(nodes=tuple(await self._summaries()), edges=tuple(edges))

    async def connections(self, ref: str) -> Connections:
        note = await self._find(ref)
        link_map = await self.link_map()
        notes = await self._visible()
        return Connections(
            page=PageSummary(id=note["id"], title=note["title"]),
            outgoing=tuple(self._links(note, notes)),
            backlinks=tuple(e for e in link_map.edges if e.target == note["id"]),
        )

    async def reindex(self, progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        notes = await self._load()
        if progress:
            progress(len(notes), len(notes))
        return {"indexed": len(notes)}

    def model_tools(self) -> list[ModelTool]:
        async def count(arguments: dict[str, Any], gate: PolicyGate) -> dict[str, Any]:
            return {"count": len(gate.browse(await self._summaries()))}

        return [
            ModelTool(
                name="count_notes",
                description="Count the notes in this memory.",
                input_schema={"type": "object", "properties": {}, "additionalProperties": False},
                handler=count,
                read_only=True,
                access=Access.READ,
            )
        ]

    async def check(self) -> Health:
        if self.hang_check:  # the seeded defect: an await that never returns
            await anyio.Event().wait()
        if self.check_defect is not None:
            done = _CHECK_DEFECTS[self.check_defect](self)
            if inspect.isawaitable(done):
                await done
        return Health.healthy(f"{len(await self._load())} notes")


class _Settled(Exception):
    """The ``settle_latest`` defect: a failed write answered by the scope's latest note."""

    def __init__(self, note: dict[str, Any]) -> None:
        super().__init__(note["id"])
        self.note = note


class _LostAnswer(Exception):
    """The write reached the store; its answer was lost (the ``after`` fault)."""


_SQL_TOKEN = re.compile(r"'(?:[^']|'')*'|\w[\w:.-]*|=|\S")


def _sql_where(sql: str, row: dict[str, Any]) -> bool:
    """Evaluate ``a = 'x' AND b = 'y' OR ...`` over ``row`` the way SQL would: the
    ``sql_titles`` defect's "query" (AND binds tighter than OR).

    :raises ProviderUnavailable: a syntax error (a quote the pasted title left open).
    """
    tokens = _SQL_TOKEN.findall(sql)

    def operand(tok: str) -> str:
        if tok.startswith("'"):
            if len(tok) < 2 or not tok.endswith("'"):
                raise ProviderUnavailable(f"syntax error near {tok!r}")
            return tok[1:-1].replace("''", "'")
        if tok not in row:
            raise ProviderUnavailable(f"syntax error: no column {tok!r}")
        return str(row[tok])

    disjuncts: list[bool] = []
    conjunct = True
    i = 0
    while i < len(tokens):
        if i + 2 >= len(tokens) or tokens[i + 1] != "=":
            raise ProviderUnavailable(f"syntax error near {' '.join(tokens[i : i + 3])!r}")
        conjunct = conjunct and operand(tokens[i]) == operand(tokens[i + 2])
        i += 3
        if i < len(tokens):
            word = tokens[i].upper()
            if word == "OR":
                disjuncts.append(conjunct)
                conjunct = True
            elif word != "AND":
                raise ProviderUnavailable(f"syntax error near {tokens[i]!r}")
            i += 1
    disjuncts.append(conjunct)
    return any(disjuncts)


def _pen_folders(pens: Path) -> list[Path]:
    return [p for p in pens.iterdir() if p.is_dir()] if pens.is_dir() else []


def _busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _connect_out(provider: ReferenceProvider) -> Any:
    return anyio.to_thread.run_sync(_connect_out_sync)


def _connect_out_sync() -> None:
    with socket.socket() as sock:  # the seeded defect: a socket no egress guard saw
        sock.settimeout(0.2)
        try:
            sock.connect(("127.0.0.1", 9))
        except OSError:
            pass


def _c_connect_out(provider: ReferenceProvider) -> Any:
    return anyio.to_thread.run_sync(_c_connect_out_sync)


def _c_connect_out_sync() -> None:
    """The seeded defect: a connection opened in C (libc ``connect`` through ctypes, as a C
    driver dials), which Python's audit hook never sees, to a listener in another process."""
    import ctypes
    import struct
    import subprocess
    import sys
    import time

    listener = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import socket, sys, time\n"
            "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
            "print(s.getsockname()[1], flush=True); c, _ = s.accept(); time.sleep(5)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert listener.stdout is not None
        port = int(listener.stdout.readline())
        libc = ctypes.CDLL(None, use_errno=True)
        with socket.socket() as sock:
            address = struct.pack("=H", socket.AF_INET) + struct.pack("!H", port)
            address += socket.inet_aton("127.0.0.1") + bytes(8)
            buffer = ctypes.create_string_buffer(address, len(address))
            if libc.connect(sock.fileno(), buffer, len(address)) != 0:
                raise OSError(ctypes.get_errno(), "connect")
            time.sleep(0.3)  # held open a while, as a driver's connection is
    finally:
        listener.kill()
        listener.wait()


#: Seeded defects of ``check()``: each breaks one runtime rule, in a test that calls check.
_CHECK_DEFECTS: dict[str, Callable[[ReferenceProvider], Any]] = {
    "blocking_open": lambda p: p.path.parent.joinpath("probe").exists() or open(os.devnull).close(),
    "busy_loop": lambda p: _busy(1.5),
    "socket": _connect_out,
    "c_socket": _c_connect_out,
    "env_secret": lambda p: os.environ.get("REFERENCE_API_KEY"),
}


class ReferenceFaults(FaultInjector):
    """The reference provider's fault fixture: every kind. Writes ``before``/``after`` are
    flags the provider reads; the connection drop (``mid``) lets the write's own request run
    and loses its answer, and the store (a file) has no other request to cut; read-only and
    full use :func:`filesystem_fault`."""

    kinds = frozenset(Fault)

    @contextmanager
    def inject(self, fault: Fault, provider: Provider) -> Iterator[None]:
        assert isinstance(provider, ReferenceProvider)
        cls = type(provider)
        if fault in (Fault.READ_ONLY, Fault.DISK_FULL):
            with filesystem_fault(provider.path.parent, fault):
                yield
            return
        kind = {Fault.WRITE_AFTER_SEND: "after", Fault.DROP_CONNECTION: "mid"}
        cls.fault, cls.cuts = kind.get(fault, "before"), 0
        try:
            yield
        finally:
            cls.fault = None
            self.dropped_writes += cls.cuts


class LeakProvider(ReferenceProvider):
    leak_global = True


class CapProvider(ReferenceProvider):
    list_cap = 20


class DropProvider(ReferenceProvider):
    drop_over = 1000


class DedupProvider(ReferenceProvider):
    dedup = True


class RetryProvider(ReferenceProvider):
    retry_when_busy = True


class PrefixProvider(ReferenceProvider):
    leak_prefix = True


class LimitProvider(ReferenceProvider):
    ignore_limit = True


class CompleteProvider(ReferenceProvider):
    recall_cap = 11


class ShowCutProvider(ReferenceProvider):
    show_cap = 4000


class BigDropProvider(ReferenceProvider):
    drop_over = 10_000


class SkipCursorProvider(ReferenceProvider):
    skip_cursor = True


class Cap10Provider(ReferenceProvider):
    list_cap = 10


class OffsetCursorProvider(ReferenceProvider):
    offset_cursor = True


class FeedbackProvider(ReferenceProvider):
    drop_on = True


class ForgetProvider(ReferenceProvider):
    forget_unknown_ok = True


class TitleProvider(ReferenceProvider):
    titles_case_sensitive = True


class SwallowProvider(ReferenceProvider):
    swallow_errors = True


class RawErrorProvider(ReferenceProvider):
    raw_os_errors = True


class DropRaiseProvider(ReferenceProvider):
    raise_on_drop = True


class SqlTitleProvider(ReferenceProvider):
    sql_titles = True


class IdScopeProvider(ReferenceProvider):
    id_any_scope = True


class Cap20Provider(ReferenceProvider):
    fetch_cap = 20


class ReverseRankProvider(ReferenceProvider):
    reverse_rank = True


class TitleCursorProvider(ReferenceProvider):
    title_cursor = True


class SettleLatestProvider(ReferenceProvider):
    settle_latest = True


class HangProvider(ReferenceProvider):
    hang_check = True


class RawTitleProvider(ReferenceProvider):
    raw_titles = True


class ForgetTitleProvider(ReferenceProvider):
    forget_same_title = True


class FeedbackScopeProvider(ReferenceProvider):
    feedback_any_scope = True


class MergeUntitledProvider(ReferenceProvider):
    merge_untitled = True


class AliasSettings(BaseModel):
    """The ``reference_alias`` defect: ``schema`` is an alias of ``schema_name``, so settings
    saved by field name fail validation when read back."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    root: str | None = Field(default=None, description="folder holding the JSON store")
    schema_name: str = Field(default="public", alias="schema", description="schema")


class BlockingProvider(ReferenceProvider):
    check_defect = "blocking_open"


class BusyProvider(ReferenceProvider):
    check_defect = "busy_loop"


class SocketProvider(ReferenceProvider):
    check_defect = "socket"


class CSocketProvider(ReferenceProvider):
    check_defect = "c_socket"


class EnvProvider(ReferenceProvider):
    check_defect = "env_secret"


class BankProvider(ReferenceProvider):
    """One bank per binding whatever the scope; writes are queued and land after a delay."""

    delay: ClassVar[float] = 0.2

    # Not declared by this spec: back to the base class, which raises NotSupported.
    feedback = Provider.feedback
    link_map = Provider.link_map
    connections = Provider.connections

    def _root(self, scope: Scope) -> Path:
        settings: Any = self.context.settings
        return self.context.home.data_dir / "reference-bank" / settings.bank

    def label(self) -> str:
        settings: Any = self.context.settings
        return f"shared bank `{settings.bank}` on `{settings.server}`"

    async def _write_locked(self, write: MemoryWrite) -> Receipt:
        receipt = await super()._write_locked(write)
        notes = await self._load()
        for note in notes:
            if note["id"] == receipt.id:
                note["visible_at"] = time.time() + self.delay
        await self._save(notes)
        return Receipt(
            status=ReceiptStatus.QUEUED, operation_id=f"op-{receipt.id}", scope=self.scope.key
        )

    async def refresh(self, receipt: Receipt) -> Receipt:
        if receipt.status is not ReceiptStatus.QUEUED or not receipt.operation_id:
            return receipt
        note_id = receipt.operation_id.removeprefix("op-")
        if any(n["id"] == note_id for n in await self._visible()):
            return Receipt(
                status=ReceiptStatus.STORED,
                operation_id=receipt.operation_id,
                id=note_id,
                scope=receipt.scope,
            )
        return receipt

    async def forget(self, ref: str) -> Receipt:
        raise self._unsupported("forget", "forget")

    async def _reach(self) -> None:
        """A bank on loopback is asked first: ``AUTH <credential>`` over a guarded
        connection, answered ``+OK`` (the secrets-on-failure tests serve the failures)."""
        settings: Any = self.context.settings
        if "127.0.0.1" not in settings.server or self.context.connect is None:
            return
        credential = self.context.get_credential("api_key") or ""
        try:
            stream = await self.context.connect(settings.server, timeout=2.0)
            async with stream:
                await stream.send(b"AUTH " + credential.encode() + b"\n")
                with anyio.fail_after(2):
                    reply = await stream.receive(256)
        except (OSError, anyio.EndOfStream, anyio.BrokenResourceError, TimeoutError):
            raise ProviderUnavailable(f"{settings.server} closed the connection") from None
        if not reply.startswith(b"+OK"):
            raise AuthError(f"{settings.server} refused the credential")

    async def remember(self, write: MemoryWrite) -> Receipt:
        await self._reach()
        return await super().remember(write)

    async def recall(self, query: str, *, limit: int = 10) -> RecallResult:
        await self._reach()
        return await super().recall(query, limit=limit)

    async def check(self) -> Health:
        settings: Any = self.context.settings
        await anyio.sleep(0)
        if "unreachable" in settings.server:
            return Health.broken(f"cannot reach {settings.server}")
        try:
            await self._reach()
        except GoatError as exc:
            return Health.from_error(exc, label=self.label())
        return Health.healthy(f"bank {settings.bank} reachable")


class FakeIdProvider(ReferenceProvider):
    """The seeded defect: a stored receipt names a page that does not hold the write."""

    async def remember(self, write: MemoryWrite) -> Receipt:
        receipt = await super().remember(write)
        if receipt.status is not ReceiptStatus.STORED:
            return receipt
        return receipt.model_copy(update={"id": "n-000000000000"})


class QuoteSecretBank(BankProvider):
    """The seeded defect: a failed connection's error quotes the credential it sent."""

    async def _reach(self) -> None:
        try:
            await super()._reach()
        except GoatError as exc:
            credential = self.context.get_credential("api_key")
            raise type(exc)(f"{exc} (sent AUTH {credential})") from None


ALL = frozenset(
    {
        Capability.PAGES,
        Capability.MAP,
        Capability.REFLECT,
        Capability.FEEDBACK,
        Capability.SCOPED_STORES,
    }
)


def _spec(name: str, cls: type[ReferenceProvider], **kw: Any) -> ProviderSpec:
    values: dict[str, Any] = {
        "name": name,
        "display_name": f"Reference ({name})",
        "version": "0.0.0",
        "capabilities": ALL,
        "settings_model": ReferenceSettings,
        "factory": cls,
        "max_input_chars": 20_000,
        "title_lookup": True,
    }
    values.update(kw)
    spec = ProviderSpec(**values)
    return spec


class _Plugin:
    def __init__(self, spec: ProviderSpec) -> None:
        self.spec = spec

    @hookimpl
    def goat_register_providers(self) -> list[ProviderSpec]:
        return [self.spec]


def _make(name: str, cls: type[ReferenceProvider], **kw: Any) -> tuple[ProviderSpec, _Plugin]:
    sub = type(cls.__name__, (cls,), {})
    spec = _spec(name, sub, **kw)
    sub.spec = spec
    return spec, _Plugin(spec)


SPEC, plugin = _make("reference", ReferenceProvider)
LEAK_SPEC, leak_plugin = _make("reference_leak", LeakProvider)
CAP_SPEC, cap_plugin = _make("reference_cap", CapProvider)
DROP_SPEC, drop_plugin = _make("reference_drop", DropProvider)
DEDUP_SPEC, dedup_plugin = _make("reference_dedup", DedupProvider)
RETRY_SPEC, retry_plugin = _make("reference_retry", RetryProvider)

#: Seeded defects of the newer contract tests: entry-point name -> provider class.
DEFECTS: dict[str, type[ReferenceProvider]] = {
    "reference_prefix": PrefixProvider,
    "reference_limit": LimitProvider,
    "reference_complete": CompleteProvider,
    "reference_showcut": ShowCutProvider,
    "reference_bigdrop": BigDropProvider,
    "reference_skip": SkipCursorProvider,
    "reference_cap10": Cap10Provider,
    "reference_offset": OffsetCursorProvider,
    "reference_feedback": FeedbackProvider,
    "reference_forget": ForgetProvider,
    "reference_title": TitleProvider,
    "reference_swallow": SwallowProvider,
    "reference_rawerror": RawErrorProvider,
    "reference_dropraise": DropRaiseProvider,
    "reference_blocking": BlockingProvider,
    "reference_busy": BusyProvider,
    "reference_socket": SocketProvider,
    "reference_csocket": CSocketProvider,
    "reference_env": EnvProvider,
    "reference_sqltitle": SqlTitleProvider,
    "reference_idscope": IdScopeProvider,
    "reference_cap20": Cap20Provider,
    "reference_reverse": ReverseRankProvider,
    "reference_titlecursor": TitleCursorProvider,
    "reference_latest": SettleLatestProvider,
    "reference_hang": HangProvider,
    "reference_rawtitle": RawTitleProvider,
    "reference_forgettitle": ForgetTitleProvider,
    "reference_feedbackscope": FeedbackScopeProvider,
    "reference_mergeuntitled": MergeUntitledProvider,
    "reference_fakeid": FakeIdProvider,
}
DEFECT_SPECS: dict[str, ProviderSpec] = {}
for _name, _cls in DEFECTS.items():
    DEFECT_SPECS[_name], globals()[f"{_name}_plugin"] = _make(_name, _cls)
#: The settings defect: the model's field ``schema_name`` is given and saved as ``schema``.
DEFECTS["reference_alias"] = ReferenceProvider
DEFECT_SPECS["reference_alias"], reference_alias_plugin = _make(
    "reference_alias", ReferenceProvider, settings_model=AliasSettings
)
#: What the reference bank declares: a shared bank over the network with an API key.
_BANK: dict[str, Any] = dict(
    capabilities=frozenset({Capability.PAGES, Capability.REFLECT, Capability.SHARED_BANK}),
    consistency=Consistency.EVENTUAL,
    settings_model=BankSettings,
    network=True,
    egress_urls=lambda s: [s.server],
    duplicate_policy="keep",
    credentials=(CredentialSpec(name="api_key", description="API key"),),
)
DEFECTS["reference_quotesecret"] = QuoteSecretBank
DEFECT_SPECS["reference_quotesecret"], reference_quotesecret_plugin = _make(
    "reference_quotesecret", QuoteSecretBank, **_BANK
)
BANK_SPEC, bank_plugin = _make("reference_bank", BankProvider, **_BANK)
#: The reference provider under the embedded default's name, for host tests.
MARKDOWN_SPEC, markdown_plugin = _make("markdown", ReferenceProvider)

#: entry-point name -> module attribute, as ``install_entry_points`` registers them.
ENTRY_POINTS = {
    "reference": "plugin",
    "reference_leak": "leak_plugin",
    "reference_cap": "cap_plugin",
    "reference_drop": "drop_plugin",
    "reference_dedup": "dedup_plugin",
    "reference_retry": "retry_plugin",
    "reference_bank": "bank_plugin",
    **{name: f"{name}_plugin" for name in DEFECTS},
}


def install_entry_points(site: Path) -> Path:
    """Write ``goat_reference_tests-0.0.0.dist-info`` under ``site`` (put ``site`` and this
    file's folder on ``sys.path``) declaring :data:`ENTRY_POINTS` in ``goat_core.plugins``."""
    dist = site / "goat_reference_tests-0.0.0.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: goat-reference-tests\nVersion: 0.0.0\n", "utf-8"
    )
    lines = ["[goat_core.plugins]"] + [
        f"{name} = reference_provider:{attr}" for name, attr in ENTRY_POINTS.items()
    ]
    (dist / "entry_points.txt").write_text("\n".join(lines) + "\n", "utf-8")
    return dist


#: Settings of the reference shared bank used across the host and tool tests.
BANK = {"server": "https://bank.example", "bank": "team"}


def make_registry(*plugins: object) -> Registry:
    """A registry of exactly ``plugins`` (no entry points), each registered in isolation."""
    pm = make_plugin_manager(PluginSettings(autoload=False))
    for n, plugin in enumerate(plugins):
        assert register_plugin(pm, plugin, f"test-plugin-{n}")
    return Registry(pm)
