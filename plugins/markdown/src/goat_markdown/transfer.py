"""Copies and imports into a markdown store: the ``import_pages`` operation
(:data:`goat_core.contract.IMPORT_OPERATION`; docs/design.md, Copy, export and import).

Each page is written at its own path (the source's store path, or the bundle file's path)
as the transferred text with ``copied_from`` / ``imported_from`` set in its frontmatter,
every other byte kept. The whole batch is planned and written under the store lock; a page
whose content hash a note's provenance already carries is a duplicate, a taken path a
conflict (``rename``: the next free ``<stem>-<n>.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from goat_core.contract import (
    PolicyGate,
    ProviderOperation,
    Receipt,
    TransferItem,
    TransferPage,
)
from goat_core.filestore import (
    MISSING_ETAG,
    ImportPlan,
    atomic_write,
    contain,
    folder_import_operation,
    import_into_store,
)

if TYPE_CHECKING:
    from goat_markdown.provider import MarkdownProvider

__all__ = ["markdown_operations"]


def _import(
    provider: MarkdownProvider,
    gate: PolicyGate,
    pages: Sequence[TransferPage],
    dry_run: bool,
    rename: bool,
    progress: Callable[[int, int], None] | None,
) -> list[TransferItem]:
    with provider._lock:
        walk, _stats = provider._sync_index(watch=False)
        scan = provider._scan()

        def write(plan: ImportPlan) -> Receipt:
            assert plan.target is not None and plan.text is not None
            path = contain(provider.root, plan.target)
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, plan.text.encode("utf-8"), expected_etag=MISSING_ETAG)
            provider._index_note(plan.target)
            return provider._receipt(plan.target)

        return import_into_store(
            provider,
            gate,
            pages,
            notes=scan.notes,
            walk=walk,
            dry_run=dry_run,
            rename=rename,
            progress=progress,
            write=write,
        )


def markdown_operations(provider: MarkdownProvider) -> list[ProviderOperation]:
    """``import_pages(pages, *, dry_run, rename, resend_unknown, progress)`` (write)."""
    return [folder_import_operation(provider, _import)]
