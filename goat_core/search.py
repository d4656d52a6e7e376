"""Former home of the search index, now :mod:`goat_core.filestore.search`: re-exports the
names this module had (import them from :mod:`goat_core.filestore.search`)."""

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
