"""Deprecated: ``goat_core.search`` is an old path; import from
:mod:`goat_core.filestore.search` instead.

This module was the search index, before goat_core was laid out in packages. It re-exports its
old names unchanged and warns (``DeprecationWarning``) when imported.
"""

import warnings

from goat_core.filestore.search import (
    ENGLISH_STOP_WORDS,
    MAX_QUERY_TERMS,
    SCHEMA_VERSION,
    SNIPPET_CLOSE,
    SNIPPET_OPEN,
    DocInfo,
    FileStat,
    FileStatLike,
    IndexedDoc,
    IndexStats,
    SearchHit,
    SearchIndex,
    SearchResults,
    SyncStats,
    fts_query,
    query_terms,
    search_terms,
)

__all__ = [
    "ENGLISH_STOP_WORDS",
    "MAX_QUERY_TERMS",
    "SCHEMA_VERSION",
    "SNIPPET_CLOSE",
    "SNIPPET_OPEN",
    "DocInfo",
    "FileStat",
    "FileStatLike",
    "IndexStats",
    "IndexedDoc",
    "SearchHit",
    "SearchIndex",
    "SearchResults",
    "SyncStats",
    "fts_query",
    "query_terms",
    "search_terms",
]

__deprecated__ = "goat_core.filestore.search"

warnings.warn(
    "goat_core.search is deprecated; import from goat_core.filestore.search instead",
    DeprecationWarning,
    stacklevel=2,
)
