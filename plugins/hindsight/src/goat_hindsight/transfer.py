"""Copies and imports into a Hindsight bank: the ``import_pages`` operation
(:data:`goat_core.contract.IMPORT_OPERATION`; docs/design.md, Copy, export and import).

Each page is one ``retain`` with ``content`` (the page body, as the policy gate passed it)
and ``context`` (``imported`` or ``copied``, the title, and the provenance: provider, page
id, sha256, time). Nothing else is sent: no ``document_id`` (a repeated document id
replaces earlier memories), no ``update_mode``, no tags, no metadata, no source Pen id.

A bank keeps no frontmatter, so idempotency lives in a ledger under the GOAT home
(``<data>/hindsight-imports/<key>.json``), keyed by the binding (its id, server and bank)
and each page's content hash. An entry is recorded as ``unknown`` before the retain is sent
and becomes ``queued`` with the operation id once Hindsight acknowledges it (a refusal
removes it). A page whose entry is ``queued`` or ``stored`` is a duplicate; one whose entry
is ``unknown`` (the process died, or the write may or may not have reached the server) is
never sent again unless ``resend_unknown``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from goat_core.contract import (
    IMPORT_OPERATION,
    Access,
    MemoryWrite,
    PolicyGate,
    ProviderOperation,
    Receipt,
    ReceiptStatus,
    TransferItem,
    TransferOutcome,
    TransferPage,
)
from goat_core.errors import Rejected
from goat_hindsight.errors import ToolRejected, WriteOutcomeUnknown

if TYPE_CHECKING:
    from goat_core.contract import ProviderContext, ProviderSpec, Scope
    from goat_hindsight.client import HindsightClient


class RetainTarget(Protocol):
    """What an import needs of a bank's provider (the public attributes of
    :class:`~goat_hindsight.provider.HindsightProvider`)."""

    @property
    def context(self) -> ProviderContext: ...

    @property
    def spec(self) -> ProviderSpec: ...

    @property
    def scope(self) -> Scope: ...

    @property
    def client(self) -> HindsightClient: ...

    @property
    def server(self) -> str: ...

    @property
    def bank_id(self) -> str: ...


__all__ = ["LEDGER_FOLDER", "Ledger", "hindsight_operations", "retain_context"]

#: The ledger folder under the GOAT home's data folder.
LEDGER_FOLDER = "hindsight-imports"

_O = TransferOutcome


class Ledger:
    """What this binding has retained from copies and imports, by content hash.

    :param home_data: the GOAT home's data folder. :param binding_id, server, bank: the
        binding's key (a rebind to another server or bank starts a new ledger).
    """

    def __init__(self, home_data: Path, binding_id: str, server: str, bank: str) -> None:
        key = hashlib.sha256(json.dumps([binding_id, server, bank]).encode()).hexdigest()[:24]
        self.path = home_data / LEDGER_FOLDER / f"{key}.json"
        self.header = {"binding": binding_id, "server": server, "bank": bank}
        self.entries: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            data = json.loads(self.path.read_text("utf-8"))
            self.entries = dict(data.get("entries") or {})

    def save(self) -> None:
        from goat_core.fileio import atomic_write

        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        data = {**self.header, "entries": self.entries}
        atomic_write(self.path, json.dumps(data, indent=1).encode("utf-8"), mode=0o600)


def retain_context(page: TransferPage) -> str:
    """The ``context`` of a retained page: what it is and where it came from."""
    p = page.provenance
    verb = "copied" if page.provenance_key == "copied_from" else "imported"
    return (
        f"{verb}; title: {page.title}; from: provider={p.get('provider')}, "
        f"id={p.get('id')}, sha256={p.get('sha256')}, at={p.get('at')}"
    )


async def _import(
    provider: RetainTarget,
    gate: PolicyGate,
    pages: Sequence[TransferPage],
    *,
    dry_run: bool,
    resend_unknown: bool,
    progress: Callable[[int, int], None] | None,
) -> list[TransferItem]:
    from goat_core.fileio import StoreLock

    home = provider.context.home
    ledger_args = (home.data_dir, provider.context.binding.id, provider.server, provider.bank_id)
    lock = StoreLock(home.lock_dir / "hindsight-imports.lock")
    items: list[TransferItem] = []
    limit = provider.spec.max_input_chars
    with lock:
        ledger = Ledger(*ledger_args)
        for done, page in enumerate(pages, start=1):

            def item(
                outcome: TransferOutcome,
                reason: str | None = None,
                page: TransferPage = page,
                **kw: Any,
            ) -> None:
                items.append(
                    TransferItem(
                        source=str(page.provenance.get("id") or page.path),
                        outcome=outcome,
                        reason=reason,
                        sha256=page.sha256,
                        **kw,
                    )
                )

            entry = ledger.entries.get(page.sha256)
            if entry is not None and entry.get("status") in ("queued", "stored"):
                item(_O.DUPLICATE, target=entry.get("operation_id"))
                continue
            if entry is not None and entry.get("status") == "unknown" and not resend_unknown:
                item(
                    _O.SKIPPED_UNKNOWN,
                    "an earlier retain of this page has an unknown outcome; not resent "
                    "(--resend-unknown sends it again)",
                )
                continue
            if not page.body.strip():
                item(_O.REJECTED, "the page body is empty: nothing to retain")
                continue
            if len(page.body) > limit:
                item(_O.REJECTED, f"too large: {len(page.body)} characters, at most {limit}")
                continue
            try:
                inspected = gate.inspect(
                    MemoryWrite(kind="remember", text=page.body, title=page.title, source="import")
                )
            except Rejected as exc:
                item(_O.REJECTED, f"rejected: {exc.reason}")
                continue
            if dry_run:
                item(_O.PLANNED)
                continue
            ledger.entries[page.sha256] = {"status": "unknown", "id": page.provenance.get("id")}
            await anyio.to_thread.run_sync(
                ledger.save
            )  # a crash from here on leaves it unknown: never resent silently
            arguments = {"content": inspected.text, "context": retain_context(page)}
            scope = provider.scope.key
            try:
                ack = await provider.client.call("retain", arguments)
            except WriteOutcomeUnknown as exc:
                receipt = Receipt(status=ReceiptStatus.UNKNOWN, reason=exc.message, scope=scope)
                item(_O.UNKNOWN, exc.message, receipt=receipt)
                continue
            except ToolRejected as exc:
                del ledger.entries[page.sha256]
                await anyio.to_thread.run_sync(ledger.save)
                receipt = Receipt(status=ReceiptStatus.REJECTED, reason=exc.reason, scope=scope)
                item(_O.REJECTED, exc.reason, receipt=receipt)
                continue
            except BaseException:
                # nothing reached the tool (a refused connection, a missing bank): the
                # write did not happen; forget the pending entry, then report the error
                del ledger.entries[page.sha256]
                await anyio.to_thread.run_sync(ledger.save)
                raise
            operation = str(ack["operation_id"])
            ledger.entries[page.sha256] = {
                "status": "queued",
                "operation_id": operation,
                "id": page.provenance.get("id"),
            }
            await anyio.to_thread.run_sync(ledger.save)
            receipt = Receipt(status=ReceiptStatus.QUEUED, operation_id=operation, scope=scope)
            item(_O.QUEUED, target=operation, receipt=receipt)
            if progress is not None:
                progress(done, len(pages))
    return items


def hindsight_operations(provider: RetainTarget) -> list[ProviderOperation]:
    """``import_pages(pages, *, dry_run, rename, resend_unknown, progress)`` (write);
    ``rename`` has nothing to do in a bank (no paths)."""

    async def import_pages(
        gate: PolicyGate,
        pages: Sequence[TransferPage],
        *,
        dry_run: bool = False,
        rename: bool = False,
        resend_unknown: bool = False,
        progress: Callable[[int, int], None] | None = None,
        **_: Any,
    ) -> list[TransferItem]:
        return await _import(
            provider,
            gate,
            list(pages),
            dry_run=dry_run,
            resend_unknown=resend_unknown,
            progress=progress,
        )

    return [ProviderOperation(IMPORT_OPERATION, Access.WRITE, import_pages)]
