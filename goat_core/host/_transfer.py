"""Moving knowledge on purpose: the one-way copy between scopes, export of a scope as an OKF
bundle and import of one (docs/design.md, Copy, export and import).

These are :class:`~goat_core.host.MemoryHost` methods only: never on a
:class:`~goat_core.host.MemoryContext`, a model tool or ``goat serve``, because moving
knowledge between scopes is the user's explicit act. Each opens one read side and one write
side and nothing else:

- reads go through the source context (``list_pages``, ``get_page``), so
  ``goat_filter_browse`` sees every page shown; a bundle is read from its folder;
- writes go through the destination context's ``import_pages`` provider operation
  (:data:`~goat_core.contract.IMPORT_OPERATION`) with its policy gate, so
  ``goat_inspect_remember`` sees every page stored; an export writes only inside its folder.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from goat_core.contract import (
    COPIED_FROM,
    IMPORT_OPERATION,
    IMPORTED_FROM,
    Capability,
    Page,
    PageSummary,
    Scope,
    TransferItem,
    TransferOutcome,
    TransferPage,
    TransferReport,
)
from goat_core.errors import BadInput, GoatError, NotSupported
from goat_core.fileio import is_utf8, shown_name
from goat_core.host._context import MemoryContext
from goat_core.host._hostbase import HostBase
from goat_core.host._okf import (
    Skipped,
    bundle_path,
    check_target,
    clear_stale_staging,
    manifest_for,
    now_iso,
    read_bundle,
    render_page,
    sha256_hex,
    stored_text,
    write_bundle,
)

Progress = Callable[[int, int], None]


class SkippedFile(BaseModel):
    """A bundle file (or folder, ending ``/``) an import did not read, and why; ``page``:
    a page-shaped file skipped for a reason the user can fix (the import is not complete)."""

    model_config = ConfigDict(frozen=True)

    path: str
    reason: str
    page: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "reason": self.reason, "page": self.page}


class BundleReport(TransferReport):
    """The report of an export or an import: a :class:`TransferReport` plus, for an
    import, every file of the folder not read (``skipped``), and ``notes`` (a staging
    folder an interrupted export left, removed)."""

    skipped: tuple[SkippedFile, ...] = ()
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data = super().to_json()
        if self.operation == "import":
            data["skipped"] = [s.to_json() for s in self.skipped]
        data["notes"] = list(self.notes)
        return data


def _skipped(items: Sequence[Skipped]) -> tuple[SkippedFile, ...]:
    return tuple(SkippedFile(path=s.path, reason=s.reason, page=s.page) for s in items)


#: Pages asked for per listing call (every provider that lists pages accepts 100).
_LIST_BATCH = 100


def _same_store(a: MemoryContext, b: MemoryContext) -> bool:
    """Whether two contexts reach one store: the same shared bank (its label names server
    and bank), the same folder root, or the same provider with the same store settings."""
    if a.spec is None or b.spec is None or a.binding is None or b.binding is None:
        return False
    if a.spec.name != b.spec.name:
        return False
    if a.spec.supports(Capability.SHARED_BANK) and a.label == b.label:
        return True
    root_a, root_b = (getattr(c._provider, "root", None) for c in (a, b))
    if isinstance(root_a, Path) and isinstance(root_b, Path):
        return root_a.resolve() == root_b.resolve()
    settings_a, settings_b = (
        {k: v for k, v in binding.settings.items() if v not in (None, "")}
        for binding in (a.binding, b.binding)
    )
    return bool(settings_a) and settings_a == settings_b


def _fold(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold()


def _unnamed(item: TransferItem, hidden: Sequence[PageSummary]) -> TransferItem:
    """``item`` without naming a page the browse policy hides (docs/design.md, Policy
    path): a ``duplicate`` of one would confirm its content and becomes ``rejected``, a
    ``conflict`` with one loses its target; a reason quoting one's path or id says "a page
    hidden by policy" instead."""
    names = {n for p in hidden for n in (p.path, p.id) if n}
    update: dict[str, Any] = {}
    if item.target is not None and _fold(item.target) in {_fold(n) for n in names}:
        if item.outcome is TransferOutcome.DUPLICATE:
            update = {
                "outcome": TransferOutcome.REJECTED,
                "reason": "a page hidden by policy is in the way; nothing was written",
            }
        elif item.outcome is TransferOutcome.CONFLICT:
            update = {"reason": "a page hidden by policy holds this path; nothing was written"}
        if update:
            update["target"] = None
    reason = update.get("reason", item.reason)
    if reason is not None and "reason" not in update:
        for name in sorted(names):
            reason = reason.replace(repr(name), "a page hidden by policy")
        if reason != item.reason:
            update["reason"] = reason
    return item.model_copy(update=update) if update else item


class HostTransfer(HostBase):
    """Copy, export and import (mixed into :class:`~goat_core.host.MemoryHost`)."""

    async def _opened(self, scope: Scope) -> MemoryContext:
        context = self._context(scope)
        if context._lease is not None:  # a remote binding: connect (or retry) first
            await self._before_turn(scope)
        return context

    async def _all_pages(self, context: MemoryContext) -> tuple[list[PageSummary], bool, list[str]]:
        """Every page ``goat_filter_browse`` shows, the listing's truth and its reasons."""
        items: list[PageSummary] = []
        complete = True
        degraded: list[str] = []
        cursor: str | None = None
        while True:
            listing = await context.list_pages(limit=_LIST_BATCH, cursor=cursor)
            items.extend(listing.items)
            degraded.extend(d for d in listing.degraded if d not in degraded)
            cursor = listing.next_cursor
            if cursor is None:
                complete = complete and listing.complete
                return items, complete, degraded
            if listing.degraded:
                complete = False

    async def _import(
        self,
        destination: MemoryContext,
        pages: list[TransferPage],
        *,
        dry_run: bool,
        rename: bool,
        resend_unknown: bool,
        progress: Progress | None,
    ) -> list[TransferItem]:
        result = await destination.run_operation(
            IMPORT_OPERATION,
            pages,
            dry_run=dry_run,
            rename=rename,
            resend_unknown=resend_unknown,
            progress=progress,
        )
        items = list(result)
        if len(items) != len(pages) or not all(isinstance(i, TransferItem) for i in items):
            raise GoatError(
                f"provider {destination.spec.name if destination.spec else '?'!r} answered "
                f"{IMPORT_OPERATION} with {len(items)} receipts for {len(pages)} pages"
            )
        hidden = await destination._hidden_now()
        return [_unnamed(item, hidden) for item in items] if hidden else items

    # -- copy -------------------------------------------------------------------------------
    async def copy_pages(
        self,
        refs: Sequence[str],
        *,
        source: Scope,
        destination: Scope,
        rename: bool = False,
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> TransferReport:
        """Copy the pages ``refs`` names from ``source`` into ``destination``, one way.

        The source is only read (``get_page``, through ``goat_filter_browse``). Each page
        lands at its own path with ``copied_from`` provenance (``scope``, ``provider``,
        ``id``, ``sha256``, ``at``); nothing is overwritten: a taken path is a ``conflict``
        and, without ``rename``, the whole copy writes nothing. A page copied before with
        the same content is a ``duplicate``.

        :raises BadInput: no page named, the same scope, the same store, or a page whose
            name is not UTF-8.
        :raises NotFound, Ambiguous: a reference the source does not resolve to one page.
        :raises NotSupported: the destination's provider takes no copies.
        """
        if isinstance(refs, str) or not refs:
            raise BadInput("name at least one page to copy")
        if not isinstance(source, Scope) or not isinstance(destination, Scope):
            raise TypeError("copy_pages takes a source Scope and a destination Scope")
        if source == destination:
            raise BadInput(
                f"source and destination are both {source.key}: a copy goes to another scope"
            )
        src = await self._opened(source)
        dst = await self._opened(destination)
        if _same_store(src, dst):
            raise BadInput(
                f"{source.key} and {destination.key} use the same store ({src.label}): "
                "copying would duplicate pages in place"
            )
        provider = src.spec.name if src.spec is not None else "?"
        at = now_iso()
        pages: list[TransferPage] = []
        seen: set[str] = set()
        for ref in refs:
            page = await src.get_page(ref)
            if page.id in seen:
                continue
            if not is_utf8(page.id):  # lone surrogates: no YAML or JSON holds it
                raise BadInput(
                    f"{shown_name(page.id)}: its name is not UTF-8, so its copy could not "
                    "record where it came from; rename it first; nothing was copied"
                )
            seen.add(page.id)
            pages.append(self._transfer_page(page, COPIED_FROM, source.key, provider, at))
        items = await self._import(
            dst, pages, dry_run=dry_run, rename=rename, resend_unknown=False, progress=progress
        )
        return TransferReport(
            operation="copy",
            source=source.key,
            destination=destination.key,
            dry_run=dry_run,
            items=tuple(items),
        )

    @staticmethod
    def _transfer_page(
        page: Page,
        key: Literal["copied_from", "imported_from"],
        scope: str,
        provider: str,
        at: str,
    ) -> TransferPage:
        """A source page as transferred: its own frontmatter (as written, where the store
        keeps the page's text) without earlier provenance, and its body byte for byte."""
        own = {k: v for k, v in page.frontmatter.items() if k not in (COPIED_FROM, IMPORTED_FROM)}
        text = render_page(page, okf=False, drop=(COPIED_FROM, IMPORTED_FROM))
        digest = sha256_hex(text)
        held = stored_text(page)
        return TransferPage(
            path=bundle_path(page),
            title=page.title,
            frontmatter=own,
            body=page.body,
            sha256=digest,
            provenance_key=key,
            provenance={
                "scope": scope,
                "provider": provider,
                "id": page.id,
                "sha256": digest,
                "at": at,
            },
            text=text,
            origin_sha256=sha256_hex(held) if held is not None else None,
        )

    # -- export -----------------------------------------------------------------------------
    async def export_bundle(
        self,
        scope: Scope,
        directory: Path,
        *,
        force: bool = False,
        progress: Progress | None = None,
    ) -> TransferReport:
        """Write ``scope``'s pages into ``directory`` as an OKF bundle: one ``.md`` per page
        at its store path (its own frontmatter kept, ``type``, ``title`` and ``timestamp``
        added where missing, the body byte for byte, links as written) plus
        ``goat-export.json``. Every page is read before the first file is written.

        :returns: ``complete=False`` with ``degraded`` reasons when the listing was not
            whole (a page hidden by policy, an unreadable note, a bank that changed while
            paging); the manifest records the same.
        The bundle is staged beside ``directory`` and renamed into place whole
        (:func:`~goat_core.host._okf.write_bundle`); staging folders an interrupted export
        of ``directory`` left are removed first, each named in ``notes``.

        :raises BadInput: ``directory`` is not empty (without ``force``) or not a folder.
        :raises NotSupported: the provider does not list pages.
        """
        directory = Path(directory)
        notes = clear_stale_staging(directory, force=force)
        check_target(directory, force)
        context = await self._opened(scope)
        if context.spec is not None and not context.spec.supports(Capability.PAGES):
            raise NotSupported(f"provider {context.spec.name!r} does not list pages: no export")
        summaries, complete, degraded = await self._all_pages(context)
        default_type = (
            "memory" if context.spec and context.spec.supports(Capability.SHARED_BANK) else "note"
        )
        files: list[tuple[str, str]] = []
        entries: list[dict[str, Any]] = []
        items: list[TransferItem] = []
        taken: dict[str, str] = {}
        for done, summary in enumerate(summaries, start=1):
            page = await context.get_page(summary.id)
            rel = bundle_path(page)
            if not is_utf8(rel):  # lone surrogates: no UTF-8 manifest can name it
                degraded.append(
                    f"{shown_name(rel)}: not exported, its name is not UTF-8, which a "
                    "bundle's manifest cannot hold"
                )
                complete = False
                continue
            twin = taken.setdefault(unicodedata.normalize("NFC", rel).casefold(), rel)
            if twin != rel:
                degraded.append(
                    f"{rel}: differs only in case or Unicode form from {twin}; not exported"
                )
                complete = False
                continue
            text = render_page(page, updated=summary.updated, default_type=default_type)
            digest = sha256_hex(text)
            files.append((rel, text))
            entry: dict[str, Any] = {"path": rel, "id": page.id, "sha256": digest}
            held = stored_text(page)
            if held is not None:
                entry["source_sha256"] = sha256_hex(held)
            entries.append(entry)
            items.append(
                TransferItem(
                    source=page.id, target=rel, outcome=TransferOutcome.STORED, sha256=digest
                )
            )
            if progress is not None:
                progress(done, len(summaries))
        manifest = manifest_for(
            scope=scope.key,
            provider=context.spec.name if context.spec else "?",
            label=context.label,
            pages=entries,
            complete=complete,
            degraded=degraded,
        )
        write_bundle(directory, files, manifest, force=force)
        return BundleReport(
            operation="export",
            source=scope.key,
            destination=str(directory),
            items=tuple(items),
            complete=complete,
            degraded=tuple(degraded),
            notes=tuple(notes),
        )

    # -- import -----------------------------------------------------------------------------
    async def import_bundle(
        self,
        directory: Path,
        scope: Scope,
        *,
        rename: bool = False,
        dry_run: bool = False,
        resend_unknown: bool = False,
        progress: Progress | None = None,
    ) -> TransferReport:
        """Import an OKF bundle (or any folder of Markdown files) into ``scope``.

        The whole bundle is validated first (:func:`goat_core.host._okf.read_bundle`);
        a bad one is refused before anything is written. Each page carries
        ``imported_from`` provenance; importing twice adds nothing (content hash); a taken
        path is a ``conflict`` (``rename``: the next free name).

        :returns: a :class:`BundleReport` naming every file not read (``skipped``, with
            why); ``complete=False`` (``degraded`` says which) when a page-shaped file was
            skipped for a reason the user can fix (a ``.markdown`` name).
        :raises BadInput: an interrupted export (a staging folder, one beside or inside the
            folder): its pages may be partial.

        :raises BadInput: a refused bundle, naming its problems.
        :raises NotFound: no such folder.
        :raises NotSupported: the provider takes no imports.
        """
        bundle = read_bundle(Path(directory))
        context = await self._opened(scope)
        at = now_iso()
        pages = [
            TransferPage(
                path=f.path,
                title=f.title,
                frontmatter=f.frontmatter,
                body=f.body,
                sha256=f.sha256,
                provenance_key=IMPORTED_FROM,
                provenance={
                    "scope": bundle.source_scope,
                    "provider": bundle.source_provider,
                    "id": f.source_id,
                    "sha256": f.sha256,
                    "at": at,
                },
                text=f.text,
                origin_sha256=f.origin_sha256,
            )
            for f in bundle.files
        ]
        items = await self._import(
            context,
            pages,
            dry_run=dry_run,
            rename=rename,
            resend_unknown=resend_unknown,
            progress=progress,
        )
        return BundleReport(
            operation="import",
            source=str(bundle.root),
            destination=scope.key,
            dry_run=dry_run,
            items=tuple(items),
            complete=bundle.complete,
            degraded=tuple(f"{s.path}: {s.reason}" for s in bundle.skipped if s.page),
            skipped=_skipped(bundle.skipped),
        )
