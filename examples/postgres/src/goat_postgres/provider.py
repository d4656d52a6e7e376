"""The PostgreSQL provider: one row per note in one table, apart by namespace and scope.

Every statement filters by ``namespace`` and ``scope`` (``global`` or ``pen:<id>``, compared
whole, never as a pattern) and passes every value as a bound parameter. The table:

- ``id``, ``title``, ``body``, ``kind``, ``created``, ``updated``: the note;
- ``tkey``: the folded title (NFC, stripped, casefolded), in the C collation, so pages list
  by title case-insensitively, then id, and a cursor can name the last page listed;
- ``words``: the distinct folded words of title and body (a GIN index finds them).

A write is one transaction under an advisory lock for its scope, so titled writes that race
append to one note and a write lands whole or not at all.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import unicodedata
import uuid
from datetime import UTC, datetime
from typing import Any

from goat_core import (
    Ambiguous,
    BadInput,
    Health,
    MemoryWrite,
    NotFound,
    Page,
    PageList,
    PageSummary,
    Provider,
    ProviderContext,
    ProviderUnavailable,
    RecallItem,
    RecallResult,
    Receipt,
    ReceiptStatus,
    TooLarge,
)
from goat_core.contract import normalize_pen_id
from goat_core.filestore import generated_title
from goat_postgres.client import ConnectionLost, Transport, Tx
from goat_postgres.plugin import SPEC

TABLE_SQL = (
    "SELECT pg_advisory_xact_lock(hashtextextended('goat_notes schema', 0))",
    """CREATE TABLE IF NOT EXISTS goat_notes (
        namespace text NOT NULL,
        scope text NOT NULL,
        id text COLLATE "C" NOT NULL,
        title text NOT NULL,
        tkey text COLLATE "C" NOT NULL,
        body text NOT NULL,
        kind text NOT NULL,
        words text[] NOT NULL,
        created timestamptz NOT NULL DEFAULT now(),
        updated timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (namespace, scope, id)
    )""",
    "CREATE INDEX IF NOT EXISTS goat_notes_order ON goat_notes (namespace, scope, tkey, id)",
    "CREATE INDEX IF NOT EXISTS goat_notes_words ON goat_notes USING gin (words)",
)

_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"
_BY_TITLE = """SELECT id FROM goat_notes WHERE namespace = %s AND scope = %s AND tkey = %s
    ORDER BY id LIMIT 1"""
_EXISTS = "SELECT id FROM goat_notes WHERE namespace = %s AND scope = %s AND id = %s"
_APPEND = """UPDATE goat_notes
    SET body = body || CASE WHEN right(body, 1) = E'\\n' THEN '' ELSE E'\\n' END || %s,
        words = ARRAY(SELECT DISTINCT w FROM unnest(words || %s::text[]) AS w),
        updated = now()
    WHERE namespace = %s AND scope = %s AND id = %s
    RETURNING id"""
_INSERT = """INSERT INTO goat_notes (namespace, scope, id, title, tkey, body, kind, words)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s::text[])
    RETURNING id"""
_DELETE = "DELETE FROM goat_notes WHERE namespace = %s AND scope = %s AND id = %s RETURNING id"
_RECALL = """SELECT id, title, body, score, total FROM (
        SELECT id, title, body,
               (SELECT count(*) FROM unnest(words) AS w WHERE w = ANY(%(q)s::text[])) AS score,
               count(*) OVER () AS total
        FROM goat_notes
        WHERE namespace = %(ns)s AND scope = %(scope)s AND words && %(q)s::text[]
    ) AS hits
    ORDER BY score DESC, id
    LIMIT %(limit)s"""
_LIST_FIRST = """SELECT id, title, tkey FROM goat_notes
    WHERE namespace = %(ns)s AND scope = %(scope)s
    ORDER BY tkey, id LIMIT %(limit)s"""
_LIST_AFTER = """SELECT id, title, tkey FROM goat_notes
    WHERE namespace = %(ns)s AND scope = %(scope)s AND (tkey, id) > (%(tkey)s, %(id)s)
    ORDER BY tkey, id LIMIT %(limit)s"""
_RESOLVE = """SELECT id, title, body FROM goat_notes
    WHERE namespace = %(ns)s AND scope = %(scope)s AND (id = %(ref)s OR tkey = %(tkey)s)
    ORDER BY (id = %(ref)s) DESC, tkey, id"""
_COUNT = "SELECT count(*) FROM goat_notes WHERE namespace = %s AND scope = %s"


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _fold(title: str) -> str:
    return _nfc(title).strip().casefold()


def _words(text: str) -> list[str]:
    return sorted({w.casefold() for w in re.findall(r"\w+", _nfc(text))})


def _snippet(text: str, words: list[str], width: int = 200) -> str:
    folded = text.casefold()  # same length as text for nearly all text; a hint only
    at = min((i for i in (folded.find(w) for w in words) if i >= 0), default=0)
    start = max(0, min(at - width // 4, len(text) - width))
    return text[start : start + width]


class PostgresProvider(Provider):
    spec = SPEC

    def __init__(self, context: ProviderContext) -> None:
        super().__init__(context)
        scope = context.scope
        if scope.pen_id is not None:
            normalize_pen_id(scope.pen_id)  # ScopeError for a forged, invalid Pen id
        self.scope_key = scope.key
        settings = context.settings
        self.url: str = settings.url  # type: ignore[attr-defined]
        self.database: str = settings.database  # type: ignore[attr-defined]
        self.user: str = settings.user  # type: ignore[attr-defined]
        self.namespace: str = settings.namespace  # type: ignore[attr-defined]
        if context.authorize is None:
            raise ProviderUnavailable("the host gave no egress guard for this provider")
        self._credential = context.get_credential
        self.transport = Transport(
            context.authorize,
            self.url,
            database=self.database,
            user=self.user,
            sslmode=settings.effective_sslmode,  # type: ignore[attr-defined]
            password=lambda: context.get_credential("password"),
        )
        self._table_ready = False

    # -- plumbing ------------------------------------------------------------------------

    async def _ready(self) -> None:
        """Connect, and create the table on first use (once per provider)."""
        if self._table_ready:
            return
        rows = await self.transport.fetch("SELECT to_regclass('goat_notes') IS NOT NULL")
        if not rows[0][0]:

            async def create(tx: Tx) -> None:
                for statement in TABLE_SQL:
                    await tx.execute(statement)

            await self.transport.write(create)
        self._table_ready = True

    def _durability_problem(self) -> str | None:
        server = self.transport.server
        if server.get("fsync") != "on":
            return f"{self.url} runs with fsync={server.get('fsync')}"
        if server.get("synchronous_commit") != "on":
            return f"{self.url} keeps synchronous_commit={server.get('synchronous_commit')}"
        if server.get("server_encoding") != "UTF8":
            return f"{self.url} stores text as {server.get('server_encoding')}, not UTF8"
        return None

    def _receipt(self, page_id: str, *, removed: bool = False) -> Receipt:
        return Receipt(
            status=ReceiptStatus.STORED,
            id=page_id,
            scope=self.scope_key,
            removed=(page_id,) if removed else (),
        )

    async def _write(self, write: MemoryWrite, mode: str, target: str = "") -> Receipt:
        if len(write.text) > self.spec.max_input_chars:
            raise TooLarge(
                f"text is {len(write.text)} characters; at most "
                f"{self.spec.max_input_chars}; nothing stored"
            )
        text = _nfc(write.text)
        if not text.strip():
            raise BadInput("empty text; nothing stored")
        if "\0" in text or "\0" in (write.title or ""):
            raise BadInput("PostgreSQL text cannot hold a NUL character; nothing stored")
        await self._ready()
        problem = self._durability_problem()
        if problem:
            raise ProviderUnavailable(
                f"{problem}, so no write could honestly be reported stored; nothing sent"
            )
        given = _nfc(write.title).strip() if write.title else ""
        # An untitled note is titled as GOAT's file providers title it (markup-only text: its
        # first line).
        title = given or generated_title(text) or text.strip().splitlines()[0][:60].strip()
        words = _words(title + "\n" + text)
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        heading = f"{stamp} feedback" if write.kind == "feedback" else stamp
        entry = f"\n## {heading}\n\n{text}"
        new_id = uuid.uuid4().hex
        where = (self.namespace, self.scope_key)

        async def steps(tx: Tx) -> str:
            await tx.execute(_LOCK, (f"{self.namespace} {self.scope_key}",))
            found: str | None = None
            if mode == "title":
                rows = await tx.execute(_BY_TITLE, (*where, _fold(title)))
                found = rows[0][0] if rows else None
            elif mode == "on":
                if not await tx.execute(_EXISTS, (*where, target)):
                    raise NotFound(f"no page {target!r} in {self.label()}")
                found = target
            if found is not None:
                rows = await tx.execute(_APPEND, (entry, words, *where, found), changes=True)
            else:
                rows = await tx.execute(
                    _INSERT,
                    (*where, new_id, title, _fold(title), text, write.kind, words),
                    changes=True,
                )
            return rows[0][0]

        try:
            page_id = await self.transport.write(steps)
        except ConnectionLost as exc:  # COMMIT sent, answer lost: it may or may not have landed
            return Receipt(status=ReceiptStatus.UNKNOWN, scope=self.scope_key, reason=str(exc))
        return self._receipt(page_id)

    async def _resolve(self, ref: str) -> tuple[str, str, str]:
        """A page's (id, title, body) from its id or its unique title."""
        if "\0" in ref:  # PostgreSQL text cannot hold one, so no page has it
            raise NotFound(f"no page {ref!r} in {self.label()}")
        await self._ready()
        params = {"ns": self.namespace, "scope": self.scope_key, "ref": ref, "tkey": _fold(ref)}
        rows = await self.transport.fetch(_RESOLVE, params)  # type: ignore[arg-type]
        if not rows:
            raise NotFound(f"no page {ref!r} in {self.label()}")
        if rows[0][0] != ref and len(rows) > 1:
            raise Ambiguous(
                f"{len(rows)} pages are titled {ref!r}; use an id",
                candidates=[row[0] for row in rows],
            )
        page_id, title, body = rows[0]
        return page_id, title, body

    # -- operations ----------------------------------------------------------------------

    async def remember(self, write: MemoryWrite) -> Receipt:
        return await self._write(write, "title" if write.title else "new")

    async def feedback(self, write: MemoryWrite) -> Receipt:
        if write.on:
            page_id, _, _ = await self._resolve(write.on)
            return await self._write(write, "on", page_id)
        return await self._write(write, "new")

    async def forget(self, ref: str) -> Receipt:
        page_id, _, _ = await self._resolve(ref)

        async def steps(tx: Tx) -> list[tuple[Any, ...]]:
            where = (self.namespace, self.scope_key, page_id)
            return await tx.execute(_DELETE, where, changes=True)

        try:
            removed = await self.transport.write(steps)
        except ConnectionLost as exc:
            return Receipt(status=ReceiptStatus.UNKNOWN, scope=self.scope_key, reason=str(exc))
        if not removed:
            raise NotFound(f"no page {ref!r} in {self.label()}")
        return self._receipt(page_id, removed=True)

    async def recall(self, query: str, *, limit: int = 10) -> RecallResult:
        if limit < 1:
            raise BadInput(f"limit must be at least 1, not {limit}")
        words = _words(query)  # user text, never query syntax
        if not words:
            return RecallResult(scope=self.scope_key, items=(), complete=True)
        await self._ready()
        params = {"q": words, "ns": self.namespace, "scope": self.scope_key, "limit": limit}
        rows = await self.transport.fetch(_RECALL, params)  # type: ignore[arg-type]
        total = rows[0][4] if rows else 0
        items = tuple(
            RecallItem(
                id=page_id,
                title=title,
                score=float(score),
                snippet=_snippet(body, words),
                text=body,
            )
            for page_id, title, body, score, _ in rows
        )
        return RecallResult(scope=self.scope_key, items=items, complete=total <= limit)

    async def list_pages(self, *, limit: int = 50, cursor: str | None = None) -> PageList:
        if not 1 <= limit <= 1000:
            raise BadInput(f"limit must be 1..1000, not {limit}")
        params: dict[str, Any] = {"ns": self.namespace, "scope": self.scope_key, "limit": limit + 1}
        sql = _LIST_FIRST
        if cursor:
            try:
                tkey, page_id = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
                if not isinstance(tkey, str) or not isinstance(page_id, str):
                    raise ValueError(cursor)
            except (ValueError, TypeError, binascii.Error, UnicodeError):
                raise BadInput("not a cursor this provider issued") from None
            params |= {"tkey": tkey, "id": page_id}
            sql = _LIST_AFTER
        await self._ready()
        rows = await self.transport.fetch(sql, params)  # type: ignore[arg-type]
        chunk, more = rows[:limit], len(rows) > limit
        next_cursor = None
        if more:
            last = json.dumps([chunk[-1][2], chunk[-1][0]]).encode("utf-8")
            next_cursor = base64.urlsafe_b64encode(last).decode("ascii")
        return PageList(
            items=tuple(PageSummary(id=i, title=t) for i, t, _ in chunk),
            next_cursor=next_cursor,
            complete=not more,
        )

    async def get_page(self, ref: str) -> Page:
        page_id, title, body = await self._resolve(ref)
        return Page(id=page_id, title=title, body=body)

    async def check(self) -> Health:
        try:
            await self._ready()
            rows = await self.transport.fetch(_COUNT, (self.namespace, self.scope_key))
        except Exception as exc:
            return Health.from_error(exc, label=self.label())
        problem = self._durability_problem()
        if problem:
            return Health.broken(
                f"{self.label()}: {problem}; writes need fsync=on, synchronous_commit=on, UTF8",
                cause="incompatible",
            )
        where = f"{self.url}, database {self.database}, namespace {self.namespace}"
        return Health.healthy(f"{rows[0][0]} pages on {where}")

    def transport_fingerprint(self) -> str:
        secret = self._credential("password") or ""
        parts = [
            self.url,
            self.database,
            self.user,
            self.namespace,
            hashlib.sha256(secret.encode()).hexdigest(),
        ]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    async def close(self) -> None:
        await self.transport.aclose()
