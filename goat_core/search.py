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
original text with every matched word (the term or a word with its stem; never a dropped
stop-word) wrapped in :data:`SNIPPET_OPEN` / :data:`SNIPPET_CLOSE` (``==``, Obsidian's highlight,
which cannot be mistaken for a wikilink's brackets and leaves the note's own ``**bold**``
readable around it). Each file's title, own id and problem (e.g.
unparsable frontmatter) sit in a covering index with its stat, so
:meth:`SearchIndex.documents` and :meth:`SearchIndex.problems` list a store without reading its
bodies or its files.

Concurrency: several processes may use one index file. It runs in WAL mode with a busy timeout;
a write waits at most ``busy_timeout_s`` for the lock and then raises
:class:`~goat_core.errors.ProviderUnavailable` naming the index. Only SQLite's own corruption
errors (``database disk image is malformed``, ``file is not a database``) are treated as
corruption; the index is then rebuilt from scratch (it holds nothing that the files don't).
A schema version change also rebuilds.

Threading: a :class:`SearchIndex` owns a single connection and must be used from one thread at a
time (the store's :class:`~goat_core.provider.StoreWorker`); it may be created on another thread.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import math
import operator
import os
import re
import sqlite3
import time
import unicodedata
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

from goat_core.errors import BadInput, ProviderUnavailable

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

SCHEMA_VERSION = 4
"""Bump when the tables, the tokenizer or the text preprocessing change: old indexes rebuild.
3: Porter stemming, aliases in a column of their own. 4: per-folder digests of the files."""

SNIPPET_OPEN = "=="
SNIPPET_CLOSE = "=="
MAX_QUERY_TERMS = 64
SNIPPET_WIDTH = 160
"""Approximate snippet length in characters (before marks and ellipses)."""

COLUMN_WEIGHTS = (10.0, 8.0, 5.0, 2.0, 1.0)
"""Weights of the columns title, aliases, meta (description, tags), extra, body, both in the
candidate search (FTS5 ``bm25``) and in the re-ranking (BM25F term frequencies)."""

RERANK_DEPTH = 50
"""How many candidates (best by FTS5 ``bm25``) of each group are re-scored."""

BM25_K1 = 1.2
BM25_B = 0.75
TITLE_BONUS = 2.0
"""Added per query term found in the title: ``TITLE_BONUS * idf * (1 + share of the title's
words that are query terms) / 2`` (a title naming exactly the query gets the full idf)."""
ALIAS_BONUS = 0.5
"""Added per query term found in an alias: ``ALIAS_BONUS * idf``."""
PROXIMITY_WEIGHT = 0.5
PROXIMITY_WINDOW = 3
"""Two query terms that follow each other in the query and in a column of the note, within
:data:`PROXIMITY_WINDOW` tokens (room for stop-words: ``link to a heading``), add
``PROXIMITY_WEIGHT * mean idf * saturated(weighted count)``."""

ENGLISH_STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing don down during each few for
    from further had has have having he her here hers herself him himself his how i if in into
    is it its itself just me more most my myself no nor not now of off on once only or other
    our ours ourselves out over own same she should so some such than that the their theirs
    them themselves then there these they this those through to too under until up very was
    we were what when where which while who whom why will with would you your yours yourself
    yourselves""".split()
)
"""Words dropped from a query when it has other terms (the NLTK English list, less its
contractions): they occur in most notes and say nothing about which note is meant."""

_BATCH_DOCS = 256
_BATCH_BYTES = 8 * 1024 * 1024
_TOKENIZER = "porter unicode61 remove_diacritics 2 categories 'L* N* Co Mn Mc'"
_STEM_CACHE_MAX = 4096
# word endings a stem may carry in the text and still be highlighted ("vault" -> "vaults")
_INFLECTIONS = frozenset(
    "s es e ed d ing ings er ers ly ion ions ation ations ment ments al ness ity ive".split()
)

# Scripts written without spaces between words: indexed as overlapping character pairs.
_CJK_CLASS = (
    "\u0e00-\u0eff"  # Thai, Lao
    "\u1000-\u109f"  # Myanmar
    "\u1100-\u11ff"  # Hangul Jamo
    "\u1780-\u17ff"  # Khmer
    "\u2e80-\u2fdf"  # CJK radicals, Kangxi radicals
    "\u3005-\u3007\u3021-\u3029\u3031-\u3035\u3038-\u303c"
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3100-\u312f\u3130-\u318f\u31a0-\u31bf\u31f0-\u31ff"  # Bopomofo, Hangul compat, Katakana ext
    "\u3400-\u4dbf\u4e00-\u9fff"  # Han
    "\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff"  # Hangul
    "\uf900-\ufaff"  # Han compatibility
    "\uff66-\uff9f"  # halfwidth Katakana
    "\U00020000-\U0003134f"  # Han extensions
)
_CJK_RUN = re.compile(f"[{_CJK_CLASS}]+")
_TOKEN_CATEGORIES = frozenset({"Co", "Mn", "Mc"})

T = TypeVar("T")


@dataclass(frozen=True)
class FileStat:
    """One file of a store as the change scan saw it.

    ``path``: store-relative POSIX path with its extension (``Folder/Note.md``);
    ``mtime_ns``: ``os.stat().st_mtime_ns``; ``size``: bytes.
    """

    path: str
    mtime_ns: int
    size: int


class FileStatLike(Protocol):
    """Anything with a :class:`FileStat`'s three attributes (e.g. the
    :class:`goat_core.files.NoteFile` entries of a walk, passed without copying)."""

    @property
    def path(self) -> str: ...

    @property
    def mtime_ns(self) -> int: ...

    @property
    def size(self) -> int: ...


@dataclass(frozen=True)
class IndexedDoc:
    """What the index holds for one file. ``extra``: other frontmatter values as text.
    ``ident``: the note's own identifier (frontmatter ``id``), if any. ``problem``: why the
    file was only partly understood (e.g. its frontmatter does not parse), kept so the
    problem can be reported later without reading the file again (:meth:`SearchIndex.
    problems`)."""

    path: str
    title: str
    body: str
    description: str = ""
    aliases: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    extra: str = ""
    ident: str | None = None
    problem: str | None = None


@dataclass(frozen=True)
class DocInfo:
    """One indexed file as listed by :meth:`SearchIndex.documents` (no body): store-relative
    ``path``, ``title``, ``ident`` and ``problem`` as in :class:`IndexedDoc`, and the
    ``(mtime_ns, size)`` of the version indexed."""

    path: str
    title: str
    ident: str | None
    problem: str | None
    mtime_ns: int
    size: int


@dataclass(frozen=True)
class SyncStats:
    """Outcome of one :meth:`SearchIndex.sync`. ``skipped``: files the loader could not read
    (their previous row, if any, is kept and retried at the next sync). ``seconds``: wall time."""

    scanned: int
    added: int
    updated: int
    removed: int
    unchanged: int
    seconds: float
    skipped: int = 0


@dataclass(frozen=True)
class SearchHit:
    """One ranked note. ``score``: higher is better, above 0 for every hit (BM25F with a
    positive idf, see the module docs; comparable only within one result list). ``snippet``:
    about :data:`SNIPPET_WIDTH` characters of the original text around the best match, matched
    words wrapped in ``==`` (:data:`SNIPPET_OPEN`, :data:`SNIPPET_CLOSE`), ``…`` where cut; when
    only the title matched, the start of the note."""

    path: str
    title: str
    score: float
    snippet: str


@dataclass(frozen=True)
class SearchResults:
    """Ranked hits. ``total``: notes that matched (containing every term, or, when fewer than
    ``limit`` contain every term and the query has several, any term).
    ``complete``: ``False`` when more matched than returned (the hits are the top ``limit`` of
    ``total`` ranked notes) or the index could not be searched. ``degraded``: only reasons a
    part of the index could not be searched (e.g. it was corrupt and rebuilt), never the mere
    fact that more notes matched than were returned."""

    hits: list[SearchHit]
    total: int
    complete: bool
    degraded: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class IndexStats:
    """Size of an index: ``documents`` indexed, ``bytes`` on disk (database, WAL and shared
    memory files)."""

    path: str
    documents: int
    bytes: int
    schema_version: int


# --------------------------------------------------------------------------- text processing


def _is_token_char(ch: str) -> bool:
    """The characters ``unicode61`` (with our categories) keeps inside a token."""
    cat = unicodedata.category(ch)
    return cat[0] in "LN" or cat in _TOKEN_CATEGORIES


def _pairs(run: str) -> str:
    """``abcd`` -> ``ab bc cd d``: overlapping pairs plus the last character alone, so every
    character starts a token (a 1-character prefix query then finds it)."""
    if len(run) == 1:
        return run
    return " ".join([run[i : i + 2] for i in range(len(run) - 1)] + [run[-1]])


def _valid_utf8(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def _prepare(text: str) -> str:
    """Text as it goes into the FTS5 index: NFKC, spaceless scripts split into pairs."""
    if text.isascii():
        return text
    text = _valid_utf8(unicodedata.normalize("NFKC", text))
    if _CJK_RUN.search(text) is None:
        return text
    return _CJK_RUN.sub(lambda m: f" {_pairs(m.group())} ", text)


def _split_words(text: str) -> list[str]:
    words: list[str] = []
    cur: list[str] = []
    for ch in text:
        if _is_token_char(ch):
            cur.append(ch)
        elif cur:
            words.append("".join(cur))
            cur = []
    if cur:
        words.append("".join(cur))
    return words


def query_terms(query: str, *, cap: int | None = MAX_QUERY_TERMS) -> list[str]:
    """The terms of user text, in order, without duplicates (case-folded), at most ``cap``
    (:data:`MAX_QUERY_TERMS`; ``None`` for all). A term is a run of letters, digits and marks;
    a run of a spaceless script is one term of its own (``Python数据`` -> ``Python``, ``数据``)."""
    text = _valid_utf8(unicodedata.normalize("NFKC", query))
    terms: list[str] = []
    seen: set[str] = set()
    pos = 0
    pieces: list[tuple[str, bool]] = []
    for m in _CJK_RUN.finditer(text):
        pieces.append((text[pos : m.start()], False))
        pieces.append((m.group(), True))
        pos = m.end()
    pieces.append((text[pos:], False))
    for piece, spaceless in pieces:
        for word in [piece] if spaceless else _split_words(piece):
            if spaceless and not any(_is_token_char(c) for c in word):
                continue
            key = word.casefold()
            if word and key not in seen:
                seen.add(key)
                terms.append(word)
    return terms if cap is None else terms[:cap]


def _is_spaceless(term: str) -> bool:
    return _CJK_RUN.fullmatch(term) is not None


def search_terms(query: str, *, cap: int | None = MAX_QUERY_TERMS) -> list[str]:
    """The terms a search uses: :func:`query_terms` less :data:`ENGLISH_STOP_WORDS`, unless
    that would leave none (``to be or not to be`` keeps every word), at most ``cap``. Terms of
    spaceless scripts are never stop-words."""
    terms = query_terms(query, cap=None)
    kept = [t for t in terms if _is_spaceless(t) or t.casefold() not in ENGLISH_STOP_WORDS]
    chosen = kept or terms
    return chosen if cap is None else chosen[:cap]


def _quote(s: str) -> str:
    return '"' + s.replace('"', '""') + '"'


def _term_expr(term: str) -> str:
    if _CJK_RUN.fullmatch(term):
        if len(term) == 1:
            return _quote(term) + "*"
        return _quote(" ".join(term[i : i + 2] for i in range(len(term) - 1)))
    return _quote(term)


def fts_query(terms: list[str], mode: str = "AND") -> str:
    """A safe FTS5 MATCH expression: every term quoted as a string, joined by ``AND``/``OR``."""
    if mode not in ("AND", "OR"):
        raise ValueError("mode must be AND or OR")
    return f" {mode} ".join(_term_expr(t) for t in terms)


_FOLD_CACHE: dict[str, str] = {}


def _fold_char(ch: str) -> str:
    got = _FOLD_CACHE.get(ch)
    if got is None:
        decomposed = unicodedata.normalize("NFKD", ch)
        got = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
        if len(_FOLD_CACHE) < 65536:
            _FOLD_CACHE[ch] = got
    return got


def _fold(text: str) -> tuple[str, list[int] | None]:
    """Folded text for snippet matching and, unless it is the identity, a map from each
    folded index to its original index (with one extra entry for the end)."""
    if text.isascii():
        return text.lower(), None
    parts = [_fold_char(c) for c in text]
    offsets: list[int] = []
    for i, p in enumerate(parts):
        offsets.extend([i] * len(p))
    offsets.append(len(text))
    return "".join(parts), offsets


def _fold_term(term: str) -> str:
    return "".join(_fold_char(c) for c in term)


@dataclass(frozen=True)
class _Mark:
    """What a snippet highlights for one query term: its folded text, the stem the index
    keeps for it (Porter), and whether it is a run of a spaceless script (matched anywhere,
    not as a whole word)."""

    text: str
    stem: str | None = None
    spaceless: bool = False


def _word_matches(word: str, mark: _Mark, folded_term: str) -> bool:
    if word == folded_term:
        return True
    stem = mark.stem
    if not stem or len(stem) < 3:
        return False
    if word.startswith(stem) and (len(word) == len(stem) or word[len(stem) :] in _INFLECTIONS):
        return True
    # Porter turns a final y into i ("library" -> "librari")
    return (
        stem.endswith("i")
        and word.startswith(stem[:-1])
        and word[len(stem) - 1 :]
        in (
            "y",
            "ies",
            "ied",
        )
    )


def _find_matches(folded: str, marks: list[_Mark]) -> list[tuple[int, int, int]]:
    """``(start, end, mark index)`` of whole-word occurrences of each term or of a word with
    its stem (substring for spaceless runs), in text order."""
    found: set[tuple[int, int, int]] = set()
    n = len(folded)
    for ti, mark in enumerate(marks):
        ft = _fold_term(mark.text)
        if not ft:
            continue
        needles = {ft}
        if mark.stem and not mark.spaceless and len(mark.stem) >= 3:
            needles.add(mark.stem[:-1] if mark.stem.endswith("i") else mark.stem)
        for needle in needles:
            start = 0
            count = 0
            while count < 64:
                i = folded.find(needle, start)
                if i < 0:
                    break
                start = i + 1
                if mark.spaceless:
                    found.add((i, i + len(needle), ti))
                    count += 1
                    continue
                if i > 0 and folded[i - 1].isalnum():
                    continue
                j = i + len(needle)
                while j < n and folded[j].isalnum():
                    j += 1
                if _word_matches(folded[i:j], mark, ft):
                    found.add((i, j, ti))
                    count += 1
    return sorted(found)


def _snippet(text: str, marks: list[_Mark], width: int = SNIPPET_WIDTH) -> str | None:
    """The window of ``text`` holding the most distinct terms, terms marked; ``None`` if none."""
    if not text or not marks:
        return None
    folded, offsets = _fold(text)
    matches = _find_matches(folded, marks)
    if not matches:
        return None

    def orig(i: int) -> int:
        return i if offsets is None else offsets[min(i, len(offsets) - 1)]

    best_i, best_score = 0, -1
    for i, (s, _e, _t) in enumerate(matches):
        distinct = {t for (s2, _e2, t) in matches[i:] if s2 < s + width * 3 // 4}
        if len(distinct) > best_score:
            best_i, best_score = i, len(distinct)
    first = orig(matches[best_i][0])
    lo = max(0, first - width // 4)
    hi = min(len(text), lo + width)
    # widen to word boundaries
    while lo > 0 and not text[lo - 1].isspace() and first - lo < width // 2:
        lo -= 1
    while hi < len(text) and not text[hi].isspace() and hi - lo < width * 3 // 2:
        hi += 1
    out: list[str] = ["…" if lo > 0 else ""]
    pos = lo
    for s, e, _t in matches:
        os_, oe = orig(s), orig(e)
        if os_ < pos or oe > hi or os_ == oe:
            continue
        out.append(text[pos:os_])
        if text.endswith(SNIPPET_OPEN, 0, os_) and text.startswith(SNIPPET_CLOSE, oe):
            out.append(text[os_:oe])  # already highlighted in the note
        else:
            out.append(SNIPPET_OPEN + text[os_:oe] + SNIPPET_CLOSE)
        pos = oe
    out.append(text[pos:hi])
    out.append("…" if hi < len(text) else "")
    return " ".join("".join(out).split())


def _head(text: str, width: int = SNIPPET_WIDTH) -> str:
    flat = " ".join(text[: width * 3].split())
    if len(flat) <= width:
        return flat
    cut = flat.rfind(" ", 0, width)
    return flat[: cut if cut > width // 2 else width] + "…"


def _meta_text(doc: IndexedDoc) -> str:
    return "\n".join([doc.description, " ".join(doc.tags)])


def _folder_of(path: str) -> str:
    """``a/b/c.md`` -> ``a/b``; a file at the store root is in folder ``""``."""
    return path.rpartition("/")[0]


def _by_folder(files: Iterable[FileStatLike]) -> dict[str, list[FileStatLike]]:
    """The files per folder, each folder's in the order given (one pass, no copies)."""
    groups: dict[str, list[FileStatLike]] = {}
    get = groups.get
    for st in files:
        folder = st.path.rpartition("/")[0]
        group = get(folder)
        if group is None:
            groups[folder] = [st]
        else:
            group.append(st)
    return groups


def _checked_groups(
    groups: Mapping[str, Sequence[FileStatLike]],
) -> dict[str, Sequence[FileStatLike]]:
    """``groups`` as a dict, after checking every path sits under its key (~20 ms at 100k
    files): a wrong key would keep the folder's digest from ever holding.

    :raises ValueError: a path grouped under another folder (a caller's bug)."""
    out = dict(groups)
    for folder, entries in out.items():
        for path in map(_PATH, entries):
            if path.rpartition("/")[0] != folder:
                raise ValueError(f"sync: {path!r} is grouped under folder {folder!r}")
    return out


_STAT = operator.attrgetter("path", "mtime_ns", "size")
_PATH = operator.attrgetter("path")
_MTIME = operator.attrgetter("mtime_ns")
_SIZE = operator.attrgetter("size")


def _digest(entries: Sequence[FileStatLike]) -> bytes:
    """16-byte BLAKE2b of a folder's listing, in the order given: the paths joined by NUL,
    then the mtimes and the sizes as 64-bit integers (a walk lists a folder in one order, so
    an unchanged folder gives the same digest; another order only costs a compare)."""
    # attribute lists only: no object per file (allocating one per file wakes the cyclic
    # garbage collector, which then rescans the caller's heap)
    mtimes = list(map(_MTIME, entries))
    sizes = list(map(_SIZE, entries))
    h = hashlib.blake2b(digest_size=16)
    h.update("\0".join(map(_PATH, entries)).encode("utf-8", "surrogatepass"))
    try:
        h.update(array("q", mtimes).tobytes())
        h.update(array("q", sizes).tobytes())
    except OverflowError:  # beyond 64 bits: as text
        h.update(b"\1" + "\0".join(f"{m}:{z}" for m, z in zip(mtimes, sizes, strict=True)).encode())
    return h.digest()


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# --------------------------------------------------------------------------- the index


_SCHEMA = [
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE docs(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE,"
    " mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL, title TEXT NOT NULL,"
    " aliases TEXT NOT NULL, meta TEXT NOT NULL, extra TEXT NOT NULL, body BLOB NOT NULL,"
    " ident TEXT, problem TEXT, folder TEXT NOT NULL)",
    # covering index: the listing reads (path, mtime_ns, size, title, ident, problem) without
    # touching bodies
    "CREATE INDEX docs_stat ON docs(path, mtime_ns, size, title, ident, problem)",
    # covering index: the change scan reads one folder's stats
    "CREATE INDEX docs_folder ON docs(folder, path, mtime_ns, size)",
    # one row per folder holding indexed files: the digest of a listing of the folder's files
    # found equal to its rows (NULL once its rows change: the next sync compares the folder),
    # and how many rows that was
    "CREATE TABLE folders(folder TEXT PRIMARY KEY, digest BLOB, count INTEGER NOT NULL)",
    f"CREATE VIRTUAL TABLE fts USING fts5(title, aliases, meta, extra, body, content='',"
    f' tokenize="{_TOKENIZER}")',
]


def _is_corrupt(exc: BaseException) -> bool:
    """Only SQLite's own corruption verdicts count; busy, locked or I/O errors never do."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    msg = str(exc).lower()
    return "malformed" in msg or "not a database" in msg


def _is_busy(exc: BaseException) -> bool:
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    msg = str(exc).lower()
    return "locked" in msg or "busy" in msg


def _varints(blob: bytes) -> list[int]:
    """SQLite varints (as FTS5 stores its sizes): 7 bits a byte, high bit set on all but the
    last, a ninth byte giving 8 bits."""
    out: list[int] = []
    i, n = 0, len(blob)
    while i < n:
        v = 0
        for k in range(9):
            if i >= n:
                return out
            byte = blob[i]
            i += 1
            if k == 8:
                v = (v << 8) | byte
                break
            v = (v << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(v)
    return out


class _Tokenizer:
    """The tokens the index keeps for query text, from the index's own tokenizer run in a
    private in-memory database (so stemming and folding match the index exactly)."""

    def __init__(self) -> None:
        self._db: sqlite3.Connection | None = None
        self._cache: dict[str, tuple[str, ...]] = {}

    def tokens(self, texts: list[str]) -> list[tuple[str, ...]]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            db = self._db
            if db is None:
                db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
                db.execute(f'CREATE VIRTUAL TABLE t USING fts5(x, tokenize="{_TOKENIZER}")')
                db.execute("CREATE VIRTUAL TABLE tv USING fts5vocab(t, instance)")
                self._db = db
            db.execute("DELETE FROM t")
            db.executemany(
                "INSERT INTO t(rowid, x) VALUES (?, ?)",
                [(i + 1, _valid_utf8(t)) for i, t in enumerate(missing)],
            )
            got: list[list[str]] = [[] for _ in missing]
            for doc, term in db.execute("SELECT doc, term FROM tv ORDER BY doc, offset"):
                got[doc - 1].append(term)
            if len(self._cache) + len(missing) > _STEM_CACHE_MAX:
                self._cache.clear()
            for t, toks in zip(missing, got, strict=True):
                self._cache[t] = tuple(toks)
        return [self._cache[t] for t in texts]

    def close(self) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None


@dataclass(frozen=True)
class _QueryTerm:
    """One search term: its text, its FTS5 expression, the index tokens it stands for (a
    phrase of them), whether those are a prefix (one spaceless character) and whether it is a
    spaceless run."""

    text: str
    expr: str
    tokens: tuple[str, ...]
    prefix: bool
    spaceless: bool


@dataclass
class _Scored:
    scores: dict[int, float]
    title_terms: dict[int, int]
    paths: dict[int, str]

    def order(self, rid: int) -> tuple[float, int, str, str]:
        """Sort key: score, then query terms in the title (both descending), then path."""
        path = self.paths.get(rid, "")
        return (-self.scores.get(rid, 0.0), -self.title_terms.get(rid, 0), path.casefold(), path)


class _Scorer:
    """BM25F over a few candidate notes, with an idf that is always positive.

    FTS5's own ``bm25`` uses ``idf = ln((N - n + 0.5) / (n + 0.5))``, clamped to 1e-6 for a
    term in more than half the notes, so such a term (``vault`` in a vault about vaults) adds
    nothing and every score is 0. Here, as in Lucene's BM25 (Robertson/Sparck Jones with the
    +1 inside the log): ``idf = ln(1 + (N - n + 0.5) / (n + 0.5))``, ``n`` the notes containing
    the term (``fts5vocab`` row table), ``N`` the notes indexed.

    BM25F (Robertson, Zaragoza, Taylor 2004): a term's frequency in each column (``fts5vocab``
    instance table) is divided by ``1 - b + b * column length / average column length``
    (lengths in tokens from FTS5's ``docsize`` table and its averages record, ``b`` =
    :data:`BM25_B`), weighted by :data:`COLUMN_WEIGHTS`, summed, and saturated with ``k1`` =
    :data:`BM25_K1`. Then the title, alias and proximity bonuses (:data:`TITLE_BONUS`,
    :data:`ALIAS_BONUS`, :data:`PROXIMITY_WEIGHT`) and coordination (times matched terms /
    query terms).
    """

    _COLS: ClassVar[dict[str, int]] = {"title": 0, "aliases": 1, "meta": 2, "extra": 3, "body": 4}

    def __init__(self, db: sqlite3.Connection, terms: list[_QueryTerm]) -> None:
        self.db = db
        self.terms = terms

    def _doc_count(self, term: _QueryTerm) -> int:
        if len(term.tokens) == 1 and not term.prefix:
            row = self.db.execute(
                "SELECT doc FROM temp.fts_terms WHERE term = ?", (term.tokens[0],)
            ).fetchone()
            return int(row[0]) if row else 0
        row = self.db.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", (term.expr,))
        return int(row.fetchone()[0])

    def _freqs(
        self, term: _QueryTerm, ids: str
    ) -> tuple[dict[tuple[int, int], int], dict[tuple[int, int], list[int]]]:
        """``(note id, column) -> occurrences`` of the term among the notes ``ids``, and for a
        one-token term ``(note id, column) -> token offsets`` (for proximity)."""
        per_token: list[dict[tuple[int, int], int]] = []
        offsets: dict[tuple[int, int], list[int]] = {}
        for tok in term.tokens:
            args: tuple[str, ...]
            if term.prefix:
                where, args = "term >= ? AND term < ?", (tok, tok + "\U0010ffff")
            else:
                where, args = "term = ?", (tok,)
            got: dict[tuple[int, int], int] = {}
            if len(term.tokens) == 1 and not term.prefix:
                for doc, col, off in self.db.execute(
                    f"SELECT doc, col, offset FROM temp.fts_where WHERE {where} AND doc IN ({ids})",
                    args,
                ):
                    key = (doc, self._COLS.get(col, 4))
                    got[key] = got.get(key, 0) + 1
                    offsets.setdefault(key, []).append(off)
                return got, offsets
            for doc, col, cnt in self.db.execute(
                f"SELECT doc, col, count(*) FROM temp.fts_where WHERE {where}"
                f" AND doc IN ({ids}) GROUP BY doc, col",
                args,
            ):
                got[(doc, self._COLS.get(col, 4))] = cnt
            per_token.append(got)
        if not per_token:
            return {}, offsets
        if len(per_token) == 1:
            return per_token[0], offsets
        # a phrase of pairs: as often as its rarest pair
        keys = set(per_token[0]).intersection(*per_token[1:])
        return {k: min(p[k] for p in per_token) for k in keys}, offsets

    @staticmethod
    def _near(
        first: dict[tuple[int, int], list[int]], second: dict[tuple[int, int], list[int]]
    ) -> dict[int, float]:
        """Per note: how often the second term follows the first within
        :data:`PROXIMITY_WINDOW` tokens in one column, weighted by the column's weight."""
        out: dict[int, float] = {}
        for key, offs in second.items():
            before = first.get(key)
            if not before:
                continue
            starts = set(before)
            n = sum(1 for o in offs if any(o - d in starts for d in range(1, PROXIMITY_WINDOW + 1)))
            if n:
                rid, col = key
                out[rid] = out.get(rid, 0.0) + COLUMN_WEIGHTS[col] * n
        return out

    def score(self, candidates: list[int]) -> _Scored:
        out = _Scored(scores={}, title_terms={}, paths={})
        if not candidates:
            return out
        db = self.db
        ids = ",".join(str(int(r)) for r in candidates)
        avg_row = db.execute("SELECT block FROM fts_data WHERE id = 1").fetchone()
        averages = _varints(bytes(avg_row[0])) if avg_row else []
        n_docs = averages[0] if averages else 0
        ncols = len(COLUMN_WEIGHTS)
        if n_docs <= 0 or len(averages) < 1 + ncols:
            n_docs = max(n_docs, db.execute("SELECT count(*) FROM docs").fetchone()[0], 1)
            avg_len = [1.0] * ncols
        else:
            avg_len = [max(x / n_docs, 1.0) for x in averages[1 : 1 + ncols]]
        sizes: dict[int, list[int]] = {}
        for rid, sz in db.execute(f"SELECT id, sz FROM fts_docsize WHERE id IN ({ids})"):
            sizes[rid] = _varints(bytes(sz))
        for rid, path in db.execute(f"SELECT id, path FROM docs WHERE id IN ({ids})"):
            out.paths[rid] = path
        k1, b = BM25_K1, BM25_B
        scores = dict.fromkeys(candidates, 0.0)
        title_hits: dict[int, int] = dict.fromkeys(candidates, 0)
        title_idf: dict[int, float] = dict.fromkeys(candidates, 0.0)
        matched: dict[int, int] = dict.fromkeys(candidates, 0)
        usable = 0
        previous: dict[tuple[int, int], list[int]] = {}
        previous_idf = 0.0
        for term in self.terms:
            if not term.tokens:
                continue
            usable += 1
            n = self._doc_count(term)
            idf = math.log(1.0 + (n_docs - n + 0.5) / (n + 0.5))
            weighted: dict[int, float] = {}
            freqs, offsets = self._freqs(term, ids)
            near = self._near(previous, offsets) if previous else {}
            previous = offsets
            for rid, count in near.items():
                pidf = (idf + previous_idf) / 2.0
                scores[rid] += PROXIMITY_WEIGHT * pidf * count * (k1 + 1.0) / (count + k1)
            previous_idf = idf
            for (rid, col), cnt in freqs.items():
                size = sizes.get(rid)
                length = size[col] if size and len(size) > col else avg_len[col]
                # BM25F: each column's frequency normalised by that column's length
                norm = 1.0 - b + b * length / avg_len[col]
                weighted[rid] = weighted.get(rid, 0.0) + COLUMN_WEIGHTS[col] * cnt / norm
                if col == 0:
                    title_hits[rid] = title_hits.get(rid, 0) + cnt
                    title_idf[rid] = title_idf.get(rid, 0.0) + idf
                elif col == 1:
                    scores[rid] = scores.get(rid, 0.0) + ALIAS_BONUS * idf
            for rid, wtf in weighted.items():
                matched[rid] = matched.get(rid, 0) + 1
                scores[rid] = scores.get(rid, 0.0) + idf * wtf * (k1 + 1.0) / (wtf + k1)
        for rid, tidf in title_idf.items():
            if tidf <= 0:
                continue
            size = sizes.get(rid)
            title_len = size[0] if size else 0
            share = min(1.0, title_hits[rid] / title_len) if title_len else 0.0
            scores[rid] += TITLE_BONUS * tidf * (1.0 + share) / 2.0
        if usable > 1:  # coordination: the share of the query's terms the note holds
            for rid in scores:
                scores[rid] *= matched.get(rid, 0) / usable
        out.scores = scores
        out.title_terms = {rid: c for rid, c in title_hits.items() if c}
        return out


@dataclass
class _Plan:
    """What a sync compares: ``changed`` listed folders (digest differs, new or cleared),
    ``rows`` the stored ``path -> (mtime_ns, size)`` of those and of the ``gone`` folders
    (stored, no longer listed)."""

    changed: list[str]
    rows: dict[str, tuple[int, int]]
    gone: list[str]


@dataclass
class _Pending:
    stat: FileStatLike
    doc: IndexedDoc | None


class SearchIndex:
    """A full-text index in one SQLite file (created with its folder if missing).

    :param db_path: the index file, e.g. ``GoatHome.index_path(root)``.
    :param busy_timeout_s: how long any operation waits for another process's lock before
        raising :class:`~goat_core.errors.ProviderUnavailable` (seconds).
    :raises ProviderUnavailable: the file cannot be opened or stays locked past the timeout.
    """

    def __init__(self, db_path: Path, *, busy_timeout_s: float = 5.0) -> None:
        if busy_timeout_s <= 0:
            raise BadInput("busy_timeout_s must be positive (seconds to wait for a lock)")
        self.db_path = Path(db_path)
        self.busy_timeout_s = float(busy_timeout_s)
        self.rebuilt = False
        """``True`` once this object rebuilt the index (corrupt or older schema): sync again."""
        self._conn: sqlite3.Connection | None = None
        self._vocab_conn: sqlite3.Connection | None = None
        self._tokens = _Tokenizer()
        try:
            self._guarded(self._open)
        except sqlite3.DatabaseError as exc:
            if not _is_corrupt(exc):
                raise
            self._rebuild_file()

    # ---------------------------------------------------------------- connection handling

    def _open(self) -> None:
        try:
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ProviderUnavailable(
                f"search index {self.db_path}: cannot create its folder ({exc.strerror})"
            ) from exc
        conn = sqlite3.connect(
            str(self.db_path),
            timeout=self.busy_timeout_s,
            isolation_level=None,
            check_same_thread=False,
        )
        self._conn = conn
        try:
            if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
                # only takes effect on a new, empty file: free pages can be given back
                conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
            conn.execute("PRAGMA journal_mode=WAL").fetchone()
            conn.execute("PRAGMA synchronous=NORMAL")
            self._ensure_schema()
        except BaseException:
            self._conn = None
            conn.close()
            raise

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ProviderUnavailable(f"search index {self.db_path} is closed")
        return self._conn

    def _ensure_schema(self) -> None:
        db = self._db
        row = db.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
        ).fetchone()
        if row is not None:
            got = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if got is not None and got[0] == str(SCHEMA_VERSION):
                return
        with self._write() as db:
            have = db.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name='meta'"
            ).fetchone()
            version = None
            if have:
                row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
                version = row[0] if row else None
            if version == str(SCHEMA_VERSION):
                return
            if have is not None or version is not None:
                self.rebuilt = True
            self._drop_all(db)
            for stmt in _SCHEMA:
                db.execute(stmt)
            db.execute(
                "INSERT INTO meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )

    @staticmethod
    def _drop_all(db: sqlite3.Connection) -> None:
        names = db.execute(
            "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view')"
            " AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'fts_%'"
        ).fetchall()
        for kind, name in names:
            db.execute(f'DROP {kind.upper()} IF EXISTS "{name}"')

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``: takes the lock up front, waits the busy
        timeout for it)."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            if db.in_transaction:
                db.rollback()
            raise
        db.execute("COMMIT")

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: a consistent snapshot (WAL readers never wait for writers)."""
        db = self._db
        db.execute("BEGIN")
        try:
            yield db
        finally:
            if db.in_transaction:
                db.rollback()

    def _guarded(self, fn: Callable[[], T]) -> T:
        """Run ``fn``; retry while the database is busy, up to the timeout; map errors."""
        deadline = time.monotonic() + self.busy_timeout_s
        while True:
            try:
                return fn()
            except sqlite3.Error as exc:
                if _is_busy(exc):
                    if time.monotonic() < deadline:
                        time.sleep(0.02)
                        continue
                    raise ProviderUnavailable(
                        f"search index {self.db_path} is busy: another process held its lock"
                        f" longer than the busy timeout ({self.busy_timeout_s:g} s)"
                    ) from exc
                if _is_corrupt(exc):
                    raise
                raise ProviderUnavailable(f"search index {self.db_path}: {exc}") from exc

    def _run(self, fn: Callable[[], T]) -> T:
        """Like :meth:`_guarded`, but a corrupt index is rebuilt and ``fn`` tried once more."""
        try:
            return self._guarded(fn)
        except sqlite3.DatabaseError as exc:
            if not _is_corrupt(exc):
                raise
            self._rebuild_file()
            try:
                return self._guarded(fn)
            except sqlite3.DatabaseError as exc2:
                raise ProviderUnavailable(
                    f"search index {self.db_path} is still corrupt after a rebuild: {exc2}"
                ) from exc2

    def _rebuild_file(self) -> None:
        """Delete the index files and start empty (the index holds nothing the files don't)."""
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self.db_path}{suffix}")
        self.rebuilt = True
        self._guarded(self._open)

    # ---------------------------------------------------------------- writing

    def _delete_row(self, db: sqlite3.Connection, row: tuple[Any, ...]) -> None:
        """Remove one ``docs`` row ``(id, title, aliases, meta, extra, body, folder)`` and its
        FTS5 entries (a contentless table needs the indexed values back, rebuilt from the
        stored originals); its folder's digest no longer holds."""
        rid, title, aliases, meta, extra, blob, folder = row
        body = zlib.decompress(blob).decode("utf-8", "surrogatepass")
        db.execute(
            "INSERT INTO fts(fts, rowid, title, aliases, meta, extra, body)"
            " VALUES ('delete', ?, ?, ?, ?, ?, ?)",
            (
                rid,
                _prepare(title),
                _prepare(aliases),
                _prepare(meta),
                _prepare(extra),
                _prepare(body),
            ),
        )
        db.execute("DELETE FROM docs WHERE id = ?", (rid,))
        db.execute("UPDATE folders SET digest = NULL WHERE folder = ?", (folder,))

    def _insert(self, db: sqlite3.Connection, doc: IndexedDoc, stat: FileStatLike) -> None:
        title = _valid_utf8(doc.title)
        aliases = _valid_utf8("\n".join(doc.aliases))
        meta = _valid_utf8(_meta_text(doc))
        extra = _valid_utf8(doc.extra)
        blob = zlib.compress(doc.body.encode("utf-8", "surrogatepass"), 6)
        ident = None if doc.ident is None else _valid_utf8(doc.ident)
        problem = None if doc.problem is None else _valid_utf8(doc.problem)
        folder = _folder_of(stat.path)
        cur = db.execute(
            "INSERT INTO docs(path, mtime_ns, size, title, aliases, meta, extra, body, ident,"
            " problem, folder) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                stat.path,
                stat.mtime_ns,
                stat.size,
                title,
                aliases,
                meta,
                extra,
                blob,
                ident,
                problem,
                folder,
            ),
        )
        # the folder's digest no longer holds (sync compares the folder and sets it again)
        db.execute(
            "INSERT INTO folders(folder, digest, count) VALUES (?, NULL, 0)"
            " ON CONFLICT(folder) DO UPDATE SET digest = NULL",
            (folder,),
        )
        db.execute(
            "INSERT INTO fts(rowid, title, aliases, meta, extra, body) VALUES (?, ?, ?, ?, ?, ?)",
            (
                cur.lastrowid,
                _prepare(title),
                _prepare(aliases),
                _prepare(meta),
                _prepare(extra),
                _prepare(doc.body),
            ),
        )

    _ROW = "SELECT id, title, aliases, meta, extra, body, folder FROM docs WHERE path = ?"

    def _apply(self, batch: list[_Pending], removals: list[str]) -> tuple[int, int, int, int]:
        """Apply one batch in one transaction; returns (added, updated, removed, unchanged).
        Rows are re-read under the lock, so another process's concurrent sync is respected."""
        added = updated = removed = unchanged = 0
        with self._write() as db:
            for path in removals:
                row = db.execute(self._ROW, (path,)).fetchone()
                if row is not None:
                    self._delete_row(db, row)
                    removed += 1
            for item in batch:
                if item.doc is None:
                    continue
                st = item.stat
                cur = db.execute(
                    "SELECT mtime_ns, size FROM docs WHERE path = ?", (st.path,)
                ).fetchone()
                if cur is not None and (cur[0], cur[1]) == (st.mtime_ns, st.size):
                    unchanged += 1  # another process indexed this version meanwhile
                    continue
                if cur is not None:
                    row = db.execute(self._ROW, (st.path,)).fetchone()
                    self._delete_row(db, row)
                    updated += 1
                else:
                    added += 1
                self._insert(db, item.doc, st)
        return added, updated, removed, unchanged

    def sync(
        self,
        files: Iterable[FileStatLike] | Mapping[str, Sequence[FileStatLike]],
        load: Callable[[str], IndexedDoc | None],
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> SyncStats:
        """Bring the index in line with ``files`` (every file of the store, once; any
        :class:`FileStatLike`, e.g. a walk's entries as they are).

        ``files`` may also come grouped by folder, as
        :attr:`goat_core.files.WalkResult.folders` has them: a mapping from a folder (the
        part of the path before the last ``/``, ``""`` at the root) to its files, each path
        under exactly the key it belongs to (checked; :class:`ValueError` otherwise). That
        saves grouping every path again.

        A file whose ``(mtime_ns, size)`` equals the stored one is not loaded. Changed and new
        files are passed to ``load(path)``; ``None`` means unreadable: counted in ``skipped``,
        any older row kept. Rows of paths not in ``files`` are removed. Work is committed in
        batches (one transaction each, at most 256 files); the lock is only held while a
        batch is written, not while files are read.

        Change scan, proportional to what changed: the files are grouped by folder (the part
        of the path before the last ``/``) and each folder's listing is hashed in one pass
        (see :func:`_digest`). The index keeps, per folder, the digest of the last listing
        found equal to the folder's rows (checked under the lock; any later change to those
        rows clears it). A folder whose digest is unchanged is unchanged without reading its
        rows; only the rows of folders whose digest differs, is new or is gone are read and
        compared file by file. A folder holding a file that was skipped keeps no digest, so it
        is compared (and the file retried) at every sync.

        :param progress: called as ``progress(done, total)`` with counts of changed files.
        :raises ProviderUnavailable: the index stayed locked past the busy timeout.
        """
        started = time.monotonic()
        groups: dict[str, Sequence[FileStatLike]] = (
            _checked_groups(files) if isinstance(files, Mapping) else dict(_by_folder(files))
        )
        digests = {folder: _digest(entries) for folder, entries in groups.items()}
        plan = self._run(functools.partial(self._plan, digests))
        stored = plan.rows
        scanned = sum(map(len, groups.values()))
        unchanged = scanned - sum(len(groups[f]) for f in plan.changed)
        skipped = 0
        unsealed: set[str] = set()  # folders left without a digest (a file was skipped)
        changed: list[FileStatLike] = []
        pop = stored.pop
        for folder in plan.changed:
            for st in groups[folder]:
                # a path listed twice is popped once; its second entry is re-checked under
                # the lock
                if pop(st.path, None) == (st.mtime_ns, st.size):
                    unchanged += 1
                elif not _encodable(st.path):
                    skipped += 1
                    unsealed.add(folder)
                else:
                    changed.append(st)
        gone = list(stored)  # stored paths no longer among the files
        del stored
        total = len(changed) + len(gone)
        done = 0
        added = updated = removed = 0
        if progress is not None:
            progress(0, total)
        if gone:
            for i in range(0, len(gone), _BATCH_DOCS * 4):
                part = gone[i : i + _BATCH_DOCS * 4]
                r = self._run(functools.partial(self._apply, [], part))[2]
                removed += r
                done += len(part)
                if progress is not None:
                    progress(done, total)
        batch: list[_Pending] = []
        batch_bytes = 0

        def flush() -> None:
            nonlocal added, updated, unchanged, done, batch, batch_bytes
            if not batch:
                return
            todo = batch
            a, u, _r, n = self._run(lambda: self._apply(todo, []))
            added += a
            updated += u
            unchanged += n
            done += len(todo)
            batch, batch_bytes = [], 0
            if progress is not None:
                progress(done, total)

        for st in changed:
            doc = load(st.path)
            if doc is None:
                skipped += 1
                unsealed.add(_folder_of(st.path))
                done += 1
                continue
            batch.append(_Pending(st, doc))
            batch_bytes += len(doc.body)
            if len(batch) >= _BATCH_DOCS or batch_bytes >= _BATCH_BYTES:
                flush()
        flush()
        self._seal([f for f in plan.changed if f not in unsealed], groups, digests, plan.gone)
        if added or updated or removed:
            self._run(self._release_free_pages)
        return SyncStats(
            scanned=scanned,
            added=added,
            updated=updated,
            removed=removed,
            unchanged=unchanged,
            seconds=time.monotonic() - started,
            skipped=skipped,
        )

    def _release_free_pages(self) -> None:
        """Give free pages back to the file system when they are over a tenth of the file
        (FTS5 segment merges leave them behind after large syncs)."""
        db = self._db
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        free = db.execute("PRAGMA freelist_count").fetchone()[0]
        if pages and free * 10 > pages:
            # executescript steps the pragma to completion (execute() frees only one page)
            db.executescript("PRAGMA incremental_vacuum;")

    _FOLDER_ROWS = "SELECT path, mtime_ns, size FROM docs INDEXED BY docs_folder WHERE folder = ?"

    def _plan(self, digests: dict[str, bytes]) -> _Plan:
        """In one snapshot: the listed folders whose digest differs from the stored one (or
        is new or cleared), the stored folders no longer listed, and the stored
        ``path -> (mtime_ns, size)`` of both. The row count checks that every other row sits
        in a folder found unchanged; if not, every row is compared."""
        with self._read() as db:
            stored = {
                f: (d, c) for f, d, c in db.execute("SELECT folder, digest, count FROM folders")
            }
            changed: list[str] = []
            kept = 0  # rows of the folders found unchanged
            for folder, digest in digests.items():
                have = stored.get(folder)
                if have is not None and have[0] == digest:
                    kept += have[1]
                else:
                    changed.append(folder)
            gone = [f for f in stored if f not in digests]
            want = [f for f in (*changed, *gone) if _encodable(f)]
            rows: dict[str, tuple[int, int]] = {}
            if len(want) > max(64, len(stored) // 4):  # one scan beats many lookups
                wanted = set(want)
                rows = {
                    p: (m, s)
                    for f, p, m, s in db.execute(
                        "SELECT folder, path, mtime_ns, size FROM docs INDEXED BY docs_folder"
                    )
                    if f in wanted
                }
            else:
                for folder in want:
                    rows.update({p: (m, s) for p, m, s in db.execute(self._FOLDER_ROWS, (folder,))})
            total = db.execute("SELECT count(*) FROM docs").fetchone()[0]
            if total != kept + len(rows):
                rows = {
                    p: (m, s)
                    for p, m, s in db.execute(
                        "SELECT path, mtime_ns, size FROM docs INDEXED BY docs_stat"
                    )
                }
                changed = list(digests)
                gone = sorted({*stored, *map(_folder_of, rows)} - digests.keys())
        return _Plan(changed=changed, rows=rows, gone=gone)

    def _seal(
        self,
        folders: list[str],
        groups: dict[str, Sequence[FileStatLike]],
        digests: dict[str, bytes],
        gone: list[str],
    ) -> None:
        """Store the digests of ``folders`` whose rows, re-read under the lock, equal their
        listing (another process may have changed them since), and drop the entries of
        ``gone`` folders left without rows. In transactions of about a thousand rows."""
        part: list[str] = []
        size = 0
        for folder in folders:
            part.append(folder)
            size += len(groups[folder])
            if size >= _BATCH_DOCS * 4:
                self._run(functools.partial(self._seal_part, part, groups, digests, []))
                part, size = [], 0
        if part or gone:
            self._run(functools.partial(self._seal_part, part, groups, digests, gone))

    def _seal_part(
        self,
        folders: list[str],
        groups: dict[str, Sequence[FileStatLike]],
        digests: dict[str, bytes],
        gone: list[str],
    ) -> None:
        with self._write() as db:
            for folder in folders:
                listing = {st.path: (st.mtime_ns, st.size) for st in groups[folder]}
                if len(listing) != len({_STAT(st) for st in groups[folder]}):
                    continue  # one path listed with two different stats: no digest holds
                rows = {p: (m, s) for p, m, s in db.execute(self._FOLDER_ROWS, (folder,))}
                if rows != listing:
                    db.execute("UPDATE folders SET digest = NULL WHERE folder = ?", (folder,))
                else:
                    db.execute(
                        "INSERT INTO folders(folder, digest, count) VALUES (?, ?, ?)"
                        " ON CONFLICT(folder) DO UPDATE SET digest = excluded.digest,"
                        " count = excluded.count",
                        (folder, digests[folder], len(rows)),
                    )
            for folder in gone:
                if db.execute(self._FOLDER_ROWS + " LIMIT 1", (folder,)).fetchone() is None:
                    db.execute("DELETE FROM folders WHERE folder = ?", (folder,))

    def update_one(self, doc: IndexedDoc, stat: FileStat) -> None:
        """Index one file the provider just wrote (replacing its row). ``doc.path`` must equal
        ``stat.path``. Clears the digest of the file's folder: the next :meth:`sync` compares
        that folder file by file (and finds this row current if ``stat`` is the file's).

        :raises BadInput: the two paths differ.
        """
        if doc.path != stat.path:
            raise BadInput(
                f"update_one: doc.path {doc.path!r} differs from stat.path {stat.path!r}"
            )

        def go() -> None:
            with self._write() as db:
                row = db.execute(self._ROW, (stat.path,)).fetchone()
                if row is not None:
                    self._delete_row(db, row)
                self._insert(db, doc, stat)

        self._run(go)

    def remove(self, path: str) -> bool:
        """Drop the row of ``path`` (store-relative). Returns whether there was one. Clears the
        digest of its folder, like :meth:`update_one`."""

        def go() -> bool:
            with self._write() as db:
                row = db.execute(self._ROW, (path,)).fetchone()
                if row is None:
                    return False
                self._delete_row(db, row)
                return True

        return self._run(go)

    def rebuild(self) -> None:
        """Empty the index (the next :meth:`sync` indexes every file again)."""

        def go() -> None:
            with self._write() as db:
                self._drop_all(db)
                for stmt in _SCHEMA:
                    db.execute(stmt)
                db.execute(
                    "INSERT INTO meta(key, value) VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )

        self._run(go)
        self.rebuilt = True

    # ---------------------------------------------------------------- reading

    def search(self, query: str, *, limit: int = 10) -> SearchResults:
        """Ranked notes for user text ``query`` (see the module docs for the semantics).

        :param limit: most hits returned, at least 1.
        :raises BadInput: ``limit`` below 1.
        :raises ProviderUnavailable: the index could not be read within the busy timeout.
        """
        if limit < 1:
            raise BadInput(f"search limit must be at least 1, got {limit}")
        every = search_terms(query, cap=None)
        if not every:
            return SearchResults(hits=[], total=0, complete=True)
        terms = every[:MAX_QUERY_TERMS]
        try:
            results = self._guarded(lambda: self._search(terms, limit))
            if len(every) > len(terms):
                # Never a silent cut: the caller learns the query was shortened.
                return dataclasses.replace(
                    results,
                    complete=False,
                    degraded=(
                        *results.degraded,
                        f"the query has {len(every)} distinct search terms; only the first "
                        f"{MAX_QUERY_TERMS} were searched",
                    ),
                )
            return results
        except sqlite3.DatabaseError as exc:
            if not _is_corrupt(exc):
                raise
            self._rebuild_file()
            return SearchResults(
                hits=[],
                total=0,
                complete=False,
                degraded=(f"search index {self.db_path} was corrupt and has been rebuilt",),
            )

    def _search(self, terms: list[str], limit: int) -> SearchResults:
        db = self._db
        if self._vocab_conn is not db:
            # per connection, in its temp schema: term statistics of the index
            db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_terms USING fts5vocab(main, fts, row)"
            )
            db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_where"
                " USING fts5vocab(main, fts, instance)"
            )
            self._vocab_conn = db
        w = ", ".join(str(x) for x in COLUMN_WEIGHTS)
        rank_sql = f"SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY bm25(fts, {w}) LIMIT ?"
        count_sql = "SELECT count(*) FROM fts WHERE fts MATCH ?"
        qterms = self._query_terms(terms)
        depth = max(limit, RERANK_DEPTH)
        with self._read() as db:
            q_and = fts_query(terms, "AND")
            candidates = [rid for (rid,) in db.execute(rank_sql, (q_and, depth))]
            if len(candidates) < depth:
                total = len(candidates)
            else:
                total = db.execute(count_sql, (q_and,)).fetchone()[0]
            if total < limit and len(terms) > 1:
                # too few notes hold every term: notes holding some of them compete too
                q_or = fts_query(terms, "OR")
                have = set(candidates)
                candidates += [
                    rid
                    for (rid,) in db.execute(rank_sql, (q_or, depth + len(candidates)))
                    if rid not in have
                ][:depth]
                total = db.execute(count_sql, (q_or,)).fetchone()[0]
            scored = _Scorer(db, qterms).score(candidates)
            ranked = sorted(candidates, key=scored.order)
            marks = [
                _Mark(t.text, t.tokens[0] if len(t.tokens) == 1 else None, t.spaceless)
                for t in qterms
            ]
            hits: list[SearchHit] = []
            for rid in ranked[:limit]:
                row = db.execute(
                    "SELECT path, title, aliases, meta, extra, body FROM docs WHERE id = ?",
                    (rid,),
                ).fetchone()
                if row is None:
                    continue
                path, title, aliases, meta, extra, blob = row
                body = zlib.decompress(blob).decode("utf-8", "surrogatepass")
                snippet = (
                    _snippet(body, marks)
                    or _snippet(meta, marks)
                    or _snippet(extra, marks)
                    or _snippet(aliases, marks)
                    or _head(body or meta or title)
                )
                score = scored.scores.get(rid, 0.0)
                hits.append(SearchHit(path=path, title=title, score=score, snippet=snippet))
        return SearchResults(hits=hits, total=total, complete=total <= len(hits))

    def _query_terms(self, terms: list[str]) -> list[_QueryTerm]:
        """Each search term with the tokens the index holds for it (case-folded, diacritics
        removed, Porter-stemmed; a spaceless run as its character pairs)."""
        texts: list[str] = []
        for t in terms:
            if _is_spaceless(t) and len(t) > 1:
                texts.append(" ".join(t[i : i + 2] for i in range(len(t) - 1)))
            else:
                texts.append(t)
        tokens = self._tokens.tokens(texts)
        return [
            _QueryTerm(
                text=t,
                expr=_term_expr(t),
                tokens=toks,
                prefix=_is_spaceless(t) and len(t) == 1,
                spaceless=_is_spaceless(t),
            )
            for t, toks in zip(terms, tokens, strict=True)
        ]

    def documents(self) -> list[DocInfo]:
        """Every indexed file without its body, ordered by path case-insensitively (ties by
        exact path), read from a covering index (cost: the listing, never the bodies).

        :raises ProviderUnavailable: the index could not be read within the busy timeout.
        """

        def go() -> list[DocInfo]:
            with self._read() as db:
                rows = db.execute(
                    "SELECT path, title, ident, problem, mtime_ns, size FROM docs"
                    " INDEXED BY docs_stat"
                ).fetchall()
            docs = [DocInfo(*row) for row in rows]
            docs.sort(key=lambda d: (d.path.casefold(), d.path))
            return docs

        return self._run(go)

    def problems(self) -> list[tuple[str, str]]:
        """``(path, problem)`` of every indexed file stored with a problem (see
        :attr:`IndexedDoc.problem`), ordered like :meth:`documents`.

        :raises ProviderUnavailable: the index could not be read within the busy timeout.
        """

        def go() -> list[tuple[str, str]]:
            with self._read() as db:
                rows = db.execute(
                    "SELECT path, problem FROM docs INDEXED BY docs_stat WHERE problem IS NOT NULL"
                ).fetchall()
            return sorted(((p, q) for p, q in rows), key=lambda r: (r[0].casefold(), r[0]))

        return self._run(go)

    def stats(self) -> IndexStats:
        """Documents indexed and bytes on disk."""

        def go() -> int:
            with self._read() as db:
                return int(db.execute("SELECT count(*) FROM docs").fetchone()[0])

        docs = self._run(go)
        size = 0
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                size += os.stat(f"{self.db_path}{suffix}").st_size
        return IndexStats(
            path=str(self.db_path), documents=docs, bytes=size, schema_version=SCHEMA_VERSION
        )

    def verify(self) -> list[str]:
        """Check the index; returns the problems found (empty: healthy). Runs SQLite's
        ``quick_check``, FTS5's ``integrity-check`` and compares row counts, all in one write
        transaction so a concurrent writer can never make a healthy index look inconsistent.
        Does not repair: call :meth:`rebuild` (then :meth:`sync`) for that.

        :raises ProviderUnavailable: the index stayed locked past the busy timeout.
        """

        def go() -> list[str]:
            problems: list[str] = []
            with self._write() as db:
                for (line,) in db.execute("PRAGMA quick_check"):
                    if line != "ok":
                        problems.append(f"quick_check: {line}")
                db.execute("INSERT INTO fts(fts) VALUES ('integrity-check')")
                docs = db.execute("SELECT count(*) FROM docs").fetchone()[0]
                sized = db.execute("SELECT count(*) FROM fts_docsize").fetchone()[0]
                if docs != sized:
                    problems.append(f"{docs} documents but {sized} full-text entries")
            return problems

        try:
            return self._guarded(go)
        except sqlite3.DatabaseError as exc:
            if not _is_corrupt(exc):
                raise
            return [f"search index {self.db_path} is corrupt: {exc}"]

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self._tokens.close()
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None

    def __enter__(self) -> SearchIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SearchIndex({str(self.db_path)!r})"
