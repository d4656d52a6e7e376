"""Copies and imports into a markdown store: the ``import_pages`` operation
(:data:`goat_core.contract.IMPORT_OPERATION`; docs/design.md, Copy, export and import).

Each page is written at its own path (the source's store path, or the bundle file's path)
as the transferred text with ``copied_from`` / ``imported_from`` set in its frontmatter,
every other byte kept. The whole batch is planned and written under the store lock; a page
whose content hash a note's provenance already carries is a duplicate, a taken path a
conflict (``rename``: the next free ``<stem>-<n>.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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

__all__ = ["ImportStore", "markdown_operations"]


@dataclass(frozen=True)
class ImportStore:
    """What an import needs of a markdown store, handed over by the provider.

    :param root: the store folder. :param lock: the store lock (held for the batch).
    :param current: ``() -> (walk, notes)``: the index brought up to date, and its notes.
    :param index_note: ``(rel) -> ...``: index one written note (a store path).
    :param receipt: ``(rel) -> Receipt``: the receipt of a written note.
    """

    root: Path
    lock: AbstractContextManager[Any]
    current: Callable[[], tuple[Any, Iterable[Any]]]
    index_note: Callable[[str], object]
    receipt: Callable[[str], Receipt]


def markdown_operations(provider: Any, store: ImportStore) -> list[ProviderOperation]:
    """``import_pages(pages, *, dry_run, rename, resend_unknown, progress)`` (write), run on
    ``provider``'s store worker (a :class:`~goat_core.filestore.FolderStoreProvider`)."""

    def do_import(
        provider: Any,
        gate: PolicyGate,
        pages: Sequence[TransferPage],
        dry_run: bool,
        rename: bool,
        progress: Callable[[int, int], None] | None,
    ) -> list[TransferItem]:
        with store.lock:
            walk, notes = store.current()

            def write(plan: ImportPlan) -> Receipt:
                assert plan.target is not None and plan.text is not None
                path = contain(store.root, plan.target)
                path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(path, plan.text.encode("utf-8"), expected_etag=MISSING_ETAG)
                store.index_note(plan.target)
                return store.receipt(plan.target)

            return import_into_store(
                provider,
                gate,
                pages,
                notes=notes,
                walk=walk,
                dry_run=dry_run,
                rename=rename,
                progress=progress,
                write=write,
            )

    return [folder_import_operation(provider, do_import)]
