"""Ranking: candidates by FTS5 ``bm25``, re-scored with BM25F (:class:`_Scorer`), and the hits
with their snippets (:func:`_rank`)."""

from __future__ import annotations

import itertools
import math
import operator
import sqlite3
import zlib
from dataclasses import dataclass
from typing import ClassVar

from goat_core.filestore.search._query import _QueryTerm, fts_query
from goat_core.filestore.search._records import SearchHit, SearchResults
from goat_core.filestore.search._snippets import (
    Snippet,
    _head,
    _Mark,
    _Prepared,
    _snippet,
    _snippet_of,
)

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


_DOC_COL = operator.itemgetter(0, 1)
_STEPS = range(1, PROXIMITY_WINDOW + 1)


def _varints(blob: bytes) -> list[int]:
    """SQLite varints (as FTS5 stores its sizes): 7 bits a byte, high bit set on all but the
    last, a ninth byte giving 8 bits."""
    if blob.isascii():  # every value below 128: one byte each
        return list(blob)
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


@dataclass
class _Scored:
    scores: dict[int, float]
    title_terms: dict[int, int]
    paths: dict[int, str]

    def order(self, rid: int) -> tuple[float, int, str, str]:
        """Sort key: score, then query terms in the title (both descending), then path."""
        path = self.paths.get(rid, "")
        return (-self.scores.get(rid, 0.0), -self.title_terms.get(rid, 0), path.casefold(), path)


MEMO_INSTANCES = 500_000
"""Most term positions a :class:`_Memo` keeps (all are dropped when a term would pass it); a
term with more positions than a hundredth of this is read for its candidates only, every
time (reading all its positions would cost more than the memo saves)."""
MEMO_NOTES = 50_000
"""Most notes whose sizes and paths a :class:`_Memo` keeps (all are dropped past it)."""
WORD_INDEX_SHOWS = 8
"""How many times a kept note is shown before its word index is built. Building one costs
about as much as 12-20 snippets cut by scanning save against looking words up (measured on the
obsidian-help-en vault: 0.67 ms a note against 85-115 us a snippet scanned, 52-58 us looked
up), so only a note shown often gets one."""
MEMO_SHOWN_CHARS = 1_000_000
"""Most characters of the bodies of shown notes a :class:`_Memo` keeps ready for snippets
(all are dropped when one more would pass it). With the folded copy and the word index a kept
body takes about 15 bytes a character (measured on the obsidian-help-en vault, 0.7 million
characters in all: 10.6 MB), so about 15 MB at most."""


class _Memo:
    """What earlier searches read from one index that does not depend on the query: each
    term's note count and positions in every note (up to :data:`MEMO_INSTANCES`), notes'
    column sizes and paths, the column averages, and the notes shown in hits (their row, the
    body ready for snippets: :class:`_Prepared`, its word index built once the note has been
    shown :data:`WORD_INDEX_SHOWS` times). Valid for one state of the index: the owner calls
    :meth:`valid_for` with a key that changes whenever the index may have (another
    connection's commit, this connection's own writes, a reopened file), which empties it."""

    def __init__(self) -> None:
        self.key: object = None
        self.clear()

    def clear(self) -> None:
        self.doc_counts: dict[str, int] = {}
        self.postings: dict[str, dict[int, list[tuple[int, list[int]]]]] = {}
        self.instances = 0
        self.sizes: dict[int, list[int]] = {}
        self.paths: dict[int, str] = {}
        self.averages: list[int] | None = None
        self.shown: dict[int, tuple[str, str, str, str, str, _Prepared]] = {}
        self.shown_chars = 0

    def valid_for(self, key: object) -> None:
        if key != self.key:
            self.clear()
            self.key = key


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

    def __init__(
        self, db: sqlite3.Connection, terms: list[_QueryTerm], memo: _Memo | None = None
    ) -> None:
        self.db = db
        self.terms = terms
        self.memo = memo if memo is not None else _Memo()

    def _doc_count(self, term: _QueryTerm) -> int:
        if len(term.tokens) == 1 and not term.prefix:
            tok = term.tokens[0]
            memo = self.memo
            got = memo.doc_counts.get(tok)
            if got is None:
                row = self.db.execute(
                    "SELECT doc, cnt FROM temp.fts_terms WHERE term = ?", (tok,)
                ).fetchone()
                got = int(row[0]) if row else 0
                memo.doc_counts[tok] = got
                if row and tok not in memo.postings and row[1] * 100 <= MEMO_INSTANCES:
                    self._remember_positions(tok, int(row[1]))
            return got
        row = self.db.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", (term.expr,))
        return int(row.fetchone()[0])

    def _remember_positions(self, tok: str, instances: int) -> None:
        """Read every position of ``tok`` (``instances`` of them) into the memo, by note, each
        note's columns in order."""
        memo = self.memo
        if memo.instances + instances > MEMO_INSTANCES:
            memo.postings.clear()
            memo.instances = 0
        by_doc: dict[int, list[tuple[int, list[int]]]] = {}
        rows = self.db.execute(
            "SELECT doc, col, offset FROM temp.fts_where WHERE term = ?", (tok,)
        ).fetchall()
        for (doc, col), group in itertools.groupby(rows, key=_DOC_COL):
            by_doc.setdefault(doc, []).append((self._COLS.get(col, 4), [r[2] for r in group]))
        memo.postings[tok] = by_doc
        memo.instances += len(rows)

    def _freqs(
        self, term: _QueryTerm, ids: str, candidates: list[int]
    ) -> tuple[dict[tuple[int, int], int], dict[tuple[int, int], list[int]]]:
        """``(note id, column) -> occurrences`` of the term among the notes ``ids``, and for a
        one-token term ``(note id, column) -> token offsets`` (for proximity); from the memo
        when it holds the term's positions."""
        per_token: list[dict[tuple[int, int], int]] = []
        offsets: dict[tuple[int, int], list[int]] = {}
        known = self.memo.postings.get(term.tokens[0]) if len(term.tokens) == 1 else None
        if known is not None and not term.prefix:
            for rid in sorted(set(candidates)):  # as the table lists them: by note, column
                for col, offs in known.get(rid, ()):
                    key = (rid, col)
                    have = offsets.get(key)
                    # the memo's lists are shared: never extended in place
                    offsets[key] = offs if have is None else have + offs
            return {k: len(v) for k, v in offsets.items()}, offsets
        for tok in term.tokens:
            args: tuple[str, ...]
            if term.prefix:
                where, args = "term >= ? AND term < ?", (tok, tok + "\U0010ffff")
            else:
                where, args = "term = ?", (tok,)
            got: dict[tuple[int, int], int] = {}
            if len(term.tokens) == 1 and not term.prefix:
                rows = self.db.execute(
                    f"SELECT doc, col, offset FROM temp.fts_where WHERE {where} AND doc IN ({ids})",
                    args,
                ).fetchall()
                # rows come grouped by note and column; a key seen again is merged all the same
                for (doc, col), group in itertools.groupby(rows, key=_DOC_COL):
                    key = (doc, self._COLS.get(col, 4))
                    offs = [r[2] for r in group]
                    have = offsets.get(key)
                    if have is None:
                        offsets[key] = offs
                    else:
                        have.extend(offs)
                return {k: len(v) for k, v in offsets.items()}, offsets
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
            # how many of the second term's offsets follow one of the first's closely enough
            # (a term's offsets in a column are distinct), from whichever side is shorter
            if len(before) <= len(offs):
                after = {o + d for o in before for d in _STEPS}
                n = len(after.intersection(offs))
            else:
                first_at = set(before)
                n = sum(1 for o in offs if any(o - d in first_at for d in _STEPS))
            if n:
                rid, col = key
                out[rid] = out.get(rid, 0.0) + COLUMN_WEIGHTS[col] * n
        return out

    def score(self, candidates: list[int]) -> _Scored:
        out = _Scored(scores={}, title_terms={}, paths={})
        if not candidates:
            return out
        db = self.db
        memo = self.memo
        ids = ",".join(str(int(r)) for r in candidates)
        averages = memo.averages
        if averages is None:
            avg_row = db.execute("SELECT block FROM fts_data WHERE id = 1").fetchone()
            averages = memo.averages = _varints(bytes(avg_row[0])) if avg_row else []
        n_docs = averages[0] if averages else 0
        ncols = len(COLUMN_WEIGHTS)
        if n_docs <= 0 or len(averages) < 1 + ncols:
            n_docs = max(n_docs, db.execute("SELECT count(*) FROM docs").fetchone()[0], 1)
            avg_len = [1.0] * ncols
        else:
            avg_len = [max(x / n_docs, 1.0) for x in averages[1 : 1 + ncols]]
        missing = [r for r in candidates if r not in memo.paths]
        if missing:
            if len(memo.paths) + len(missing) > MEMO_NOTES:
                memo.sizes.clear()
                memo.paths.clear()
                missing = list(candidates)
            more = ",".join(str(int(r)) for r in missing)
            for rid, sz in db.execute(f"SELECT id, sz FROM fts_docsize WHERE id IN ({more})"):
                memo.sizes[rid] = _varints(bytes(sz))
            for rid, path in db.execute(f"SELECT id, path FROM docs WHERE id IN ({more})"):
                memo.paths[rid] = path
        sizes = memo.sizes
        out.paths = {rid: memo.paths[rid] for rid in candidates if rid in memo.paths}
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
            freqs, offsets = self._freqs(term, ids, candidates)
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


def _marks(qterms: list[_QueryTerm]) -> list[_Mark]:
    """What a snippet highlights for each query term."""
    return [_Mark(t.text, t.tokens[0] if len(t.tokens) == 1 else None, t.spaceless) for t in qterms]


def _rank(
    db: sqlite3.Connection,
    terms: list[str],
    qterms: list[_QueryTerm],
    limit: int,
    *,
    snippets: bool = True,
    memo: _Memo | None = None,
) -> SearchResults:
    """The top ``limit`` hits for ``terms`` (``qterms``: the same terms with their index
    tokens), read inside the caller's read transaction on ``db`` (which has the
    ``temp.fts_terms`` and ``temp.fts_where`` vocabulary tables); ``memo``: what earlier
    searches read, valid for the state of the index this transaction reads."""
    w = ", ".join(str(x) for x in COLUMN_WEIGHTS)
    rank_sql = f"SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY bm25(fts, {w}) LIMIT ?"
    count_sql = "SELECT count(*) FROM fts WHERE fts MATCH ?"
    depth = max(limit, RERANK_DEPTH)
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
    scored = _Scorer(db, qterms, memo).score(candidates)
    ranked = sorted(candidates, key=scored.order)
    marks = _marks(qterms)
    hits: list[SearchHit] = []
    if not snippets:
        top = ranked[:limit]
        found = dict(
            (rid, (path, title))
            for rid in top
            for path, title in db.execute("SELECT path, title FROM docs WHERE id = ?", (rid,))
        )
        for rid in top:
            if rid in found:
                path, title = found[rid]
                hits.append(SearchHit(path, title, scored.scores.get(rid, 0.0), ""))
        return SearchResults(hits=hits, total=total, complete=total <= len(hits))
    memo = memo if memo is not None else _Memo()
    for rid in ranked[:limit]:
        shown = _shown(db, memo, rid)
        if shown is None:
            continue
        path, title, aliases, meta, extra, body = shown
        cut = (
            _snippet_of(body, marks)
            or _snippet(meta, marks)
            or _snippet(extra, marks)
            or _snippet(aliases, marks)
            or Snippet(_head(body.text or meta or title))
        )
        score = scored.scores.get(rid, 0.0)
        hits.append(SearchHit(path, title, score, cut.text, cut.spans))
    return SearchResults(hits=hits, total=total, complete=total <= len(hits))


def _shown(
    db: sqlite3.Connection, memo: _Memo, rid: int
) -> tuple[str, str, str, str, str, _Prepared] | None:
    """Path, title, aliases, meta, extra and the prepared body of note ``rid``, from the memo
    when an earlier search of this index state showed it; its word index is built when it is
    shown the :data:`WORD_INDEX_SHOWS`-th time (until then its snippets are cut by scanning). A
    note longer than :data:`MEMO_SHOWN_CHARS` is read each time and never kept."""
    got = memo.shown.get(rid)
    if got is None:
        row = db.execute(
            "SELECT path, title, aliases, meta, extra, body FROM docs WHERE id = ?", (rid,)
        ).fetchone()
        if row is None:
            return None
        path, title, aliases, meta, extra, blob = row
        body = _Prepared(zlib.decompress(blob).decode("utf-8", "surrogatepass"))
        got = (path, title, aliases, meta, extra, body)
        if len(body.text) > MEMO_SHOWN_CHARS:
            return got  # never kept (nor its word index built): alone it passes the bound
        if memo.shown_chars + len(body.text) > MEMO_SHOWN_CHARS:
            memo.shown.clear()
            memo.shown_chars = 0
        memo.shown[rid] = got
        memo.shown_chars += len(body.text)
    body = got[5]
    body.shows += 1
    if body.shows == WORD_INDEX_SHOWS:
        body.index_words()
    return got
