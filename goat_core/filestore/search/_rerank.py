"""Reranking: the first :data:`RERANK_DEPTH` hits of a recall reordered by a reranker's
scores (``--set reranker=NAME``; :class:`~goat_core.contract.RerankerSpec`).

- Only the first :data:`RERANK_DEPTH` hits move; the rest stay below them in their order.
- The moved hits take the scores their positions had, so scores still fall with rank and
  keep the ranking's scale (a reranker's scale is the model's own).
- Ties in the reranker's scores keep the ranking's order.
- Scores that are not one finite number per text are refused whole (:class:`ValueError`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from goat_core.filestore.search._records import SearchHit

#: How many of a recall's first hits a reranker reorders. The answer is in the hybrid
#: ranking's first 20 for 87 of 90 held-out vault questions (benchmarks/README.md).
RERANK_DEPTH = 20

#: How long a recall waits for a reranker's scores, in seconds; past it the hits keep
#: their order, ``degraded`` says why (a cross-encoder on CPU takes about 0.5-3 s for 20).
RERANK_SECONDS = 10.0

#: How many characters of each candidate (its title, a blank line, its body) a reranker
#: reads: about 512 tokens, what MS MARCO cross-encoders take.
RERANK_CHARS = 2000


def rerank_text(title: str, body: str) -> str:
    """What a reranker reads of one note: ``title``, a blank line, ``body``, cut at
    :data:`RERANK_CHARS` characters."""
    return f"{title}\n\n{body.strip()}"[:RERANK_CHARS]


def checked_scores(scores: Any, count: int) -> list[float]:
    """A reranker's answer as ``count`` floats.

    :param scores: what ``Reranker.rerank`` returned (a sequence or a 1-D NumPy array).
    :raises ValueError: not a sequence of ``count`` finite numbers (booleans refused).
    """
    if isinstance(scores, Mapping | str | bytes):  # a dict's keys are no scores
        raise ValueError(f"scores of type {type(scores).__name__}, not a sequence")
    try:
        values = list(scores)
    except TypeError:
        raise ValueError(f"scores of type {type(scores).__name__}, not a sequence") from None
    if len(values) != count:
        raise ValueError(f"{len(values)} scores for {count} texts")
    out: list[float] = []
    for value in values:
        if isinstance(value, bool | str | bytes):
            raise ValueError(f"a score of type {type(value).__name__}")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"a score of type {type(value).__name__}") from None
        if not math.isfinite(number):
            raise ValueError(f"a score that is not finite ({number!r})")
        out.append(number)
    return out


def reranked(hits: Sequence[SearchHit], scores: Sequence[float]) -> list[SearchHit]:
    """``hits`` with the first ``len(scores)`` reordered by ``scores``, best first.

    :param hits: a ranking, best first.
    :param scores: one reranker score per hit of the first ``len(scores)`` (at most
        ``len(hits)``), higher is better.
    :returns: the reordered hits, then the rest of ``hits`` unchanged. A moved hit takes the
        score of the position it lands on.
    """
    n = len(scores)
    top = list(hits[:n])
    order = sorted(range(n), key=lambda i: (-scores[i], i))
    places = sorted((h.score for h in top), reverse=True)
    moved = [replace(top[i], score=place) for i, place in zip(order, places, strict=True)]
    return moved + list(hits[n:])
