"""The shipped fusion's per-query calibration (goat_core/filestore/search/_hybrid.py)."""

from __future__ import annotations

import dataclasses

from goat_core.filestore.search import FUSION, Fusion, fuse

OLD = Fusion(keyword=0.2, vector=0.8, depth=50, mode="cc")


def _order(
    keyword: list[tuple[str, float]], vector: list[tuple[str, float]], f: Fusion
) -> list[str]:
    return [p for p, _ in fuse(keyword, vector, f)]


def test_a_narrow_vector_spread_does_not_outvote_a_clear_keyword_lead() -> None:
    keyword = [("named", 10.0), ("other", 5.0)]
    vector = [("other", 0.60), ("named", 0.58)]  # 0.02 apart: no real semantic preference
    assert _order(keyword, vector, FUSION)[0] == "named"
    assert _order(keyword, vector, OLD)[0] == "other"  # stretched to 0-1, it used to win


def test_a_wide_vector_spread_still_decides() -> None:
    keyword = [("literal", 10.0), ("meant", 5.0)]
    vector = [("meant", 0.80), ("literal", 0.30)]
    assert _order(keyword, vector, FUSION)[0] == "meant"


def test_stray_keyword_matches_count_in_proportion_to_their_score() -> None:
    # a query in another language: its best keyword score is far below a real match's
    keyword = [("stray", 0.6)]
    vector = [("meant", 0.55), ("stray", 0.50), ("far", 0.15)]
    assert _order(keyword, vector, FUSION)[0] == "meant"
    scale_off = dataclasses.replace(FUSION, keyword_scale=0.0)
    assert _order(keyword, vector, scale_off)[0] == "stray"


def test_a_lone_side_ranks_as_it_came() -> None:
    keyword = [("a", 9.0), ("b", 4.0), ("c", 1.0)]
    assert _order(keyword, [], FUSION) == ["a", "b", "c"]
    vector = [("x", 0.7), ("y", 0.5), ("z", 0.2)]
    assert _order([], vector, FUSION) == ["x", "y", "z"]


def test_a_deeper_keyword_read_keeps_the_scores_of_the_first_depth() -> None:
    """The store reads the keyword side as deep as a recall's limit asks
    (goat_core/filestore/_store.py): notes within the first FUSION.depth keep their scores."""
    keyword = [(f"k{i}", 100.0 - i) for i in range(FUSION.depth + 30)]
    vector = [(f"k{i * 3}", 0.8 - i * 0.01) for i in range(FUSION.depth)]
    shallow = dict(fuse(keyword, vector, FUSION))
    deep = dict(fuse(keyword, vector, dataclasses.replace(FUSION, depth=FUSION.depth + 30)))
    for path, _ in keyword[: FUSION.depth]:
        assert deep[path] == shallow[path]
