"""Hybrid ranking: the keyword ranking (BM25F) and the vector ranking (best chunk per note)
fused by weighted reciprocal rank.

``score(note) = keyword / (k + keyword rank) + vector / (k + vector rank)`` (a ranking the
note is absent from adds nothing). Ranks, not raw scores, are fused, so neither side's scale
matters, and a long note gets no more from the vector side than its single best section.
The weights in :data:`FUSION` were tuned on the tuning half of the question set in
``benchmarks/questions/`` (``benchmarks/eval_recall.py --tune``) and are reported on the
other half.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["FUSION", "Fusion", "fuse"]


@dataclass(frozen=True)
class Fusion:
    """Weights of the fused ranking and how deep each side is read."""

    keyword: float = 1.0
    vector: float = 1.0
    k: float = 60.0
    depth: int = 50


#: The tuned weights (see the module docstring).
FUSION = Fusion(keyword=1.0, vector=1.0, k=60.0, depth=50)


def fuse(
    keyword: Sequence[str], vector: Sequence[str], fusion: Fusion = FUSION
) -> list[tuple[str, float]]:
    """Paths ranked by fused score, best first (ties: keyword rank, then path)."""
    scores: dict[str, float] = {}
    for rank, path in enumerate(keyword[: fusion.depth], 1):
        scores[path] = scores.get(path, 0.0) + fusion.keyword / (fusion.k + rank)
    for rank, path in enumerate(vector[: fusion.depth], 1):
        scores[path] = scores.get(path, 0.0) + fusion.vector / (fusion.k + rank)
    kw_rank = {p: i for i, p in enumerate(keyword)}
    return sorted(scores.items(), key=lambda kv: (-kv[1], kw_rank.get(kv[0], len(kw_rank)), kv[0]))
