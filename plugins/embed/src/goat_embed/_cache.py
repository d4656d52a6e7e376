"""The built ONNX graphs, cached under the embedder's folder of the GOAT home.

A graph is written atomically (built into a temporary file in the same folder, then renamed)
and a record is written beside it (``NAME.onnx.sha256``, after the graph): the graph's own
sha256 and the key it was built for (the weights' sha256, the variant and the builder
version). A cached graph is used only when its record parses, names the expected key and
matches the file's sha256, and when the loaded graph passes the caller's check (its inputs,
outputs and a probe embedding). Anything else (a damaged, truncated or half-written graph; a
missing, stale, unreadable or foreign record; a graph that fails its check) is deleted and
rebuilt once from the verified weights; a rebuilt graph that still fails its check is a
``ProviderUnavailable``.

Temporary files are named ``.NAME.<pid>.tmp`` after the process that writes them; a load
removes those of processes that are gone (a loader killed while it built) and those older
than :data:`STALE_AFTER`.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from goat_core.errors import GoatError, ProviderUnavailable
from goat_embed._weights import file_sha256

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Seconds after which a temporary graph is stale whatever its writer (longer than a build
#: may take: the builder child is stopped after ``goat_embed._minilm.BUILD_TIMEOUT``).
STALE_AFTER = 3600.0
#: First line of a record; a record without it (such as the bare sha256 written before) is
#: rebuilt.
RECORD_VERSION = "goat-embed graph record 2"


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = _tmp(path)
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except (PermissionError, OSError):
        return True  # exists (another user's), or cannot tell: keep its file
    return True


def remove_stale(path: Path) -> list[Path]:
    """Remove the temporary files beside ``path`` (``.NAME.<pid>.tmp``, and those of its
    record) whose writer is gone or that are older than :data:`STALE_AFTER`; return them."""
    removed: list[Path] = []
    try:
        candidates = list(path.parent.glob(f".{path.name}.*.tmp"))
    except OSError:
        return removed
    now = time.time()
    for tmp in candidates:
        pid_text = tmp.name[: -len(".tmp")].rsplit(".", 1)[-1]
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        try:
            gone = not _alive(int(pid_text))
            old = now - tmp.stat().st_mtime > STALE_AFTER
            if gone or old:
                tmp.unlink(missing_ok=True)
                removed.append(tmp)
        except (OSError, ValueError, OverflowError) as exc:
            log.warning("cannot remove the stale temporary graph %s (%s)", tmp, exc)
    return removed


def _record(digest: str, key: str) -> bytes:
    return f"{RECORD_VERSION}\nkey {key}\nsha256 {digest}\n".encode("ascii")


def _record_matches(path: Path, sha_path: Path, key: str) -> bool:
    """Whether ``sha_path`` is a readable record for ``key`` whose sha256 is ``path``'s.
    Any unreadable, foreign or stale record is ``False`` (logged), never an error."""
    if not path.is_file() or not sha_path.is_file():
        return False
    try:
        raw = sha_path.read_bytes()
        if len(raw) > 4096:
            raise ValueError("record too long")
        lines = raw.decode("ascii").splitlines()
    except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        log.warning("cannot read the record of the cached graph %s (%s); rebuilding it", path, exc)
        return False
    if (
        len(lines) != 3
        or lines[0] != RECORD_VERSION
        or lines[1] != f"key {key}"
        or not lines[2].startswith("sha256 ")
    ):
        log.warning("the record of %s is not one for %s; rebuilding it", path, key)
        return False
    if lines[2][len("sha256 ") :] != file_sha256(path):
        log.warning("%s does not match its recorded sha256; rebuilding it", path)
        return False
    return True


def _discard(*paths: Path) -> None:
    for p in paths:
        try:
            p.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("cannot remove %s (%s)", p, exc)


def cached_graph(
    path: Path, key: str, build: Callable[[Path], None], load: Callable[[Path | bytes], T]
) -> T:
    """``load`` of the graph at ``path`` when its record names ``key`` and matches its
    sha256 and ``load`` accepts it; else ``build(tmp)`` writes it to a temporary file beside
    ``path``, which is renamed to ``path`` with its record, and ``load`` of it is returned.
    When the folder cannot be written, the graph is built in a temporary folder and loaded
    from memory (built again next time; logged).

    :param load: loads a graph (a file or its bytes) and checks it; any exception means the
        graph is not usable.
    :raises ProviderUnavailable: a freshly built graph fails ``load`` (its reason quoted).
    :raises GoatError: ``build`` failed.
    """
    sha_path = path.with_name(path.name + ".sha256")
    remove_stale(path)
    remove_stale(sha_path)
    try:
        matches = _record_matches(path, sha_path, key)
    except OSError as exc:
        log.warning("cannot read the cached graph %s (%s); rebuilding it", path, exc)
        matches = False
    if matches:
        try:
            return load(path)
        except Exception as exc:  # any fault of a cached file: rebuild it
            log.warning("the cached graph %s cannot be used (%s); rebuilding it", path, exc)
    _discard(path, sha_path)
    graph = _build_cached(path, sha_path, key, build)
    try:
        return load(graph)
    except GoatError:
        raise
    except Exception as exc:
        if isinstance(graph, Path):
            _discard(path, sha_path)
        raise ProviderUnavailable(
            f"the graph built at {path.name} cannot be used ({type(exc).__name__}: {exc})"
        ) from exc


def _in_memory(path: Path, build: Callable[[Path], None]) -> bytes:
    with tempfile.TemporaryDirectory(prefix="goat-minilm-") as folder:
        out = Path(folder) / path.name
        build(out)
        return out.read_bytes()


def _build_cached(
    path: Path, sha_path: Path, key: str, build: Callable[[Path], None]
) -> Path | bytes:
    tmp = _tmp(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.touch()
    except OSError as exc:
        log.warning("cannot cache the built graph at %s (%s); using it from memory", path, exc)
        return _in_memory(path, build)
    try:
        build(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        digest = file_sha256(tmp)
        os.replace(tmp, path)
        _write_atomic(sha_path, _record(digest, key))
    except OSError as exc:  # a full GOAT home, say: keep nothing half-written
        _discard(path, sha_path)
        log.warning("cannot cache the built graph at %s (%s); using it from memory", path, exc)
        return _in_memory(path, build)
    finally:
        tmp.unlink(missing_ok=True)
    return path
