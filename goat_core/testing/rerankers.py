"""Rerankers for testing the reranker point (``--set reranker=NAME``) without a model: each
is deterministic, loads nothing and connects nowhere.

- ``overlap`` scores a text by how many distinct words of the query it contains (words are
  runs of letters and digits, compared case-folded).
- ``reverse`` turns the order it is given upside down, so a test sees that a rerank took
  effect.
- ``failing`` loads, then raises :class:`RuntimeError` on every rerank.
- ``slow`` answers like ``reverse`` after :data:`SLOW_SECONDS` (a test lowers the store's
  deadline, ``goat_core.filestore.search.RERANK_SECONDS``, below it).
- ``absent`` has no weights on disk: binding it is refused.

Register them with ``goat_core.plugins.register_plugin(registry.pm, rerankers, "rerankers")``
(this module is the plugin), or publish the module under the ``goat_core.plugins`` entry
point group. :data:`CALLS` records each rerank, in order.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path

from goat_core.contract import Reranker, RerankerSpec
from goat_core.errors import ProviderUnavailable
from goat_core.hookspecs import hookimpl

__all__ = ["CALLS", "FAILURE", "SLOW_SECONDS", "goat_register_rerankers"]

#: ``(reranker name, query, texts)`` of each rerank made in this process, in order.
CALLS: list[tuple[str, str, tuple[str, ...]]] = []

#: The message of ``failing``'s error.
FAILURE = "the failing test reranker fails on purpose"

#: How long ``slow`` takes to answer, in seconds.
SLOW_SECONDS = 1.0

_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text)}


class _Overlap:
    def rerank(self, query: str, texts: Sequence[str]) -> Sequence[float]:
        CALLS.append(("overlap", query, tuple(texts)))
        asked = _words(query)
        return [float(len(asked & _words(t))) for t in texts]


class _Reverse:
    def rerank(self, query: str, texts: Sequence[str]) -> Sequence[float]:
        CALLS.append(("reverse", query, tuple(texts)))
        return [float(i) for i in range(len(texts))]


class _Failing:
    def rerank(self, query: str, texts: Sequence[str]) -> Sequence[float]:
        CALLS.append(("failing", query, tuple(texts)))
        raise RuntimeError(FAILURE)


class _Slow:
    def rerank(self, query: str, texts: Sequence[str]) -> Sequence[float]:
        CALLS.append(("slow", query, tuple(texts)))
        time.sleep(SLOW_SECONDS)
        return [float(i) for i in range(len(texts))]


def _absent(cache_dir: Path) -> Reranker:
    raise ProviderUnavailable(f"the weights of reranker 'absent' are not in {cache_dir}")


def _spec(name: str, model: type[Reranker], description: str) -> RerankerSpec:
    return RerankerSpec(
        name=name,
        languages=("*",),
        source="goat_core.testing.rerankers",
        factory=lambda cache_dir: model(),
        available=lambda cache_dir: True,
        description=description,
    )


@hookimpl
def goat_register_rerankers() -> list[RerankerSpec]:
    return [
        _spec("overlap", _Overlap, "test: distinct query words in the text"),
        _spec("reverse", _Reverse, "test: the order given, upside down"),
        _spec("failing", _Failing, "test: raises on every rerank"),
        _spec("slow", _Slow, "test: answers after SLOW_SECONDS"),
        RerankerSpec(
            name="absent",
            languages=("*",),
            source="goat_core.testing.rerankers",
            factory=_absent,
            available=lambda cache_dir: False,
            description="test: weights never on disk",
        ),
    ]
