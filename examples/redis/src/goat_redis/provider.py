"""The Redis provider: notes, a title index, a word index and a page order per scope.

Keys of one scope all start with ``<namespace>:<scope>:``, where ``<scope>`` is ``global`` or
``pen=<percent-encoded id>``; neither part can hold a ``:``, so no scope's prefix is a prefix
of another's (``pen=a:`` vs ``pen=ab:``). Under it:

- ``note:<id>``  hash: title, tkey (folded title), text, kind, created, updated
- ``order``      sorted set, all scores 0: ``<tkey>\\0<id>``, so ZRANGEBYLEX lists pages by
  title case-insensitively, then id, and a cursor can name the last page listed
- ``title:<tkey>`` set of note ids with that title; ``word:<w>`` set of ids holding word w;
  ``words:<id>`` the words of one note (so forget can unindex it)

Every write is one Lua script, so it lands whole or not at all.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import unicodedata
import uuid
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

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
from goat_redis.client import ConnectionLost, Transport
from goat_redis.plugin import SPEC

_WRITE = """
local p, mode, id = ARGV[1], ARGV[2], ARGV[3]
local title, tkey, text, kind, now = ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local target = nil
if mode == 'title' then
  local ids = redis.call('SMEMBERS', p .. 'title:' .. tkey)
  if #ids > 0 then table.sort(ids); target = ids[1] end
elseif mode == 'on' then
  target = id
  if redis.call('EXISTS', p .. 'note:' .. id) == 0 then return false end
end
if target then
  id = target
  local note = p .. 'note:' .. id
  local body = redis.call('HGET', note, 'text')
  redis.call('HSET', note, 'text', body .. '\\n\\n## ' .. now .. '\\n\\n' .. text, 'updated', now)
else
  redis.call('HSET', p .. 'note:' .. id, 'title', title, 'tkey', tkey, 'text', text,
             'kind', kind, 'created', now, 'updated', now)
  redis.call('ZADD', p .. 'order', 0, tkey .. '\\0' .. id)
  redis.call('SADD', p .. 'title:' .. tkey, id)
end
for i = 9, #ARGV do
  redis.call('SADD', p .. 'word:' .. ARGV[i], id)
  redis.call('SADD', p .. 'words:' .. id, ARGV[i])
end
return id
"""

_FORGET = """
local p, id = ARGV[1], ARGV[2]
local note = p .. 'note:' .. id
local tkey = redis.call('HGET', note, 'tkey')
if not tkey then return 0 end
for _, w in ipairs(redis.call('SMEMBERS', p .. 'words:' .. id)) do
  redis.call('SREM', p .. 'word:' .. w, id)
end
redis.call('DEL', note, p .. 'words:' .. id)
redis.call('SREM', p .. 'title:' .. tkey, id)
redis.call('ZREM', p .. 'order', tkey .. '\\0' .. id)
return 1
"""

_LIST = """
local p, after, limit = ARGV[1], ARGV[2], tonumber(ARGV[3])
local members = redis.call('ZRANGEBYLEX', p .. 'order', after, '+', 'LIMIT', 0, limit + 1)
local out = {}
for i, m in ipairs(members) do
  local id = string.sub(m, -32)
  out[#out + 1] = m
  out[#out + 1] = id
  out[#out + 1] = redis.call('HGET', p .. 'note:' .. id, 'title')
end
return out
"""

_RECALL = """
local p, limit = ARGV[1], tonumber(ARGV[2])
local score = {}
for i = 3, #ARGV do
  for _, id in ipairs(redis.call('SMEMBERS', p .. 'word:' .. ARGV[i])) do
    score[id] = (score[id] or 0) + 1
  end
end
local hits = {}
for id, s in pairs(score) do hits[#hits + 1] = {id, s} end
table.sort(hits, function(a, b)
  if a[2] ~= b[2] then return a[2] > b[2] end
  return a[1] < b[1]
end)
local out = {#hits}
for i = 1, math.min(limit, #hits) do
  local id = hits[i][1]
  local fields = redis.call('HMGET', p .. 'note:' .. id, 'title', 'text')
  out[#out + 1] = {id, hits[i][2], fields[1], fields[2]}
end
return out
"""

_ID = re.compile(r"^[0-9a-f]{32}$")


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _fold(title: str) -> str:
    return _nfc(title).strip().casefold().replace("\0", "")


def _words(text: str) -> list[str]:
    return sorted({w.casefold() for w in re.findall(r"\w+", _nfc(text))})


def _snippet(text: str, words: list[str], width: int = 200) -> str:
    folded = text.casefold()  # same length as text for nearly all text; a hint only
    at = min((i for i in (folded.find(w) for w in words) if i >= 0), default=0)
    start = max(0, min(at - width // 4, len(text) - width))
    return text[start : start + width]


def _s(value: bytes | None) -> str:
    return "" if value is None else value.decode("utf-8")


class RedisProvider(Provider):
    spec = SPEC

    def __init__(self, context: ProviderContext) -> None:
        super().__init__(context)
        scope = context.scope
        if scope.pen_id is not None:
            normalize_pen_id(scope.pen_id)  # ScopeError for a forged, invalid Pen id
            part = "pen=" + quote(scope.pen_id, safe="")
        else:
            part = "global"
        settings = context.settings
        self.url: str = settings.url  # type: ignore[attr-defined]
        self.namespace: str = settings.namespace  # type: ignore[attr-defined]
        self.prefix = f"{self.namespace}:{part}:"
        if context.authorize is None:
            raise ProviderUnavailable("the host gave no egress guard for this provider")
        self._credential = context.get_credential
        self.transport = Transport(
            context.authorize, self.url, lambda: context.get_credential("api_key")
        )
        self._durable: bool | None = None

    # -- plumbing ------------------------------------------------------------------------

    async def _eval(self, script: str, *args: str | int) -> Any:
        return await self.transport.call("EVAL", script, 0, self.prefix, *args)

    async def _check_durable(self) -> bool:
        """Does the server fsync every write before it answers? Asked once per provider."""
        if self._durable is None:
            aof = await self.transport.call("CONFIG", "GET", "appendonly")
            fsync = await self.transport.call("CONFIG", "GET", "appendfsync")
            self._durable = aof == [b"appendonly", b"yes"] and fsync == [b"appendfsync", b"always"]
        return self._durable

    async def _write(self, write: MemoryWrite, mode: str, target: str = "") -> Receipt:
        if len(write.text) > self.spec.max_input_chars:
            raise TooLarge(
                f"text is {len(write.text)} characters; at most "
                f"{self.spec.max_input_chars}; nothing stored"
            )
        text = _nfc(write.text)
        if not text.strip():
            raise BadInput("empty text; nothing stored")
        if not await self._check_durable():
            raise ProviderUnavailable(
                f"{self.url} does not fsync each write (needs appendonly yes, appendfsync "
                "always), so no write could honestly be reported stored; nothing sent"
            )
        title = _nfc(write.title).strip() if write.title else text.strip().splitlines()[0][:60]
        now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        words = _words(title + "\n" + text)
        try:
            got = await self._eval(
                _WRITE,
                mode,
                target or uuid.uuid4().hex,
                title,
                _fold(title),
                text,
                write.kind,
                now,
                *words,
            )
        except ConnectionLost as exc:  # sent, answer lost: it may or may not have landed
            return Receipt(status=ReceiptStatus.UNKNOWN, scope=self.scope.key, reason=str(exc))
        if got is None:
            raise NotFound(f"no page {target!r} in {self.label()}")
        return Receipt(status=ReceiptStatus.STORED, id=_s(got), scope=self.scope.key)

    async def _resolve(self, ref: str) -> str:
        """A page's id from its id or its unique title."""
        if _ID.match(ref) and await self.transport.call("EXISTS", f"{self.prefix}note:{ref}"):
            return ref
        ids = sorted(
            _s(i) for i in await self.transport.call("SMEMBERS", f"{self.prefix}title:{_fold(ref)}")
        )
        if not ids:
            raise NotFound(f"no page {ref!r} in {self.label()}")
        if len(ids) > 1:
            raise Ambiguous(f"{len(ids)} pages are titled {ref!r}", candidates=ids)
        return ids[0]

    # -- operations ----------------------------------------------------------------------

    async def remember(self, write: MemoryWrite) -> Receipt:
        return await self._write(write, "title" if write.title else "new")

    async def feedback(self, write: MemoryWrite) -> Receipt:
        if write.on:
            return await self._write(write, "on", await self._resolve(write.on))
        return await self._write(write, "new")

    async def forget(self, ref: str) -> Receipt:
        page_id = await self._resolve(ref)
        try:
            removed = await self._eval(_FORGET, page_id)
        except ConnectionLost as exc:
            return Receipt(status=ReceiptStatus.UNKNOWN, scope=self.scope.key, reason=str(exc))
        if not removed:
            raise NotFound(f"no page {ref!r} in {self.label()}")
        return Receipt(
            status=ReceiptStatus.STORED, id=page_id, scope=self.scope.key, removed=(page_id,)
        )

    async def recall(self, query: str, *, limit: int = 10) -> RecallResult:
        words = _words(query)  # user text, never query syntax
        if not words:
            return RecallResult(scope=self.scope.key, items=(), complete=True)
        total, *rows = await self._eval(_RECALL, limit, *words)
        items = []
        for raw_id, score, title, text in rows:  # one script: every indexed id has a note
            body = _s(text)
            items.append(
                RecallItem(
                    id=_s(raw_id),
                    title=_s(title),
                    score=float(score),
                    snippet=_snippet(body, words),
                    text=body,
                )
            )
        return RecallResult(scope=self.scope.key, items=tuple(items), complete=total <= limit)

    async def list_pages(self, *, limit: int = 50, cursor: str | None = None) -> PageList:
        if not 1 <= limit <= 1000:
            raise BadInput(f"limit must be 1..1000, not {limit}")
        after = "-"
        if cursor:
            try:
                after = "(" + base64.urlsafe_b64decode(cursor.encode("ascii")).decode("utf-8")
            except (ValueError, binascii.Error, UnicodeError):
                raise BadInput("not a cursor this provider issued") from None
        flat = await self._eval(_LIST, after, limit)
        rows = [flat[i : i + 3] for i in range(0, len(flat), 3)]
        chunk, more = rows[:limit], len(rows) > limit
        return PageList(
            items=tuple(PageSummary(id=_s(i), title=_s(t)) for _, i, t in chunk),
            next_cursor=base64.urlsafe_b64encode(chunk[-1][0]).decode("ascii") if more else None,
            complete=not more,
        )

    async def get_page(self, ref: str) -> Page:
        page_id = await self._resolve(ref)
        title, text = await self.transport.call(
            "HMGET", f"{self.prefix}note:{page_id}", "title", "text"
        )
        if title is None:
            raise NotFound(f"no page {ref!r} in {self.label()}")
        return Page(id=page_id, title=_s(title), body=_s(text))

    async def check(self) -> Health:
        try:
            pages = await self.transport.call("ZCARD", f"{self.prefix}order")
            durable = await self._check_durable()
        except Exception as exc:
            return Health.from_error(exc, label=self.label())
        where = f"{self.url}, namespace {self.namespace}"
        if not durable:
            return Health.broken(
                f"{self.label()}: {where} does not fsync each write "
                "(needs appendonly yes, appendfsync always)",
                cause="incompatible",
            )
        return Health.healthy(f"{pages} pages on {where}")

    def transport_fingerprint(self) -> str:
        secret = self._credential("api_key") or ""
        parts = [self.url, self.namespace, hashlib.sha256(secret.encode()).hexdigest()]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    async def close(self) -> None:
        await self.transport.aclose()
