"""The built ONNX graphs, cached under the embedder's folder of the GOAT home.

A graph is written atomically (a temporary file in the same folder, then a rename) and its
own sha256 is written beside it (``NAME.onnx.sha256``, after the graph). At load the graph is
used only when that sha256 matches the file; a damaged, truncated or half-written graph, or a
missing or stale ``.sha256``, is rebuilt from the verified weights.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def cached_graph(path: Path, build: Callable[[], bytes]) -> Path | bytes:
    """The graph at ``path`` when its recorded sha256 matches; else ``build()`` it, store it
    there and return the path. When the folder cannot be written, the built graph is
    returned as bytes (used from memory, built again next time; logged)."""
    sha_path = path.with_name(path.name + ".sha256")
    try:
        if path.is_file() and sha_path.is_file():
            if sha_path.read_text(encoding="ascii").strip() == _sha256(path):
                return path
            log.warning("%s does not match its recorded sha256; rebuilding it", path)
    except OSError as exc:
        log.warning("cannot read the cached graph %s (%s); rebuilding it", path, exc)
    data = build()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(path, data)
        _write_atomic(sha_path, (hashlib.sha256(data).hexdigest() + "\n").encode("ascii"))
    except OSError as exc:
        log.warning("cannot cache the built graph at %s (%s); using it from memory", path, exc)
        return data
    return path
