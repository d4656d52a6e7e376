"""Ranking: candidates by FTS5 ``bm25``, re-scored with BM25F (:class:`_Scorer`), and the hits
with their snippets (:func:`_rank`)."""

from __future__ import annotations

import itertools
import math
import operator
import sqlite3
import zlib
from collections.abc import Callable
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
_KEY, _OFFSET = operator.itemgetter(0), operator.itemgetter(1)
#: A term's positions as ``(note id * 8 + column index, token offset)``, by note, column
#: and offset (as the instance table lists them); a column of another name counts as the
#: body, as :attr:`_Scorer._COLS` has it.
_POSITIONS_SQL = (
    "SELECT doc * 8 + CASE col WHEN 'title' THEN 0 WHEN 'aliases' THEN 1 WHEN 'meta' THEN 2"
    " WHEN 'extra' THEN 3 ELSE 4 END, offset FROM temp.fts_where WHERE term = ?"
)
_BY_SCORE = operator.itemgetter(0)
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
MEMO_IMPACTS = 100_000
"""Most term impacts on notes (:data:`_Impact`) a :class:`_Memo` keeps, each worked out for a
note that was a candidate (all are dropped when a term's would pass it; with its offsets by
column about 300 bytes each, so about 30 MB at most)."""
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
    term's note count and positions in every note (up to :data:`MEMO_INSTANCES`), its share
    of FTS5's ``bm25`` in each of those notes (one number a note, dropped with the
    positions), its impact on each note it was a candidate for (up to :data:`MEMO_IMPACTS`),
    notes' column sizes and paths, the column averages, and the notes shown in hits (their row, the
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
        self.impacts: dict[str, dict[int, _Impact]] = {}
        self.impact_count = 0
        self.fts5: dict[str, list[tuple[int, float]]] = {}
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

    def notes_of_terms(self) -> list[set[int]] | None:
        """The notes holding each query term, when every term is one token (not a prefix)
        whose positions the memo holds or that no note holds (read into the memo here, as
        the scoring would); else ``None``. FTS5 matches such a term exactly where the
        index lists its token, so these sets are the notes its ``AND``/``OR`` queries
        match."""
        out: list[set[int]] = []
        for term in self.terms:
            if len(term.tokens) != 1 or term.prefix:
                return None
            if self._doc_count(term) == 0:
                out.append(set())
                continue
            known = self.memo.postings.get(term.tokens[0])
            if known is None:
                return None
            out.append(set(known))
        return out or None

    def bm25_order(self) -> list[tuple[float, int]] | None:
        """FTS5's ``bm25`` (with :data:`COLUMN_WEIGHTS`) of every note matching any query
        term, best first, as ``(score, note id)``, computed here as FTS5 computes it (the
        same operations in the same order, so the same doubles; ``fts5_aux.c``,
        ``fts5Bm25Function``) from the positions and sizes the memo holds: ``None`` unless
        :meth:`notes_of_terms` knows every term's notes. Notes with equal scores come in no
        particular order (the caller checks for ties where order matters)."""
        memo = self.memo
        averages = memo.averages
        ncols = len(COLUMN_WEIGHTS)
        if self.notes_of_terms() is None or not averages or len(averages) < 1 + ncols:
            return None
        n_rows = averages[0]
        if n_rows <= 0:
            return None
        avgdl = float(sum(averages[1 : 1 + ncols])) / float(n_rows)
        acc: dict[int, float] = {}
        for term in self.terms:
            tok = term.tokens[0]
            known = memo.postings.get(tok)
            if not known:
                continue
            contrib = memo.fts5.get(tok)
            if contrib is None:
                contrib = memo.fts5[tok] = self._bm25_parts(known, self._doc_count(term), avgdl)
            for rid, part in contrib:
                acc[rid] = acc.get(rid, 0.0) + part
        return sorted(((sc, rid) for rid, sc in acc.items()), key=_BY_SCORE, reverse=True)

    def _bm25_parts(
        self, known: dict[int, list[tuple[int, list[int]]]], n_hit: int, avgdl: float
    ) -> list[tuple[int, float]]:
        """One term's share of FTS5's ``bm25`` in each note holding it."""
        memo = self.memo
        n_rows = memo.averages[0] if memo.averages else 0
        idf = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
        if idf <= 0.0:
            idf = 1e-6
        missing = [rid for rid in known if rid not in memo.sizes]
        if missing:
            if len(memo.sizes) + len(missing) > MEMO_NOTES:
                memo.sizes.clear()
                memo.paths.clear()
                missing = list(known)
            more = ",".join(str(int(r)) for r in missing)
            for rid, sz in self.db.execute(f"SELECT id, sz FROM fts_docsize WHERE id IN ({more})"):
                memo.sizes[rid] = _varints(bytes(sz))
        k1, b = 1.2, 0.75  # FTS5's own
        out: list[tuple[int, float]] = []
        for rid, cols in known.items():
            freq = 0.0
            for col, offs in cols:
                freq += COLUMN_WEIGHTS[col] * len(offs)  # whole numbers: exact in any order
            d = float(sum(memo.sizes.get(rid, ())))
            out.append((rid, idf * ((freq * (k1 + 1.0)) / (freq + k1 * (1 - b + b * d / avgdl)))))
        return out

    def _remember_positions(self, tok: str, instances: int) -> None:
        """Read every position of ``tok`` (``instances`` of them) into the memo, by note, each
        note's columns in order."""
        memo = self.memo
        if memo.instances + instances > MEMO_INSTANCES:
            memo.postings.clear()
            memo.impacts.clear()
            memo.impact_count = 0
            memo.fts5.clear()
            memo.instances = 0
        by_doc: dict[int, list[tuple[int, list[int]]]] = {}
        # two small ints a row, the column's index worked out in SQLite: no column name
        # made a str and looked up per position (a quarter less time than three columns)
        rows = self.db.execute(_POSITIONS_SQL, (tok,)).fetchall()
        for key, group in itertools.groupby(rows, key=_KEY):
            by_doc.setdefault(key >> 3, []).append((key & 7, list(map(_OFFSET, group))))
        memo.postings[tok] = by_doc
        memo.instances += len(rows)

    def _per_note(
        self,
        term: _QueryTerm,
        ids: str,
        candidates: list[int],
        idf: float,
        lengths: Callable[[int], list[float]],
        avg_len: list[float],
    ) -> tuple[dict[int, _Impact], bool]:
        """The term's :class:`_Impact` on each candidate note holding it (in note id order),
        and whether its offsets are known (a one-token term: for proximity). A term whose
        positions the memo holds is read from there, and each note's impact is kept in the
        memo (valid for the index state, like the positions it comes from); any other term
        is read from the index for these candidates."""
        memo = self.memo
        tok = term.tokens[0]
        known = memo.postings.get(tok) if len(term.tokens) == 1 else None
        if known is not None and not term.prefix:
            if memo.impact_count + len(candidates) > MEMO_IMPACTS:
                memo.impacts.clear()
                memo.impact_count = 0
            kept = memo.impacts.get(tok)
            if kept is None:
                kept = memo.impacts[tok] = {}
            out: dict[int, _Impact] = {}
            for rid in sorted(candidates):  # as the table lists them: by note, column
                got = kept.get(rid)
                if got is None:
                    cols = known.get(rid)
                    if cols is None:
                        continue
                    merged: dict[int, list[int]] = {}
                    for col, offs in cols:
                        have = merged.get(col)
                        # the memo's lists are shared: never extended in place
                        merged[col] = offs if have is None else have + offs
                    counts = {col: len(offs) for col, offs in merged.items()}
                    got = kept[rid] = _impact(counts, merged, idf, lengths(rid), avg_len)
                    memo.impact_count += 1
                out[rid] = got
            return out, True
        counts_of: dict[int, dict[int, int]] = {}
        offsets_of: dict[int, dict[int, list[int]]] = {}
        single = len(term.tokens) == 1 and not term.prefix
        for (rid, col), cnt in self._freqs(term, ids, offsets_of).items():
            counts_of.setdefault(rid, {})[col] = cnt
        return {
            rid: _impact(counts, offsets_of.get(rid), idf, lengths(rid), avg_len)
            for rid, counts in counts_of.items()
        }, single

    def _freqs(
        self, term: _QueryTerm, ids: str, offsets_of: dict[int, dict[int, list[int]]]
    ) -> dict[tuple[int, int], int]:
        """``(note id, column) -> occurrences`` of the term among the notes ``ids``, read from
        the index, by note and column; for a one-token term each note's column offsets are
        put in ``offsets_of`` (for proximity)."""
        per_token: list[dict[tuple[int, int], int]] = []
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
                    c = self._COLS.get(col, 4)
                    offs = [r[2] for r in group]
                    cols = offsets_of.setdefault(doc, {})
                    have = cols.get(c)
                    if have is None:
                        cols[c] = offs
                    else:
                        have.extend(offs)
                return {
                    (rid, c): len(o) for rid, cols in offsets_of.items() for c, o in cols.items()
                }
            for doc, col, cnt in self.db.execute(
                f"SELECT doc, col, count(*) FROM temp.fts_where WHERE {where}"
                f" AND doc IN ({ids}) GROUP BY doc, col",
                args,
            ):
                got[(doc, self._COLS.get(col, 4))] = cnt
            per_token.append(got)
        if not per_token:
            return {}
        if len(per_token) == 1:
            return per_token[0]
        # a phrase of pairs: as often as its rarest pair
        keys = set(per_token[0]).intersection(*per_token[1:])
        return {k: min(p[k] for p in per_token) for k in keys}

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

        def lengths(rid: int) -> list[float]:
            size = sizes.get(rid)
            return [size[col] if size and len(size) > col else avg_len[col] for col in range(ncols)]

        k1 = BM25_K1
        scores = dict.fromkeys(candidates, 0.0)
        title_hits: dict[int, int] = {}
        title_idf: dict[int, float] = {}
        matched: dict[int, int] = {}
        usable = 0
        previous: dict[int, _Impact] | None = None
        previous_idf = 0.0
        for term in self.terms:
            if not term.tokens:
                continue
            usable += 1
            n = self._doc_count(term)
            idf = math.log(1.0 + (n_docs - n + 0.5) / (n + 0.5))
            per, positioned = self._per_note(term, ids, candidates, idf, lengths, avg_len)
            pidf = (idf + previous_idf) / 2.0
            for rid, (bm, tcnt, alias, offsets) in per.items():
                if previous and offsets:
                    before = previous.get(rid)
                    if before is not None and before[3]:
                        near = _near(before[3], offsets)
                        if near:
                            scores[rid] += PROXIMITY_WEIGHT * pidf * near * (k1 + 1.0) / (near + k1)
                if tcnt:
                    title_hits[rid] = title_hits.get(rid, 0) + tcnt
                    title_idf[rid] = title_idf.get(rid, 0.0) + idf
                if alias:
                    scores[rid] += ALIAS_BONUS * idf
                matched[rid] = matched.get(rid, 0) + 1
                scores[rid] += bm
            previous = per if positioned else None
            previous_idf = idf
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


#: A term's share of a note's score, worked out once per note and index state: the saturated
#: BM25F part, its occurrences in the title, whether an alias holds it, and its token offsets
#: by column (``None`` for a term of several tokens or a prefix: no proximity).
_Impact = tuple[float, int, bool, "dict[int, list[int]] | None"]


def _impact(
    counts: dict[int, int],
    offsets: dict[int, list[int]] | None,
    idf: float,
    length: list[float],
    avg_len: list[float],
) -> _Impact:
    """BM25F of one term in one note: each column's count (``counts``, in the index's column
    order) divided by ``1 - b + b * length / average length``, weighted, summed, and
    saturated with ``k1``, times ``idf``."""
    b, k1 = BM25_B, BM25_K1
    wtf = 0.0
    for col, cnt in counts.items():
        norm = 1.0 - b + b * length[col] / avg_len[col]
        wtf = wtf + COLUMN_WEIGHTS[col] * cnt / norm
    return idf * wtf * (k1 + 1.0) / (wtf + k1), counts.get(0, 0), 1 in counts, offsets


def _near(first: dict[int, list[int]], second: dict[int, list[int]]) -> float:
    """How often, in one note, the second term follows the first within
    :data:`PROXIMITY_WINDOW` tokens in one column, weighted by the column's weight (summed in
    the second term's column order)."""
    out = 0.0
    for col, offs in second.items():
        before = first.get(col)
        if not before:
            continue
        # how many of the second term's offsets follow one of the first's closely enough
        # (a term's offsets in a column are distinct), from whichever side is shorter
        if len(before) <= len(offs):
            after = {o + d for o in before for d in _STEPS}
            n = len(after.intersection(offs))
        else:  # the second's offsets that some step back lands on one of the first's
            first_at = set(before)
            n = len({o + d for d in _STEPS for o in first_at.intersection([x - d for x in offs])})
        if n:
            out = out + COLUMN_WEIGHTS[col] * n
    return out


def _best_others(
    ordered: list[tuple[float, int]] | None, top: int, have: set[int], most: int
) -> list[int] | None:
    """The notes FTS5 would answer for the ``OR`` query ``LIMIT top`` that are not in
    ``have``, at most ``most`` of them, in any order, from ``ordered`` (its ``bm25`` order,
    :meth:`_Scorer.bm25_order`); ``None`` when that is unknown or when equal scores straddle
    either cut (FTS5's order among equal scores decides then)."""
    if ordered is None:
        return None
    if len(ordered) > top and ordered[top - 1][0] == ordered[top][0]:
        return None
    others = [entry for entry in ordered[:top] if entry[1] not in have]
    if len(others) > most and others[most - 1][0] == others[most][0]:
        return None
    return [rid for _score, rid in others[:most]]


def _count(db: sqlite3.Connection, count_sql: str, match: str) -> int:
    return int(db.execute(count_sql, (match,)).fetchone()[0])


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
    scorer = _Scorer(db, qterms, memo)
    notes = scorer.notes_of_terms()
    every = set.intersection(*notes) if notes is not None else None
    if every is not None and len(every) < depth:
        # fewer notes hold every term than are re-scored: all of them, in any order (the
        # ranking below orders them completely), without asking FTS5
        candidates = sorted(every)
    else:
        candidates = [rid for (rid,) in db.execute(rank_sql, (q_and, depth))]
    if len(candidates) < depth:
        total = len(candidates)
    else:
        total = len(every) if every is not None else _count(db, count_sql, q_and)
    if total < limit and len(terms) > 1:
        # too few notes hold every term: notes holding some of them compete too
        q_or = fts_query(terms, "OR")
        have = set(candidates)
        more = _best_others(scorer.bm25_order(), depth + len(candidates), have, depth)
        if more is None:  # FTS5 orders them (the memo lacks a term, or scores tie)
            more = [
                rid
                for (rid,) in db.execute(rank_sql, (q_or, depth + len(candidates)))
                if rid not in have
            ][:depth]
        candidates += more
        total = len(set().union(*notes)) if notes is not None else _count(db, count_sql, q_or)
    elif len(terms) > 1:
        # notes holding every term fill the limit, but a note holding some of them matches
        # too: the total counts it, so `complete` never hides it (limit 20 and 21 agree)
        union = len(set().union(*notes)) if notes is not None else None
        total = union if union is not None else _count(db, count_sql, fts_query(terms, "OR"))
    scored = scorer.score(candidates)
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
