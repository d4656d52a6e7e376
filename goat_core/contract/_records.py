"""The records a provider returns: write outcomes, recall results, pages, links, and what
plugin loading reports (pydantic v2, frozen).

JSON field names are the ones the CLI prints with ``--json``; ``to_json`` gives that shape.
The truth rules are those of docs/design.md, Writes and outcomes, Reads and truth, and
Browsing and links.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from goat_core.contract._health import RedactedText

_FROZEN = ConfigDict(frozen=True)


class MemoryWrite(BaseModel):
    """What is about to be remembered; policy hooks may return a changed copy.

    :param kind: ``remember`` or ``feedback``.
    :param text: the text, as given.
    :param title: optional title (file providers append to a note of that title).
    :param on: for feedback, the page it is about.
    :param source: who or what remembered it (``"cli"``, ``"model"``, a host name).
    :param tags: optional tags.
    """

    model_config = _FROZEN

    kind: Literal["remember", "feedback"] = "remember"
    text: str
    title: str | None = None
    on: str | None = None
    source: str = "api"
    tags: tuple[str, ...] = ()


class ReceiptStatus(StrEnum):
    STORED = "stored"
    QUEUED = "queued"
    REJECTED = "rejected"
    UNKNOWN = "unknown"
    FAILED = "failed"


class Receipt(BaseModel):
    """The truthful outcome of a write (docs/design.md, Writes and outcomes).

    ``stored``: durable now. ``queued``: accepted, ``operation_id`` names the pending work
    (refresh with ``Provider.refresh``). ``rejected``: refused, ``reason`` says why; nothing
    was written. ``unknown``: the write may or may not have happened. ``failed``: a queued
    operation that the provider reports as failed.
    """

    model_config = _FROZEN

    status: ReceiptStatus
    operation_id: str | None = None
    reason: RedactedText | None = None
    id: str | None = None
    path: str | None = None
    scope: str
    removed: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _truth(self) -> Receipt:
        if self.status is ReceiptStatus.QUEUED and not self.operation_id:
            raise ValueError("a queued receipt needs an operation id")
        if self.status in (ReceiptStatus.REJECTED, ReceiptStatus.FAILED) and not self.reason:
            raise ValueError(f"a {self.status.value} receipt needs a reason")
        return self

    def to_json(self) -> dict[str, Any]:
        """The CLI shape: ``{"status","operation_id","reason","id","path","scope"}``."""
        return {
            "status": self.status.value,
            "operation_id": self.operation_id,
            "reason": self.reason,
            "id": self.id,
            "path": self.path,
            "scope": self.scope,
        }


class RecallItem(BaseModel):
    """One recalled item. ``score``: higher is better (provider-relative, not comparable
    across providers). ``snippet``: a short extract containing the match, plain text (no
    highlight markup). ``snippet_spans``: ``(start, end)`` character offsets in ``snippet`` of
    the matched words (empty when the provider does not say). ``text``: the fuller text a
    host may quote into a prompt (may equal the snippet)."""

    model_config = _FROZEN

    id: str
    title: str
    path: str | None = None
    score: float
    snippet: str
    snippet_spans: tuple[tuple[int, int], ...] = ()
    text: str | None = None
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "path": self.path,
            "score": self.score,
            "snippet": self.snippet,
            "snippet_spans": [list(span) for span in self.snippet_spans],
        }

    @model_validator(mode="after")
    def _spans_in_snippet(self) -> RecallItem:
        """Spans are ordered, non-empty, non-overlapping and inside the snippet."""
        end = 0
        for start, stop in self.snippet_spans:
            if not end <= start < stop <= len(self.snippet):
                raise ValueError(
                    f"snippet_spans {list(self.snippet_spans)} do not fit a snippet of "
                    f"{len(self.snippet)} characters (ordered, non-overlapping, inside it)"
                )
            end = stop
        return self


class RecallResult(BaseModel):
    """Ranked recall results. ``complete`` is ``False`` when more matched than returned or a
    part of the store could not be searched (each reason in ``degraded``)."""

    model_config = _FROZEN

    scope: str
    items: tuple[RecallItem, ...] = ()
    complete: bool = True
    degraded: tuple[str, ...] = ()
    next_cursor: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "items": [i.to_json() for i in self.items],
            "complete": self.complete,
            "degraded": list(self.degraded),
        }


class Reflection(BaseModel):
    """An answer reasoned over memory, with the items it was based on."""

    model_config = _FROZEN

    scope: str
    text: str
    based_on: tuple[RecallItem, ...] = ()
    degraded: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "text": self.text,
            "based_on": [i.to_json() for i in self.based_on],
            "degraded": list(self.degraded),
        }


class PageSummary(BaseModel):
    """A page in a list. For file providers ``id`` and ``path`` are the POSIX path relative to
    the store root, with ``.md``."""

    model_config = _FROZEN

    id: str
    title: str
    path: str | None = None
    etag: str | None = None
    updated: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "path": self.path}


class PageList(BaseModel):
    """One page of a page listing. ``next_cursor`` is opaque; ``complete`` is ``True`` only when
    this is the last page and nothing was skipped."""

    model_config = _FROZEN

    items: tuple[PageSummary, ...] = ()
    next_cursor: str | None = None
    complete: bool = True
    degraded: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "items": [i.to_json() for i in self.items],
            "next_cursor": self.next_cursor,
            "complete": self.complete,
            "degraded": list(self.degraded),
        }


class Page(BaseModel):
    """One page. ``etag`` is a content hash for optimistic concurrency; ``provenance`` says where
    the content came from (sources, who remembered it).

    ``frontmatter_text`` is, for a store that keeps pages as files, the frontmatter block
    exactly as stored (both fences; ``""`` when the page has none), so ``frontmatter_text +
    body`` is the stored note byte for byte and a copy or export keeps YAML as written (a
    date stays a date); ``None`` where the store keeps no such text. It is not part of
    :meth:`to_json`: ``frontmatter`` is the page's frontmatter for display.
    """

    model_config = _FROZEN

    id: str
    title: str
    path: str | None = None
    frontmatter: dict[str, Any] = Field(default_factory=dict)
    body: str
    etag: str | None = None
    provenance: dict[str, Any] = Field(default_factory=dict)
    frontmatter_text: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "path": self.path,
            "frontmatter": self.frontmatter,
            "body": self.body,
            "etag": self.etag,
            "provenance": self.provenance,
        }

    def summary(self) -> PageSummary:
        return PageSummary(id=self.id, title=self.title, path=self.path, etag=self.etag)


class LinkResolution(StrEnum):
    """How a link's target was found (Obsidian rules; see ``goat_core.filestore``).

    ``exact``: a folder-qualified path matched. ``name``: a bare name matched one file by file
    name. ``ambiguous``: a bare name matched several files; the one Obsidian picks is the
    target. ``missing``: no note (Obsidian shows it unresolved). ``attachment``: a link to a
    non-Markdown file. ``self``: a same-note heading or block link (``[[#Heading]]``).
    """

    EXACT = "exact"
    NAME = "name"
    AMBIGUOUS = "ambiguous"
    MISSING = "missing"
    ATTACHMENT = "attachment"
    SELF = "self"


class Link(BaseModel):
    """One link as written in a page.

    :param raw: the link exactly as written (``[[Note|alias]]``, ``[t](a%20b.md)``).
    :param kind: ``wikilink`` or ``markdown``.
    :param target_text: the link target as written, decoded, without heading or block.
    :param target: the resolved page id; for ``attachment`` the attachment's store path (never a
        page node); ``None`` when missing.
    :param line: 1-based line number in the body.
    """

    model_config = _FROZEN

    raw: str
    kind: Literal["wikilink", "markdown"]
    target_text: str
    target: str | None = None
    alias: str | None = None
    heading: str | None = None
    block: str | None = None
    embed: bool = False
    line: int
    resolution: LinkResolution = LinkResolution.MISSING


class Edge(BaseModel):
    """A map edge; ``target`` is ``None`` for a missing note. ``raw`` is the link as written."""

    model_config = _FROZEN

    source: str
    target: str | None
    raw: str
    resolution: LinkResolution

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "raw": self.raw,
            "resolution": self.resolution.value,
        }


class LinkMap(BaseModel):
    """All pages as nodes and every link as an edge."""

    model_config = _FROZEN

    nodes: tuple[PageSummary, ...] = ()
    edges: tuple[Edge, ...] = ()
    degraded: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": [n.to_json() for n in self.nodes],
            "edges": [e.to_json() for e in self.edges],
        }


class Connections(BaseModel):
    """A page's outgoing links and its backlinks (edges whose target is this page)."""

    model_config = _FROZEN

    page: PageSummary
    outgoing: tuple[Link, ...] = ()
    backlinks: tuple[Edge, ...] = ()
    #: why links are missing (``"<n> links hidden by policy"``); empty when whole.
    degraded: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """``{"page", "outgoing", "backlinks"}``, plus ``"degraded"`` when links were left
        out."""
        out: dict[str, Any] = {
            "page": self.page.to_json(),
            "outgoing": [link.model_dump(mode="json") for link in self.outgoing],
            "backlinks": [e.to_json() for e in self.backlinks],
        }
        if self.degraded:
            out["degraded"] = list(self.degraded)
        return out


class PluginLoadFailure(BaseModel):
    """A plugin that failed to load: ``error`` is ``Type: message``, ``traceback`` the full
    formatted traceback, ``kind`` one of ``import``, ``register``, ``duplicate``,
    ``incompatible``, ``hook``."""

    model_config = _FROZEN

    plugin: str
    distribution: str | None = None
    version: str | None = None
    value: str | None = None
    kind: str
    error: str
    traceback: str | None = None


class PluginInfo(BaseModel):
    """A loaded plugin, as ``goat plugins`` lists it."""

    model_config = _FROZEN

    name: str
    distribution: str | None = None
    version: str | None = None
    builtin: bool = False
    hooks: tuple[str, ...] = ()
    providers: tuple[str, ...] = ()
    capabilities: dict[str, list[str]] = Field(default_factory=dict)
