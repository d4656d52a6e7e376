"""The built ONNX graphs, cached under the embedder's folder of the GOAT home.

A graph is written atomically (built into a temporary file in the same folder, then renamed)
and its own sha256 is written beside it (``NAME.onnx.sha256``, after the graph). At load the
graph is used only when that sha256 matches the file; a damaged, truncated or half-written
graph, or a missing or stale ``.sha256``, is rebuilt from the verified weights.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
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


def cached_graph(path: Path, build: Callable[[Path], None]) -> Path | bytes:
    """The graph at ``path`` when its recorded sha256 matches; else ``build(tmp)`` writes it
    to a temporary file beside ``path``, which is then renamed to ``path``, and ``path`` is
    returned. When the folder cannot be written, the graph is built in a temporary folder and
    returned as bytes (used from memory, built again next time; logged)."""
    sha_path = path.with_name(path.name + ".sha256")
    try:
        if path.is_file() and sha_path.is_file():
            if sha_path.read_text(encoding="ascii").strip() == _sha256(path):
                return path
            log.warning("%s does not match its recorded sha256; rebuilding it", path)
    except OSError as exc:
        log.warning("cannot read the cached graph %s (%s); rebuilding it", path, exc)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.touch()
    except OSError as exc:
        log.warning("cannot cache the built graph at %s (%s); using it from memory", path, exc)
        with tempfile.TemporaryDirectory(prefix="goat-minilm-") as folder:
            out = Path(folder) / path.name
            build(out)
            return out.read_bytes()
    try:
        build(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        digest = _sha256(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    _write_atomic(sha_path, (digest + "\n").encode("ascii"))
    return path
