"""The hindsight provider: GOAT operations on one shared Hindsight bank.

Mapping (Hindsight 1.1.0 tool shapes):

==================  ===================================================================
remember, feedback  ``retain(content, context)``; receipt ``queued`` with the operation id
                    (Hindsight stores asynchronously: the ack never means stored). Never
                    ``document_id``, ``update_mode`` or tags.
refresh             ``get_operation(operation_id)`` when the server offers it:
                    ``completed`` -> ``stored``, ``failed`` -> ``failed``.
recall              ``recall(query, max_tokens, budget="mid")``; items carry
                    ``scores.final``; a configurable score floor drops weaker items.
reflect             ``reflect(query, budget="low")`` with a longer deadline.
list_pages          ``list_memories(offset, limit)``: newest first, de-duplicated by id,
                    ``degraded`` when ``total`` changed while paging.
get_page            ``get_memory(memory_id)``.
check               ``get_bank`` (connect if needed).
link_map, forget    not supported (no local links; GOAT deletes nothing in a bank).
import_pages        copies and imports: ``retain(content, context)`` per page, the
                    provenance in ``context``; a ledger under the GOAT home by binding and
                    content hash (:mod:`goat_hindsight.transfer`).
==================  ===================================================================

Whatever scope selects it, the provider is labelled "shared bank `<bank>` on `<server>`".
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import unicodedata
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
import httpx2

from goat_core.contract import (
    Health,
    MemoryWrite,
    Page,
    PageList,
    PageSummary,
    Provider,
    ProviderContext,
    ProviderOperation,
    ProviderSpec,
    RecallItem,
    RecallResult,
    Receipt,
    ReceiptStatus,
    Reflection,
    credential_env_var,
    normalize_pen_id,
)
from goat_core.errors import BadInput, GoatError, NotFound, ProviderUnavailable, TooLarge
from goat_hindsight.client import Backoff, Deadlines, HindsightClient, Limits
from goat_hindsight.errors import MemoryNotFound, ToolRejected, WriteOutcomeUnknown
from goat_hindsight.settings import parse_settings

__all__ = ["DEFAULT_MAX_TOKENS", "RECALL_EFFORT", "HindsightProvider"]

#: ``max_tokens`` of a recall when the host gives no budget (Hindsight's own default).
DEFAULT_MAX_TOKENS = 4096
#: The fixed effort level (Hindsight's ``budget`` argument) of every recall.
RECALL_EFFORT = "mid"
#: The effort level of reflect (Hindsight's default).
REFLECT_EFFORT = "low"
_MAX_PAGE_LIMIT = 100
_TITLE_CHARS = 80


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _title(text: str) -> str:
    """A memory's title: its first non-empty line, at most 80 characters."""
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= _TITLE_CHARS else line[: _TITLE_CHARS - 1] + "…"
    return "(empty memory)"


def _encode_cursor(offset: int, total: int, ids: list[str]) -> str:
    raw = json.dumps({"o": offset, "t": total, "s": ids}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[int, int, set[str]]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = json.loads(raw)
        offset, total, ids = data["o"], data["t"], data["s"]
        if not (isinstance(offset, int) and isinstance(total, int) and offset >= 0):
            raise ValueError
        if not (isinstance(ids, list) and all(isinstance(i, str) for i in ids)):
            raise ValueError
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError):
        raise BadInput(
            f"invalid page cursor {cursor[:40]!r}: not one list_pages returned"
        ) from None
    return offset, total, set(ids)


class HindsightProvider(Provider):
    """One bank on one Hindsight server, for whichever scope selected it.

    :param context: from the host; ``settings`` is :class:`HindsightSettings`,
        ``get_credential("api_key")`` gives the optional key, ``http_client`` the
        egress-guarded httpx2 client factory.
    :param spec: the spec this instance was built from.
    :param min_score: the recall score floor: items whose ``scores.final`` is below it are
        dropped (default ``0.0``: keep everything Hindsight ranks).
    :param transport, deadlines, limits, backoff, sleep: passed to :class:`HindsightClient`
        (the test seam).
    :raises ScopeError: a forged scope with an invalid Pen id.
    :raises ConfigError: invalid settings.
    """

    def __init__(
        self,
        context: ProviderContext,
        *,
        spec: ProviderSpec,
        min_score: float = 0.0,
        transport: httpx2.AsyncBaseTransport | None = None,
        deadlines: Deadlines | None = None,
        limits: Limits | None = None,
        backoff: Backoff | None = None,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    ) -> None:
        super().__init__(context)
        self.spec = spec
        if context.scope.pen_id is not None:
            normalize_pen_id(context.scope.pen_id)  # a forged scope is refused, never used
            if normalize_pen_id(context.scope.pen_id) != context.scope.pen_id:
                raise BadInput(f"Pen id {context.scope.pen_id!r} is not canonical")
        self.settings = parse_settings(context.settings)
        self.min_score = min_score
        self._client_options: dict[str, Any] = {
            "transport": transport,
            "deadlines": deadlines,
            "limits": limits,
            "backoff": backoff,
            "sleep": sleep,
        }
        self._client: HindsightClient | None = None

    # -- identity -----------------------------------------------------------------------------
    @property
    def server(self) -> str:
        return self.settings.base_url

    @property
    def bank_id(self) -> str:
        return self.settings.bank_id

    def label(self) -> str:
        return f"shared bank `{self.bank_id}` on `{self.server}`"

    def transport_fingerprint(self) -> str:
        """sha256 over server, bank and a digest of the credential (never the credential)."""
        key = self.context.get_credential("api_key") or ""
        key_digest = hashlib.sha256(key.encode()).hexdigest() if key else ""
        material = json.dumps([self.server, self.bank_id, key_digest])
        return hashlib.sha256(material.encode()).hexdigest()

    def __repr__(self) -> str:
        return f"<HindsightProvider {self.label()} scope={self.scope.key}>"

    @property
    def client(self) -> HindsightClient:
        """The MCP client (created on first use; connects lazily on the first call)."""
        if self._client is None:
            factory = self.context.http_client
            if factory is None:
                raise ProviderUnavailable(
                    f"{self.label()}: no egress-guarded HTTP client was provided by the host"
                )
            options = {"key_hint": self._key_hint(), **self._client_options}
            self._client = HindsightClient(
                self.settings,
                api_key=lambda: self.context.get_credential("api_key"),
                http_client=factory,
                **options,
            )
        return self._client

    def _key_hint(self) -> str:
        """The commands that store a key for this scope's binding (no key in them)."""
        scope = self.context.scope
        where = "--global" if scope.is_global else f"--pen {scope.pen_id}"
        env = credential_env_var(self.context.binding.id)
        return (
            f"store the right one with `goat bind {where} hindsight --set "
            f"base_url={self.server} --set bank_id={self.bank_id} --credential-stdin` (or set "
            f"{env}), then `goat check {where}`"
        )

    # -- writes -------------------------------------------------------------------------------
    async def remember(self, write: MemoryWrite) -> Receipt:
        """``retain`` the text; ``queued`` with Hindsight's operation id.

        :raises TooLarge: over ``spec.max_input_chars`` characters or the request limit.
        :raises BankNotFound, HindsightAuthError, ServerUnavailable: nothing was written.
        :returns: ``queued``; ``rejected`` when the tool refused; ``unknown`` when the
            write failed after it may have reached the tool (never replayed).
        """
        return await self._retain(write)

    async def feedback(self, write: MemoryWrite) -> Receipt:
        """Feedback is retained like a remember, its context saying it is feedback."""
        return await self._retain(write)

    def _context_of(self, write: MemoryWrite) -> str:
        parts: list[str] = [write.kind]
        if write.title:
            parts.append(f"title: {_nfc(write.title)}")
        if write.on:
            parts.append(f"on: {_nfc(write.on)}")
        return "; ".join(parts)

    async def _retain(self, write: MemoryWrite) -> Receipt:
        limit = self.spec.max_input_chars
        if len(write.text) > limit:
            raise TooLarge(
                f"text is {len(write.text)} characters, over the limit of {limit} for "
                f"{self.label()}; nothing was sent"
            )
        if not write.text.strip():
            raise BadInput("nothing to remember: the text is empty")
        arguments = {"content": _nfc(write.text), "context": self._context_of(write)}
        try:
            ack = await self.client.call("retain", arguments)
        except WriteOutcomeUnknown as exc:
            return Receipt(status=ReceiptStatus.UNKNOWN, reason=exc.message, scope=self.scope.key)
        except ToolRejected as exc:
            return Receipt(status=ReceiptStatus.REJECTED, reason=exc.reason, scope=self.scope.key)
        return Receipt(
            status=ReceiptStatus.QUEUED, operation_id=ack["operation_id"], scope=self.scope.key
        )

    async def refresh(self, receipt: Receipt) -> Receipt:
        """``get_operation`` of a queued receipt: ``completed`` -> ``stored``, ``failed`` ->
        ``failed`` (with Hindsight's error message); unchanged otherwise or when the server
        does not offer ``get_operation``.

        :raises NotFound: the bank knows no such operation (Hindsight 1.1.0 answers
            ``"status": "not_found"``): a mistyped id is not a write still pending.
        """
        if receipt.status is not ReceiptStatus.QUEUED or not receipt.operation_id:
            return receipt
        client = self.client
        if client.connects == 0:
            await client.check()  # learn which tools the server offers
        if "get_operation" not in client.offered_tools:
            return receipt
        missing = NotFound(
            f"operation `{receipt.operation_id}` not found in bank `{self.bank_id}` on "
            f"`{self.server}`"
        )
        try:
            info = await client.call("get_operation", {"operation_id": receipt.operation_id})
        except ToolRejected as exc:
            if "not found" in (exc.message or "").lower():
                raise missing from None
            return receipt
        status = str(info.get("status", "")).lower()
        if status == "not_found":
            raise missing
        if status == "completed":
            return receipt.model_copy(update={"status": ReceiptStatus.STORED})
        if status == "failed":
            reason = str(info.get("error_message") or "Hindsight reports the operation failed")
            return receipt.model_copy(update={"status": ReceiptStatus.FAILED, "reason": reason})
        return receipt

    # -- reads --------------------------------------------------------------------------------
    async def recall(
        self, query: str, *, limit: int = 10, max_tokens: int | None = None
    ) -> RecallResult:
        """Ranked memories for ``query`` (plain text, NFC-normalised).

        :param limit: 1..100 items.
        :param max_tokens: the host's budget in tokens (Hindsight's ``max_tokens``);
            default :data:`DEFAULT_MAX_TOKENS`.
        :returns: items with ``score`` = ``scores.final``; ``complete`` is ``True`` when
            nothing was dropped except by ``limit`` or the score floor.
        """
        if not 1 <= limit <= 100:
            raise BadInput(f"recall limit {limit} is outside 1..100")
        if max_tokens is not None and max_tokens < 1:
            raise BadInput(f"recall budget {max_tokens} tokens is not positive")
        if not query.strip():
            raise BadInput("recall needs a query")
        answer = await self.client.call(
            "recall",
            {
                "query": _nfc(query),
                "max_tokens": max_tokens or DEFAULT_MAX_TOKENS,
                "budget": RECALL_EFFORT,
            },
        )
        items: list[RecallItem] = []
        for hit in answer["results"]:
            scores = hit.get("scores") or {}
            score = scores.get("final")
            score = float(score) if isinstance(score, int | float) else 0.0
            if score < self.min_score:
                continue
            text = str(hit["text"])
            items.append(
                RecallItem(
                    id=str(hit["id"]),
                    title=_title(text),
                    score=score,
                    snippet=text if len(text) <= 300 else text[:299] + "…",
                    text=text,
                    source=self.label(),
                )
            )
        return RecallResult(scope=self.scope.key, items=tuple(items[:limit]), complete=True)

    async def reflect(self, query: str) -> Reflection:
        """Hindsight's reflect over the bank (longer deadline than recall)."""
        if not query.strip():
            raise BadInput("reflect needs a question")
        answer = await self.client.call("reflect", {"query": _nfc(query), "budget": REFLECT_EFFORT})
        return Reflection(scope=self.scope.key, text=answer["text"])

    def _summary(self, item: dict[str, Any]) -> PageSummary:
        return PageSummary(id=str(item["id"]), title=_title(str(item["text"])))

    async def list_pages(self, *, limit: int = 50, cursor: str | None = None) -> PageList:
        """Memory facts of the bank, newest first, ``limit`` (1..100) per page.

        ``next_cursor`` carries the next offset, the ``total`` seen on the first page and
        the ids of this page (so an item pushed down by a new retain is not listed twice);
        when ``total`` changed while paging, ``complete`` is ``False`` and ``degraded`` says
        why.
        """
        if not 1 <= limit <= _MAX_PAGE_LIMIT:
            raise BadInput(f"list_pages limit {limit} is outside 1..{_MAX_PAGE_LIMIT}")
        offset, first_total, seen = (0, -1, set()) if cursor is None else _decode_cursor(cursor)
        answer = await self.client.call("list_memories", {"offset": offset, "limit": limit})
        total = int(answer["total"])
        raw_items = answer["items"][:limit]  # never skip what a server sent beyond the limit
        items: list[PageSummary] = []
        ids_here: list[str] = []
        for item in raw_items:
            summary = self._summary(item)
            ids_here.append(summary.id)
            if summary.id in seen or any(p.id == summary.id for p in items):
                continue
            items.append(summary)
        degraded: list[str] = []
        if first_total >= 0 and total != first_total:
            degraded.append(
                f"the bank changed while paging (total {first_total} -> {total}): memories "
                "may have shifted between pages"
            )
        next_offset = offset + len(raw_items)
        more = bool(raw_items) and next_offset < total
        next_cursor = (
            _encode_cursor(next_offset, first_total if first_total >= 0 else total, ids_here)
            if more
            else None
        )
        return PageList(
            items=tuple(items[:limit]),
            next_cursor=next_cursor,
            complete=not more and not degraded,
            degraded=tuple(degraded),
        )

    async def get_page(self, ref: str) -> Page:
        """One memory fact by id (``get_memory``).

        :raises NotFound: no such memory in this bank (or a malformed id); Hindsight keeps
            no titles or paths, so the message says a memory is shown by its id.
        """
        if not ref or len(ref) > 200:
            raise BadInput("a memory id is 1-200 characters")
        try:
            item = await self.client.call("get_memory", {"memory_id": ref})
        except MemoryNotFound as exc:
            raise MemoryNotFound(
                f"{exc.message} (a Hindsight memory is shown by its id, as `goat pages` "
                "lists them; titles and paths are not looked up)",
                bank_id=self.bank_id,
            ) from None
        text = str(item["text"])
        frontmatter = {
            key: item[key]
            for key in ("context", "date", "type", "mentioned_at", "entities", "state")
            if item.get(key) not in (None, "", [])
        }
        return Page(
            id=str(item["id"]),
            title=_title(text),
            body=text,
            frontmatter=frontmatter,
            provenance={"server": self.server, "bank": self.bank_id, "source": "hindsight"},
        )

    def operations(self) -> Sequence[ProviderOperation]:
        """``import_pages``: copies and imports retained with provenance in ``context``,
        idempotent through a ledger under the GOAT home (:mod:`goat_hindsight.transfer`)."""
        from goat_hindsight.transfer import hindsight_operations

        return hindsight_operations(self)

    # -- health -------------------------------------------------------------------------------
    async def check(self) -> Health:
        """``get_bank`` probe. Never raises for an unreachable server: reports it."""
        try:
            await self.client.check()
        except GoatError as exc:
            return Health.from_error(exc, label=self.label())
        if self.context.get_credential("api_key"):
            return Health.healthy(f"{self.label()} reached")
        return Health.healthy(f"{self.label()} reached without authentication")

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()
