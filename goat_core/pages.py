"""Deprecated: ``goat_core.pages`` is an old path; import from :mod:`goat_core.filestore`
instead.

This module was the pages helpers of file-based stores, before goat_core was laid out in
packages. It re-exports its old names unchanged and warns (``DeprecationWarning``) when
imported.
"""

import warnings

from goat_core.filestore import (
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
)

__all__ = [
    "MARKUP_CHARS",
    "TITLE_CHARS",
    "TITLE_WORDS",
    "RECALL_TEXT_CHARS",
    "PageRef",
    "StoredNote",
    "ambiguous_pages",
    "check_list_limit",
    "check_recall_args",
    "checked_text",
    "decode_cursor",
    "degraded_reasons",
    "encode_cursor",
    "file_stem",
    "fold",
    "folder_health",
    "generated_title",
    "index_loader",
    "index_note",
    "indexed_doc",
    "nfc",
    "now_utc",
    "open_search_index",
    "page_order",
    "page_summaries",
    "page_window",
    "read_note",
    "recall_item",
    "refresh_notes",
    "resolve_page_ref",
    "str_list",
    "to_page",
]

__deprecated__ = "goat_core.filestore"

warnings.warn(
    "goat_core.pages is deprecated; import from goat_core.filestore instead",
    DeprecationWarning,
    stacklevel=2,
)
