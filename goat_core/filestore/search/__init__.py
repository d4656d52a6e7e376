"""Full-text search index for file-based stores (SQLite FTS5 from the standard library).

One :class:`SearchIndex` is one SQLite file kept under the GOAT home (``GoatHome.index_path``),
never inside the notes folder. It follows the files incrementally: :meth:`SearchIndex.sync`
takes the store's current ``(path, mtime_ns, size)`` list, loads only what changed, and drops
rows for files that are gone (a rename is a delete plus an add). The compare itself is
proportional to what changed: a digest per folder of the listing tells which folders to compare
file by file (see :meth:`SearchIndex.sync`).

Whole notes are indexed however long, in five columns: ``title``, ``aliases``, ``meta``
(description, tags), ``extra`` (other frontmatter values) and ``body``.

Queries are user text, never FTS5 query syntax. The text is split into terms here (runs of
letters, digits and combining marks, the characters SQLite's ``unicode61`` tokenizer keeps) and
every term is quoted as an FTS5 string, so ``status: done``, ``retry OR``, ``a*``, ``"x"``,
``-x``, ``a/b``, ``(x)`` and ``NEAR`` never raise and find the literal words. English
stop-words (:data:`ENGLISH_STOP_WORDS`: ``how``, ``do``, ``I``, ``to``, ``a`` ...) are dropped
from a query that has other terms (:func:`search_terms`); a query of stop-words alone keeps
them. Terms are Porter-stemmed on both sides (FTS5 ``porter`` tokenizer), so ``vaults`` finds
``vault`` and ``deleted`` finds ``delete``. A query with no terms (empty, whitespace or only
punctuation) returns no hits. Only the first :data:`MAX_QUERY_TERMS` distinct terms are
searched; a longer query comes back ``complete=False`` with the cut named in ``degraded``.

Ranking, in two steps:

1. Candidates: the best :data:`RERANK_DEPTH` notes containing **every** term by FTS5 ``bm25``
   (columns weighted by :data:`COLUMN_WEIGHTS`); when fewer than ``limit`` notes contain them
   all and the query has several terms, also the best notes containing **any** term.
2. Every candidate is scored again with BM25F (see ``_Scorer``): an idf that is always
   positive (FTS5's own is clamped to about 0 for a term in more than half the notes),
   per-column length normalisation, a bonus for query terms in the title (more when the title
   is little else) or in an alias, one for query terms that follow each other in the note as
   in the query (proximity), and coordination (the score times the share of the query's terms
   the note contains, so notes with every term normally lead). Ties are broken by the number
   of query terms in the title, then by path.

Scores are above 0 for every matching note and comparable within one result list only.

Text folding: NFKC, case folding and diacritics removal (``unicode61 remove_diacritics 2``, so
``cafe`` finds ``café``). Scripts written without spaces (Han, Hiragana, Katakana, Hangul,
Bopomofo, Thai, Lao, Khmer, Myanmar) are split here into overlapping character pairs, both in
notes and in queries, so a 2-character query such as ``接続`` or ``数据`` finds the notes that
contain it inside a longer run (the default tokenizer would treat the run as one token and the
trigram tokenizer finds nothing for 2 characters). A 1-character query matches as a prefix.

Storage: the FTS5 table is contentless (only the inverted index); the original title, metadata
and the zlib-compressed body are kept in a plain table for snippets, which are cut from the
original text as plain text plus the spans of every matched word (the term or a word with
its stem; never a dropped stop-word), a :class:`Snippet`; :func:`highlight` wraps the spans in
:data:`SNIPPET_OPEN` / :data:`SNIPPET_CLOSE` (``==``, Obsidian's highlight, which cannot be
mistaken for a wikilink's brackets and leaves the note's own ``**bold**`` readable around it).
Each file's title, own id and problem (e.g. unparsable frontmatter) sit in a covering index
with its stat, so :meth:`SearchIndex.documents` and :meth:`SearchIndex.problems` list a
store without reading its bodies or its files.

Concurrency: several processes may use one index file. It runs in WAL mode with a busy timeout;
a write waits at most ``busy_timeout_s`` for the lock and then raises
:class:`~goat_core.errors.ProviderUnavailable` naming the index. Only SQLite's own corruption
errors (``database disk image is malformed``, ``file is not a database``) are treated as
corruption; the index is then rebuilt from scratch (it holds nothing that the files don't).
A schema version change also rebuilds.

Memory between searches: what a search reads that no query changes (each term's note count
and, for a term with at most 5,000 positions, its positions in every note; notes' column sizes
and paths; the column averages) is kept by the :class:`SearchIndex` object and used while the
index is unchanged. It is dropped as soon as :meth:`SearchIndex.change_token` differs: this
object's own write transactions, any other connection's or process's commit (SQLite's
``data_version``) or the file reopened after a rebuild. Candidates, snippets and hits are read
from the index on every search.

Threading: a :class:`SearchIndex` owns a single connection and must be used from one thread at a
time (the store's :class:`~goat_core.filestore.StoreWorker`); it may be created on another thread.
"""

from goat_core.filestore.search._chunks import CHUNK_CHARS, Chunk, chunk_note, note_text
from goat_core.filestore.search._hybrid import FUSION, Fusion, fuse
from goat_core.filestore.search._index import (
    SCHEMA_VERSION,
    SearchIndex,
)
from goat_core.filestore.search._memory import MemoryIndex
from goat_core.filestore.search._query import (
    ENGLISH_STOP_WORDS,
    MAX_QUERY_TERMS,
    fts_query,
    query_terms,
    search_terms,
)
from goat_core.filestore.search._records import (
    DocInfo,
    FileStat,
    FileStatLike,
    IndexedDoc,
    IndexStats,
    SearchHit,
    SearchResults,
    SyncStats,
)
from goat_core.filestore.search._rerank import (
    RERANK_CHARS,
    RERANK_DEPTH,
    RERANK_SECONDS,
    checked_scores,
    rerank_text,
    reranked,
)
from goat_core.filestore.search._snippets import (
    SNIPPET_CLOSE,
    SNIPPET_OPEN,
    Snippet,
    highlight,
)
from goat_core.filestore.search._vectors import (
    NOTE_WEIGHT,
    VECTOR_SCHEMA,
    ChunkHit,
    VectorIndex,
)

__all__ = [
    "CHUNK_CHARS",
    "ENGLISH_STOP_WORDS",
    "FUSION",
    "MAX_QUERY_TERMS",
    "NOTE_WEIGHT",
    "RERANK_CHARS",
    "RERANK_DEPTH",
    "RERANK_SECONDS",
    "SCHEMA_VERSION",
    "SNIPPET_CLOSE",
    "SNIPPET_OPEN",
    "VECTOR_SCHEMA",
    "Chunk",
    "ChunkHit",
    "DocInfo",
    "FileStat",
    "FileStatLike",
    "Fusion",
    "IndexStats",
    "IndexedDoc",
    "MemoryIndex",
    "SearchHit",
    "SearchIndex",
    "SearchResults",
    "Snippet",
    "SyncStats",
    "VectorIndex",
    "checked_scores",
    "chunk_note",
    "fts_query",
    "fuse",
    "highlight",
    "note_text",
    "query_terms",
    "rerank_text",
    "reranked",
    "search_terms",
]
