"""Query text to search terms, and text as the index tokenizes it.

User text is split into terms here (runs of letters, digits and combining marks, the
characters SQLite's ``unicode61`` tokenizer keeps); every term is quoted as an FTS5 string
(:func:`fts_query`), so no user text is ever FTS5 query syntax. English stop-words
(:data:`ENGLISH_STOP_WORDS`) are dropped from a query that has other terms
(:func:`search_terms`). Scripts written without spaces are split into overlapping character
pairs, in notes (:func:`_prepare`) and in queries. :class:`_Tokenizer` runs the index's own
tokenizer on query text, so a term's stemmed, folded tokens match the index exactly.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import unicodedata
from dataclasses import dataclass

MAX_QUERY_TERMS = 64

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

_TOKENIZER = "porter unicode61 remove_diacritics 2 categories 'L* N* Co Mn Mc'"
_STEM_CACHE_MAX = 4096

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
