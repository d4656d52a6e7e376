"""Hybrid ranking: the keyword ranking (BM25F) and the vector ranking (best chunk per note)
fused into one.

Two ways, chosen by :attr:`Fusion.mode`:

- ``"rrf"`` (weighted reciprocal rank): ``keyword / (k + keyword rank) + vector / (k + vector
  rank)``; ranks only, so neither side's scale matters, but a clear semantic margin counts
  no more than a narrow one.
- ``"cc"`` (convex combination of normalised scores): ``keyword * s_kw / max(max s_kw,
  keyword_scale) + vector * (cos - min cos) / max(max cos - min cos, vector_span)`` over each
  side's first ``depth`` candidates (a note absent from a side gets 0 from it), so the size
  of each side's lead counts.

Each side is calibrated per query by its own scores. The vector side's cosines are stretched
over their spread only when that spread reaches :attr:`Fusion.vector_span`. A narrower spread
is a weak signal, so the vector side then moves the ranking in proportion to it. On short
notes (conversation turns) the top 50 cosines often lie within 0.1-0.2 of each other.
Stretching them to the full range outvoted the keyword side: on LoCoMo's held-out
conversations MRR@10 fell from 0.52 (keyword alone) to 0.34.
Likewise the keyword side counts fully only when its best BM25F score reaches
:attr:`Fusion.keyword_scale`. A query in another language than the notes matches only stray
words, with best scores near 1; a real match scores 5-15 on the corpora measured.

A ranking the note is absent from adds nothing, and a long note gets no more from the vector
side than its single best section. A note the vector side has not embedded yet (written since
the last sync, or waiting for a background embedding) is not absent from it by meaning. So it
gets its keyword side at the weight of both sides, as if its vectors agreed with its keywords.
Without that it ranked below every note found by meaning alone, however well it matched.

:data:`FUSION` was chosen on the tuning halves of three question sets
(``benchmarks/bench_corpora.py --explore``): the Obsidian Help vault's natural questions and
its descriptions translated into French, Russian and Japanese, and LoCoMo's development
conversations. Among rules at least as good as keyword alone on every tuning
half, it has the best mean MRR@10. It is reported on the held-out halves
(``benchmarks/README.md`` has the figures and the rules tried).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Fusion:
    """Weights of the fused ranking and how deep each side is read."""

    keyword: float = 1.0
    vector: float = 1.0
    k: float = 60.0
    depth: int = 50
    mode: str = "rrf"
    #: ``"cc"`` only: the least spread of the vector scores stretched to the full range.
    vector_span: float = 0.0
    #: ``"cc"`` only: the least best keyword score that counts as a full keyword match.
    keyword_scale: float = 0.0


#: The tuned rule (see the module docstring).
FUSION = Fusion(
    keyword=0.3, vector=0.7, k=60.0, depth=50, mode="cc", vector_span=0.4, keyword_scale=6.0
)


def _normalised(
    side: Sequence[tuple[str, float]], shift: bool, least: float = 0.0
) -> dict[str, float]:
    """Scores mapped onto 0-1: ``(s - lo) / max(hi - lo, least)``, ``lo`` the least score
    when ``shift``, else 0."""
    if not side:
        return {}
    scores = [s for _, s in side]
    hi, lo = max(scores), (min(scores) if shift else 0.0)
    span = max(hi - lo, least)
    if span <= 0:
        return {p: 1.0 for p, _ in side}
    return {p: (s - lo) / span for p, s in side}


def fuse(
    keyword: Sequence[tuple[str, float]],
    vector: Sequence[tuple[str, float]],
    fusion: Fusion = FUSION,
    unembedded: Collection[str] = (),
) -> list[tuple[str, float]]:
    """Paths ranked by fused score, best first (ties: keyword rank, then path).

    :param keyword: ``(path, BM25F score)`` best first.
    :param vector: ``(path, vector score)`` best first: the cosine of the note's best chunk
        plus ``NOTE_WEIGHT`` times that of its title and description
        (``goat_core/filestore/search/_vectors.py``).
    :param unembedded: paths the vector side holds no vectors for: each keyword hit among
        them counts its keyword side with the weight of both sides (the module docstring).
    """
    kw = keyword[: fusion.depth]
    vec = vector[: fusion.depth]
    scores: dict[str, float] = {}
    both = fusion.keyword + fusion.vector
    unknown = set(unembedded)

    def weight(path: str) -> float:
        return both if path in unknown else fusion.keyword

    if fusion.mode == "cc":
        for path, s in _normalised(kw, shift=False, least=fusion.keyword_scale).items():
            scores[path] = scores.get(path, 0.0) + weight(path) * s
        for path, s in _normalised(vec, shift=True, least=fusion.vector_span).items():
            scores[path] = scores.get(path, 0.0) + fusion.vector * s
    else:
        for rank, (path, _) in enumerate(kw, 1):
            scores[path] = scores.get(path, 0.0) + weight(path) / (fusion.k + rank)
        for rank, (path, _) in enumerate(vec, 1):
            scores[path] = scores.get(path, 0.0) + fusion.vector / (fusion.k + rank)
    kw_rank = {p: i for i, (p, _) in enumerate(keyword)}
    return sorted(scores.items(), key=lambda kv: (-kv[1], kw_rank.get(kv[0], len(kw_rank)), kv[0]))
