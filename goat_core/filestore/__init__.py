"""The optional toolkit for providers that keep a folder of Markdown files (markdown, wiki).

Nothing here is part of the provider contract: a provider built on another backend never
imports it. Each piece is written once for every file-based provider:

- files (``_files``): store roots, walking a store, sweeping dead writers' temp files, file
  names for titles; with them, :mod:`goat_core.fileio`'s containment of user paths, atomic
  writes and the cross-process store lock, re-exported here;
- frontmatter (``_frontmatter``): parsing and byte-preserving edits of YAML frontmatter;
- links (``_links``): Obsidian link parsing and resolution, link maps and connections;
- pages (``_pages``): reading notes, resolving page references, listing cursors, titles, and
  the glue between notes and the search index;
- transfer (``_transfer``): planning and writing copied or imported pages
  (:func:`import_into_folder`, behind a provider's ``import_pages`` operation);
- the folder store (``_store``): :class:`FolderStoreProvider`, the base class of a provider
  keeping one folder of Markdown files per scope, with :class:`FolderStoreSettings` and
  :data:`StoreRoot` for its ``root`` setting (loaded on first use: a plugin's settings module
  imports this package, and the base pulls in the search index);
- embedding (``_embedding``): who embeds a store's notes for semantic recall: the embedding
  lock, and :class:`BackgroundEmbedding`, the store's own thread in a long-lived host;
- :mod:`goat_core.filestore.search`: the full-text index (SQLite FTS5). It is a package of
  its own and not re-exported here, so importing this package never loads ``sqlite3``.
"""

import typing as _typing

from goat_core.fileio import (
    MISSING_ETAG,
    RESERVED_NAMES,
    StoreLock,
    atomic_write,
    contain,
    current_etag,
    etag,
    fsync_dir,
    is_reserved_name,
    rename_exchange_supported,
)
from goat_core.filestore._embedding import BackgroundEmbedding
from goat_core.filestore._files import (
    NoteFile,
    WalkResult,
    safe_title_filename,
    sweep_temp_files,
    validate_store_root,
    walk_notes,
)
from goat_core.filestore._frontmatter import (
    FrontmatterError,
    ParsedNote,
    UneditableFrontmatter,
    append_entry,
    drop_keys,
    format_scalar,
    jsonable,
    parse_note,
    render_note,
    set_keys,
)
from goat_core.filestore._links import (
    LinkIndex,
    LinkResolver,
    ParsedLink,
    build_link_map,
    connections,
    parse_links,
)
from goat_core.filestore._pages import (
    MARKUP_CHARS,
    RECALL_TEXT_CHARS,
    TITLE_CHARS,
    TITLE_WORDS,
    PageRef,
    StoredNote,
    ambiguous_pages,
    check_list_limit,
    check_recall_args,
    checked_text,
    date_words,
    decode_cursor,
    degraded_reasons,
    encode_cursor,
    file_stem,
    fold,
    folder_health,
    generated_title,
    index_loader,
    index_note,
    indexed_doc,
    nfc,
    now_utc,
    open_search_index,
    page_order,
    page_summaries,
    page_window,
    read_note,
    recall_item,
    refresh_notes,
    resolve_page_ref,
    str_list,
    to_page,
    unsearched_reasons,
    withheld,
)
from goat_core.filestore._transfer import (
    ImportPlan,
    folder_import_operation,
    import_into_folder,
    import_into_store,
    note_text,
    provenance_hashes,
)
from goat_core.filestore._worker import StoreWorker

if _typing.TYPE_CHECKING:
    from goat_core.filestore._store import (
        EmbeddingElsewhere,
        FolderStoreProvider,
        FolderStoreSettings,
        StoreRoot,
        absolute_store_root,
    )

__all__ = [
    "MARKUP_CHARS",
    "MISSING_ETAG",
    "RECALL_TEXT_CHARS",
    "RESERVED_NAMES",
    "TITLE_CHARS",
    "TITLE_WORDS",
    "BackgroundEmbedding",
    "EmbeddingElsewhere",
    "FolderStoreProvider",
    "FolderStoreSettings",
    "FrontmatterError",
    "ImportPlan",
    "LinkIndex",
    "LinkResolver",
    "NoteFile",
    "PageRef",
    "ParsedLink",
    "ParsedNote",
    "StoreLock",
    "StoreRoot",
    "StoreWorker",
    "StoredNote",
    "UneditableFrontmatter",
    "WalkResult",
    "absolute_store_root",
    "ambiguous_pages",
    "append_entry",
    "atomic_write",
    "build_link_map",
    "check_list_limit",
    "check_recall_args",
    "checked_text",
    "connections",
    "contain",
    "current_etag",
    "date_words",
    "decode_cursor",
    "degraded_reasons",
    "drop_keys",
    "encode_cursor",
    "etag",
    "file_stem",
    "fold",
    "folder_health",
    "folder_import_operation",
    "format_scalar",
    "fsync_dir",
    "generated_title",
    "import_into_folder",
    "import_into_store",
    "index_loader",
    "index_note",
    "indexed_doc",
    "is_reserved_name",
    "jsonable",
    "nfc",
    "note_text",
    "now_utc",
    "open_search_index",
    "page_order",
    "page_summaries",
    "page_window",
    "parse_links",
    "parse_note",
    "provenance_hashes",
    "read_note",
    "recall_item",
    "refresh_notes",
    "rename_exchange_supported",
    "render_note",
    "resolve_page_ref",
    "safe_title_filename",
    "set_keys",
    "str_list",
    "sweep_temp_files",
    "to_page",
    "unsearched_reasons",
    "validate_store_root",
    "walk_notes",
    "withheld",
]

_LAZY = frozenset(
    {
        "EmbeddingElsewhere",
        "FolderStoreProvider",
        "FolderStoreSettings",
        "StoreRoot",
        "absolute_store_root",
    }
)


def __getattr__(name: str) -> _typing.Any:
    if name in _LAZY:
        from goat_core.filestore import _store

        return getattr(_store, name)
    raise AttributeError(f"module 'goat_core.filestore' has no attribute {name!r}")
