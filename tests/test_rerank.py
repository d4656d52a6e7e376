"""Reranking a recall's first hits (goat_core/filestore/search/_rerank.py): only the first
``RERANK_DEPTH`` move, each position keeps its score, ties keep the ranking's order, and a
reranker's answer that is not one finite number per text is refused whole."""

from __future__ import annotations

import pytest

from goat_core.filestore.search import (
    RERANK_CHARS,
    RERANK_DEPTH,
    SearchHit,
    checked_scores,
    rerank_text,
    reranked,
)


def _hits(n: int) -> list[SearchHit]:
    return [SearchHit(f"n{i:02}.md", f"N{i}", float(100 - i), f"snippet {i}") for i in range(n)]


def test_only_the_first_hits_move_and_each_position_keeps_its_score() -> None:
    assert RERANK_DEPTH == 20
    hits = _hits(RERANK_DEPTH + 7)
    scores = [float(i % 4) for i in range(RERANK_DEPTH)]  # ties: 3 at 3, 7, 11, 15, 19
    out = reranked(hits, scores)
    top = [h.path for h in out[:RERANK_DEPTH]]
    assert top[:5] == ["n03.md", "n07.md", "n11.md", "n15.md", "n19.md"]  # ties in order
    assert sorted(top) == [h.path for h in hits[:RERANK_DEPTH]]
    assert out[RERANK_DEPTH:] == hits[RERANK_DEPTH:]  # the rest: untouched, in order
    assert [h.score for h in out] == [h.score for h in hits]
    moved = out[0]
    assert (moved.title, moved.snippet) == ("N3", "snippet 3")  # only the score changes


def test_fewer_hits_than_the_depth() -> None:
    hits = _hits(3)
    assert [h.path for h in reranked(hits, [0.1, 0.9, 0.5])] == ["n01.md", "n02.md", "n00.md"]


@pytest.mark.parametrize(
    ("scores", "error"),
    [
        ([1.0], "1 scores for 2 texts"),
        ([1.0, float("nan")], "not finite"),
        ([1.0, float("inf")], "not finite"),
        ([1.0, True], "a score of type bool"),
        ([1.0, "2"], "a score of type str"),
        ([1.0, None], "a score of type NoneType"),
        (3.0, "not a sequence"),
        ({0.5: "a", 1.5: "b"}, "dict, not a sequence"),
        ("12", "str, not a sequence"),
    ],
)
def test_scores_that_are_not_one_finite_number_per_text_are_refused(
    scores: object, error: str
) -> None:
    with pytest.raises(ValueError, match=error):
        checked_scores(scores, 2)


def test_scores_of_any_numeric_sequence_become_floats() -> None:
    assert checked_scores((1, 2.5), 2) == [1.0, 2.5]
    np = pytest.importorskip("numpy")
    assert checked_scores(np.array([0.5, -1.0], dtype=np.float32), 2) == [0.5, -1.0]


def test_a_reranker_reads_the_title_then_the_body_cut() -> None:
    assert rerank_text("Pie", "  An apple pie.\n") == "Pie\n\nAn apple pie."
    assert len(rerank_text("T", "x" * 5000)) == RERANK_CHARS
