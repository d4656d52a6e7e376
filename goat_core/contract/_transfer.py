"""Moving knowledge on purpose: what a one-way copy or an import hands a provider, and what
each page's transfer came to (docs/design.md, Copy, export and import).

A destination provider takes part by offering the provider operation named
:data:`IMPORT_OPERATION` (access ``write``), run by the host through
``MemoryContext.run_operation`` with a :class:`~goat_core.contract.PolicyGate`::

    async def import_pages(gate, pages, *, dry_run=False, rename=False,
                           resend_unknown=False, progress=None) -> list[TransferItem]

It returns one :class:`TransferItem` per :class:`TransferPage`, in order. It must:

- pass the exact text it stores through ``gate.inspect`` (a refusal is outcome
  ``rejected`` for that page, nothing written for it);
- never overwrite: a path (or title) already taken by other content is ``conflict``,
  unless ``rename`` (then the next free name, ``<stem>-2.md``...); a provider that can hold
  the whole batch under one lock writes nothing at all while a conflict remains;
- be idempotent by :attr:`TransferPage.sha256`: a page already copied or imported with the
  same hash is ``duplicate`` and nothing is written; so is a page the store already holds
  byte for byte (:attr:`TransferPage.origin_sha256`, or ``sha256`` itself, equal to a
  stored page's hash), the page an export of this very store came from;
- never duplicate a page ``id`` the store already holds: such a page is written without
  its ``id`` (the store names it by its path; the source's id stays in the provenance);
- record provenance: :attr:`TransferPage.provenance` under
  :attr:`TransferPage.provenance_key` (``copied_from`` or ``imported_from``), in frontmatter
  for file stores;
- with ``dry_run``, write nothing and answer what would happen (``planned``, ``duplicate``,
  ``conflict``...).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from goat_core.contract._records import Receipt

#: The provider operation a destination offers for copies and imports.
IMPORT_OPERATION = "import_pages"
#: Frontmatter key of a copy's provenance.
COPIED_FROM: Literal["copied_from"] = "copied_from"
#: Frontmatter key of an import's provenance.
IMPORTED_FROM: Literal["imported_from"] = "imported_from"
#: Both provenance keys.
PROVENANCE_KEYS = (COPIED_FROM, IMPORTED_FROM)

_FROZEN = ConfigDict(frozen=True)


class TransferPage(BaseModel):
    """One page to write into a destination store.

    :param path: its store path (POSIX, relative, ending ``.md``): the source's path, or a
        bundle file's path (the OKF identity).
    :param title: the page title.
    :param frontmatter: the page's own frontmatter (without provenance keys).
    :param body: the page text after its frontmatter, kept byte for byte.
    :param sha256: hex sha256 of the page as transferred (the bundle file's bytes, or the
        same rendering of a copied page): the idempotency key.
    :param provenance_key: ``copied_from`` or ``imported_from``.
    :param provenance: ``{"scope", "provider", "id", "sha256", "at"}``.
    :param text: the whole page as transferred (frontmatter and body), what a wiki stores
        as the raw source of the page.
    :param origin_sha256: hex sha256 of the page as its source store held it (a folder
        store's note bytes; an export's manifest records it as ``source_sha256``), when
        known: a store that holds exactly that page already has it.
    """

    model_config = _FROZEN

    path: str
    title: str
    frontmatter: dict[str, Any] = Field(default_factory=dict)
    body: str
    sha256: str
    provenance_key: Literal["copied_from", "imported_from"]
    provenance: dict[str, Any]
    text: str
    origin_sha256: str | None = None


class TransferOutcome(StrEnum):
    """What became of one page."""

    #: written, durable now
    STORED = "stored"
    #: accepted by a provider that stores asynchronously (Hindsight): see ``receipt``
    QUEUED = "queued"
    #: already there with the same content hash: nothing written
    DUPLICATE = "duplicate"
    #: its path or title is taken by other content: nothing written
    CONFLICT = "conflict"
    #: a policy hook or the provider refused it: nothing written
    REJECTED = "rejected"
    #: the write may or may not have happened (never resent without asking)
    UNKNOWN = "unknown"
    #: an earlier write of it is ``unknown``; not resent (``--resend-unknown`` resends)
    SKIPPED_UNKNOWN = "skipped-unknown"
    #: a dry run, or a batch refused for another page's conflict: it would be written
    PLANNED = "planned"


class TransferItem(BaseModel):
    """One page's typed receipt.

    :param source: the page as the source names it (store path, memory id, bundle path).
    :param target: where it is (or would be) in the destination, when known.
    :param outcome: :class:`TransferOutcome`.
    :param reason: why, for ``conflict``, ``rejected``, ``unknown``, ``skipped-unknown``.
    :param receipt: the destination's write receipt, when a write was made.
    :param sha256: the page's content hash.
    """

    model_config = _FROZEN

    source: str
    target: str | None = None
    outcome: TransferOutcome
    reason: str | None = None
    receipt: Receipt | None = None
    sha256: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "outcome": self.outcome.value,
            "reason": self.reason,
            "sha256": self.sha256,
            "receipt": self.receipt.to_json() if self.receipt is not None else None,
        }


class TransferReport(BaseModel):
    """The result of a copy, an export or an import: one item per page and the counts.

    :param operation: ``copy``, ``export`` or ``import``.
    :param source: the source (a scope key, or the bundle folder).
    :param destination: the destination (a scope key, or the bundle folder).
    :param dry_run: nothing was written.
    :param items: per-page receipts, in order.
    :param complete: ``False`` when the source could not be read whole (see ``degraded``).
    :param degraded: why the source listing was incomplete.
    """

    model_config = _FROZEN

    operation: Literal["copy", "export", "import"]
    source: str
    destination: str
    dry_run: bool = False
    items: tuple[TransferItem, ...] = ()
    complete: bool = True
    degraded: tuple[str, ...] = ()

    def count(self, *outcomes: TransferOutcome) -> int:
        return sum(1 for i in self.items if i.outcome in outcomes)

    @property
    def summary(self) -> dict[str, int]:
        """``copied`` (stored or queued), ``duplicates``, ``conflicts``, ``rejected``,
        ``unknown`` (unknown or skipped-unknown), ``planned``."""
        o = TransferOutcome
        return {
            "copied": self.count(o.STORED, o.QUEUED),
            "duplicates": self.count(o.DUPLICATE),
            "conflicts": self.count(o.CONFLICT),
            "rejected": self.count(o.REJECTED),
            "unknown": self.count(o.UNKNOWN, o.SKIPPED_UNKNOWN),
            "planned": self.count(o.PLANNED),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "operation": self.operation,
            "source": self.source,
            "destination": self.destination,
            "dry_run": self.dry_run,
            "summary": self.summary,
            "complete": self.complete,
            "degraded": list(self.degraded),
            "items": [i.to_json() for i in self.items],
        }
