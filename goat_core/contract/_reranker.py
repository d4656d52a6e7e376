"""What a reranker plugin declares (:class:`RerankerSpec`) and what its factory returns
(:class:`Reranker`).

A reranker scores a query against candidate texts, as a cross-encoder does. A folder store
bound with ``--set reranker=NAME`` reorders the first ``RERANK_DEPTH`` (20) notes of each
recall by these scores (goat_core/filestore/search/_rerank.py). The rules are the
embedders' (docs/design.md, Reads and truth):

- At run time a reranker connects nowhere: its weights are on disk (inside an installed
  package, or in its folder under the GOAT home), checked when the factory loads them.
- Declaring one loads nothing; the store loads it on its worker thread at its first
  reranked recall.
- A reranker that is not installed, or whose weights are not on disk, is refused at bind.
- One that fails at recall time leaves the recall in its unreranked order, with the reason
  in ``degraded``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable


@runtime_checkable
class Reranker(Protocol):
    """A loaded model. :meth:`rerank` is synchronous and may be called from a store's worker
    thread."""

    def rerank(self, query: str, texts: Sequence[str]) -> Sequence[float]:
        """One relevance score per text, higher is better.

        :param query: the user's query text.
        :param texts: one candidate note each: its title, a blank line, then its body, cut at
            ``RERANK_CHARS`` (2,000) characters.
        :returns: ``len(texts)`` finite numbers (a list or a 1-D NumPy array). Their scale
            is the model's own; only their order is used.
        """
        ...


@dataclass(frozen=True)
class RerankerSpec:
    """One reranker a plugin offers (returned by ``goat_register_rerankers``).

    :param name: what ``--set reranker=NAME`` names (lower case, ``[a-z0-9._-]``).
    :param languages: languages it is meant for (ISO codes; ``("en",)``, or many).
    :param source: where the weights come from, e.g. ``package some-model`` or a URL.
    :param factory: ``factory(cache_dir) -> Reranker``; loads the weights from disk only
        (verifying their sha256) and raises :class:`~goat_core.errors.ProviderUnavailable`
        when they are missing or do not match. ``cache_dir`` is this reranker's folder
        under the GOAT home (:func:`reranker_cache_dir`).
    :param available: ``available(cache_dir) -> bool``: the weights are on disk (no loading).
    :param description: one line saying what it is.
    """

    name: str
    languages: tuple[str, ...]
    source: str
    factory: Callable[[Path], Reranker] = field(repr=False)
    available: Callable[[Path], bool] = field(repr=False)
    description: str = ""


def reranker_cache_dir(data_dir: Path, name: str) -> Path:
    """A reranker's folder under the GOAT home: ``<GOAT data dir>/rerankers/<name>``."""
    return Path(data_dir) / "rerankers" / name
