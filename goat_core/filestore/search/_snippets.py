"""Snippets: the window of a note's original text around the best match, as plain text plus
the spans of every matched word (the term, or a word with its stem; never a dropped
stop-word): a :class:`Snippet`. :func:`highlight` marks the spans, by default with
:data:`SNIPPET_OPEN` / :data:`SNIPPET_CLOSE` (Obsidian's ``==highlight==``). Matching folds
text (NFKC, case folding, diacritics removed) as the index does."""

from __future__ import annotations

import bisect
import functools
import itertools
import re
import unicodedata
from collections.abc import Iterable
from typing import NamedTuple

SNIPPET_OPEN = "=="
SNIPPET_CLOSE = "=="
SNIPPET_WIDTH = 160
"""Approximate snippet length in characters (before marks and ellipses)."""

#: A matched word in a snippet: ``(start, end)`` character offsets into its plain text.
Span = tuple[int, int]


class Snippet(NamedTuple):
    """A snippet's plain ``text`` (whitespace runs made one space, ``…`` where cut) and the
    ``spans`` of its matched words, in order, never overlapping."""

    text: str
    spans: tuple[Span, ...] = ()


def highlight(
    text: str, spans: tuple[Span, ...] | list[Span], open_: str = "==", close: str = "=="
) -> str:
    """``text`` with each span wrapped in ``open_`` and ``close`` (a span the text already
    wraps in them, a note's own ``==highlight==``, is left as it is)."""
    out: list[str] = []
    pos = 0
    for start, end in spans:
        out.append(text[pos:start])
        if text.endswith(open_, 0, start) and text.startswith(close, end):
            out.append(text[start:end])
        else:
            out.append(open_ + text[start:end] + close)
        pos = end
    out.append(text[pos:])
    return "".join(out)


# private marks while a snippet is cut (never in its text: those characters become spaces)
_OPEN, _CLOSE = "\x02", "\x03"

# word endings a stem may carry in the text and still be highlighted ("vault" -> "vaults")
_INFLECTIONS = frozenset(
    "s es e ed d ing ings er ers ly ion ions ation ations ment ments al ness ity ive".split()
)


_FOLD_CACHE: dict[str, str] = {}


def _fold_char(ch: str) -> str:
    got = _FOLD_CACHE.get(ch)
    if got is None:
        decomposed = unicodedata.normalize("NFKD", ch)
        got = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
        if len(_FOLD_CACHE) < 65536:
            _FOLD_CACHE[ch] = got
    return got


#: ``str.translate`` table: each character seen so far, by code point, to its folded form.
_FOLD_TABLE: dict[int, str] = {c: chr(c).lower() for c in range(128)}


#: A non-ASCII character (the only ones :func:`_fold` looks at one by one).
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
#: Characters whose ``str.lower()`` depends on what surrounds them (final sigma).
_CONTEXT_LOWER = frozenset("\u03a3")


def _fold(text: str) -> tuple[str, list[int] | None]:
    """Folded text for snippet matching and, unless it is the identity, a map from each
    folded index to its original index (with one extra entry for the end).

    The folding runs in C: ``str.lower()`` for the whole text, after ``str.replace`` of each
    distinct character whose folded form is not its lower case (``é`` -> ``e``); only the
    distinct non-ASCII characters are looked at in Python. A text holding a character that
    folds to several (``ß``, ``ﬁ``) or to nothing (a combining mark) builds the offset map, in
    Python (:func:`_fold_slow`)."""
    if text.isascii():
        return text.lower(), None
    swaps: list[tuple[str, str]] = []
    for ch in set(_NON_ASCII.findall(text)):
        got = _fold_char(ch)
        if len(got) != 1 or ch in _CONTEXT_LOWER:
            return _fold_slow(text)
        if got == ch.lower():
            continue
        if got.lower() != got or _fold_char(got) != got:
            return _fold_slow(text)  # the replacement would change again
        swaps.append((ch, got))
    for ch, got in swaps:
        text = text.replace(ch, got)
    return text.lower(), None


def _fold_slow(text: str) -> tuple[str, list[int] | None]:
    """:func:`_fold` for a text holding a character that folds to several or to none (or a
    capital sigma): the runs between such characters are folded through a ``str.translate``
    table (grown with each new character), the characters themselves one by one, and the
    offset map is built from ranges."""
    uneven: set[str] = set()
    for ch in set(_NON_ASCII.findall(text)):
        if len(_fold_char(ch)) != 1:
            uneven.add(ch)
    if not uneven:
        return _translate(text), None
    parts: list[str] = []
    offsets: list[int] = []
    pos = 0
    for m in re.finditer("[" + "".join(sorted(map(re.escape, uneven))) + "]", text):
        i = m.start()
        if i > pos:
            parts.append(_translate(text[pos:i]))
            offsets.extend(range(pos, i))
        got = _fold_char(m.group())
        parts.append(got)
        offsets.extend([i] * len(got))
        pos = i + 1
    if pos < len(text):
        parts.append(_translate(text[pos:]))
        offsets.extend(range(pos, len(text)))
    offsets.append(len(text))
    return "".join(parts), offsets


def _translate(text: str) -> str:
    """``text`` folded character by character through :data:`_FOLD_TABLE`, for characters
    that each fold to exactly one (the table learns new ones; past its size limit a
    character is folded in Python)."""
    table = _FOLD_TABLE
    for ch in set(text):
        code = ord(ch)
        if code not in table:
            if len(table) >= 65536:
                return "".join(_fold_char(c) for c in text)
            table[code] = _fold_char(ch)
    return text.translate(table)


@functools.lru_cache(maxsize=4096)
def _fold_term(term: str) -> str:
    return "".join(_fold_char(c) for c in term)


class _Mark(NamedTuple):
    """What a snippet highlights for one query term: its folded text, the stem the index
    keeps for it (Porter), and whether it is a run of a spaceless script (matched anywhere,
    not as a whole word). A tuple: hashed and compared in C when a query's plan is looked up
    (:func:`_plan`)."""

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


#: Most matches taken for each of a term and its stem (the first ones in the text).
_PER_NEEDLE = 64

#: A word as :func:`_find_matches` sees one: a run of ``str.isalnum`` characters (``[^\W_]``
#: is exactly ``str.isalnum``: both test ``Py_UNICODE_ISALNUM`` per character).
_WORD = re.compile(r"[^\W_]+")
#: :data:`_WORD` as the separator of ``re.split`` that keeps what it splits on.
_WORD_SPLIT = re.compile(r"([^\W_]+)")


class _Prepared:
    """A text made ready for snippets, kept by a caller that cuts snippets from it again (the
    search memo keeps the notes it showed): ``text`` (the note's own snippet control
    characters made spaces), ``folded`` and its ``offsets`` (:func:`_fold`), and once
    :meth:`index_words` ran, ``words``: each word of ``folded`` (see :data:`_WORD`) to its
    start offsets, in order, so that matching looks words up instead of scanning the text;
    ``found``: what each needle matched in it (:func:`_find_matches`), kept for the next
    snippet looking for it (at most :data:`_NEEDLES_KEPT` needles)."""

    __slots__ = ("folded", "found", "offsets", "shows", "text", "words")

    def __init__(self, text: str) -> None:
        if _OPEN in text or _CLOSE in text:  # the note's own control characters: spaces
            text = text.replace(_OPEN, " ").replace(_CLOSE, " ")
        self.text = text
        self.folded, self.offsets = _fold(text)
        self.words: dict[str, list[int]] | None = None
        self.found: dict[tuple[str, _Mark], list[tuple[int, int]]] = {}
        self.shows = 0  # counted by the keeper

    def index_words(self) -> None:
        # split around the words (separators and words alternate, a separator first), so the
        # words' starts are running sums of the parts' lengths (in C; no match objects)
        parts = _WORD_SPLIT.split(self.folded)
        starts = itertools.islice(itertools.accumulate(map(len, parts)), 0, None, 2)
        words: dict[str, list[int]] = {}
        add = words.setdefault
        for word, start in zip(parts[1::2], starts, strict=False):  # one start more
            add(word, []).append(start)
        self.words = words


@functools.lru_cache(maxsize=4096)
def _needle_words(needle: str, ft: str, stem: str | None) -> frozenset[str]:
    """Every word :func:`_word_matches` accepts for the term ``ft`` with the stem ``stem``
    that starts with ``needle``: the term itself, the stem alone or with an ending of
    :data:`_INFLECTIONS`, and for a stem in ``i`` the stem with ``y``/``ies``/``ied`` for
    it. No other word is accepted, so these are all a word index needs to look up."""
    mark = _Mark(ft, stem)
    words = {ft}
    if stem and len(stem) >= 3:
        words.add(stem)
        words.update(stem + end for end in _INFLECTIONS)
        if stem.endswith("i"):
            words.update(stem[:-1] + end for end in ("y", "ies", "ied"))
    return frozenset(w for w in words if w.startswith(needle) and _word_matches(w, mark, ft))


#: Most needles whose matches a :class:`_Prepared` keeps (all are dropped past it).
_NEEDLES_KEPT = 64


def _find_matches(
    folded: str,
    marks: list[_Mark],
    words: dict[str, list[int]] | None = None,
    kept: dict[tuple[str, _Mark], list[tuple[int, int]]] | None = None,
) -> list[tuple[int, int, int]]:
    """``(start, end, mark index)`` of whole-word occurrences of each term or of a word with
    its stem (substring for spaceless runs), in text order; for each of a term and its stem
    the first :data:`_PER_NEEDLE` in the text. ``words``: ``folded``'s word index
    (:class:`_Prepared`), looked up for a needle of word characters (which can start a match
    only where a word starts, the match being that whole word) instead of scanning.
    ``kept``: each needle's matches in ``folded`` found before (by either way: they are
    the same), used and added to."""
    found: set[tuple[int, int, int]] = set()
    for ti, mark, ft, needle, accepted in _plan(tuple(marks)):
        key = (needle, mark)
        spans = kept.get(key) if kept is not None else None
        if spans is None:
            spans = _needle_spans(folded, mark, ft, needle, accepted, words)
            if kept is not None:
                if len(kept) >= _NEEDLES_KEPT:
                    kept.clear()
                kept[key] = spans
        found.update([(i, j, ti) for i, j in spans])
    return sorted(found)


def _needle_spans(
    folded: str,
    mark: _Mark,
    ft: str,
    needle: str,
    accepted: frozenset[str] | None,
    words: dict[str, list[int]] | None,
) -> list[tuple[int, int]]:
    """:func:`_find_matches` for one needle: ``(start, end)`` of its first
    :data:`_PER_NEEDLE` matches, looked up in the word index or scanned (:func:`_scan`)."""
    if words is None or accepted is None:
        return _scan(folded, needle, mark, ft)
    spans: list[tuple[int, int]] = []
    for word in filter(words.__contains__, accepted):
        size = len(word)
        # each word's starts are in order: the first few hold the needle's first few
        spans.extend([(i, i + size) for i in words[word][:_PER_NEEDLE]])
    if len(spans) > _PER_NEEDLE:
        spans.sort()
        del spans[_PER_NEEDLE:]
    return spans


@functools.lru_cache(maxsize=256)
def _plan(
    marks: tuple[_Mark, ...],
) -> tuple[tuple[int, _Mark, str, str, frozenset[str] | None], ...]:
    """What :func:`_find_matches` looks for, worked out once per query: for each mark its
    index, folded term and needles (the term, and its stem when long enough), each with the
    words a word index is looked up for (:func:`_needle_words`), or ``None`` where the text
    is scanned instead (a spaceless run, a needle holding other than letters and digits)."""
    out: list[tuple[int, _Mark, str, str, frozenset[str] | None]] = []
    for ti, mark in enumerate(marks):
        ft = _fold_term(mark.text)
        if not ft:
            continue
        needles = {ft}
        if mark.stem and not mark.spaceless and len(mark.stem) >= 3:
            needles.add(mark.stem[:-1] if mark.stem.endswith("i") else mark.stem)
        for needle in sorted(needles):
            if mark.spaceless or not needle.isalnum():
                out.append((ti, mark, ft, needle, None))
            else:
                out.append((ti, mark, ft, needle, _needle_words(needle, ft, mark.stem)))
    return tuple(out)


def _scan(folded: str, needle: str, mark: _Mark, ft: str) -> list[tuple[int, int]]:
    """:func:`_needle_spans` through the text: for a needle of letters and digits its
    whole-word starts are found by a regular expression (:func:`_word_start`, in C), for
    any other (and a spaceless run) occurrence by occurrence."""
    found: list[tuple[int, int]] = []
    pattern = _word_start(needle) if not mark.spaceless and needle.isalnum() else None
    if pattern is not None:
        for m in pattern.finditer(folded):
            if _word_matches(m[0], mark, ft):
                found.append((m.start(), m.end()))
                if len(found) == _PER_NEEDLE:
                    break
        return found
    n = len(folded)
    start = 0
    while len(found) < _PER_NEEDLE:
        i = folded.find(needle, start)
        if i < 0:
            break
        start = i + 1
        if mark.spaceless:
            found.append((i, i + len(needle)))
            continue
        if i > 0 and folded[i - 1].isalnum():
            continue
        j = i + len(needle)
        while j < n and folded[j].isalnum():
            j += 1
        if _word_matches(folded[i:j], mark, ft):
            found.append((i, j))
    return found


#: Needles by how many times each was scanned for (an ``int``) until it has its pattern,
#: for :func:`_word_start`.
_PATTERNS: dict[str, re.Pattern[str] | int] = {}

COMPILE_AFTER = 8
"""How many scans of a needle are done occurrence by occurrence (``str.find``) before it
gets a regular expression (:func:`_word_start`). Compiling one costs about 90 us; on the
obsidian-help-en vault a scan either way costs about 10 us a note (the pattern's matches
still go through Python one by one), so a pattern compiled on a needle's second scan (as
before) mostly cost a new query its compiles: about 0.3 ms of a 4 ms search."""


def _word_start(needle: str) -> re.Pattern[str] | None:
    """The words (see :data:`_WORD`) that start with ``needle`` (letters and digits only):
    the needle, not preceded by a word character (the look-behind follows the needle, so the
    search starts from its literal text), then the rest of the word. A word character never
    precedes an occurrence inside a word of such a needle, so these are exactly the
    occurrences the character-by-character scan keeps, none overlapping.

    ``None`` for the needle's first :data:`COMPILE_AFTER` scans (they scan occurrence by
    occurrence)."""
    got = _PATTERNS.get(needle)
    if got is None or isinstance(got, int):
        seen = 1 if got is None else got + 1
        if seen <= COMPILE_AFTER:
            if got is None and len(_PATTERNS) >= 4096:
                _PATTERNS.clear()
            _PATTERNS[needle] = seen
            return None
        lit = re.escape(needle)
        got = _PATTERNS[needle] = re.compile(lit + r"(?<![^\W_]" + lit + r")[^\W_]*")
    return got


def _snippet(text: str, marks: list[_Mark], width: int = SNIPPET_WIDTH) -> Snippet | None:
    """The window of ``text`` holding the most distinct terms, with the spans of the terms;
    ``None`` if none occurs."""
    if not text or not marks:
        return None
    return _snippet_of(_Prepared(text), marks, width)


def _snippet_of(doc: _Prepared, marks: list[_Mark], width: int = SNIPPET_WIDTH) -> Snippet | None:
    """:func:`_snippet` of a prepared text (its word index used when it has one)."""
    text, offsets = doc.text, doc.offsets
    if not text or not marks:
        return None
    matches = _find_matches(doc.folded, marks, doc.words, doc.found)
    if not matches:
        return None

    def orig(i: int) -> int:
        return i if offsets is None else offsets[min(i, len(offsets) - 1)]

    best_i, best_score = 0, -1
    reach = width * 3 // 4
    most = len({t for _s, _e, t in matches})  # no window can hold more distinct terms
    # the window from each match's start: the matches starting less than ``reach`` after it
    # (sorted by start), slid along with a count of each term inside
    inside: dict[int, int] = {}
    n, j = len(matches), 0
    for i, (s, _e, t) in enumerate(matches):
        while j < n and matches[j][0] < s + reach:
            tj = matches[j][2]
            inside[tj] = inside.get(tj, 0) + 1
            j += 1
        if len(inside) > best_score:
            best_i, best_score = i, len(inside)
            if best_score == most:
                break  # the first window holding them all wins
        left = inside[t] - 1  # the window from the next match leaves this one out
        if left:
            inside[t] = left
        else:
            del inside[t]
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
    # each match's original offsets; unfolded, those starting before the window are skipped
    # at once (they would be below)
    spans: Iterable[tuple[int, int, int]]
    if offsets is None:
        spans = itertools.islice(matches, bisect.bisect_left(matches, (lo,)), None)
    else:
        spans = ((orig(s), orig(e), t) for s, e, t in matches)
    for os_, oe, _t in spans:
        if os_ >= hi:
            break  # this and every later match (sorted by start) is past the window
        if os_ < pos or oe > hi or os_ == oe:
            continue
        out.append(text[pos:os_])
        out.append(_OPEN + text[os_:oe] + _CLOSE)
        pos = oe
    out.append(text[pos:hi])
    out.append("…" if hi < len(text) else "")
    return _unmarked(" ".join("".join(out).split()))


def _unmarked(marked: str) -> Snippet:
    """The plain text and spans of a snippet cut with the private marks."""
    plain: list[str] = []
    spans: list[Span] = []
    size = 0
    for i, part in enumerate(marked.split(_OPEN)):
        word, _, rest = part.partition(_CLOSE) if i else ("", "", part)
        if i:
            spans.append((size, size + len(word)))
            plain.append(word)
            size += len(word)
        plain.append(rest)
        size += len(rest)
    return Snippet("".join(plain), tuple(spans))


def _head(text: str, width: int = SNIPPET_WIDTH) -> str:
    flat = " ".join(text[: width * 3].split())
    if len(flat) <= width:
        return flat
    cut = flat.rfind(" ", 0, width)
    return flat[: cut if cut > width // 2 else width] + "…"
