"""The raw-source manifest: every ingested file stored once under ``raw/``, identified by its
original relative path and content hash (no I/O beyond the manifest file itself).

A source's ``id`` is its path under the raw folder (``docs/a/readme.md``). Two files with the
same name from different folders keep their folders (``docs/a/readme.md``,
``docs/b/readme.md``); a different file that would land on a taken id gets the first eight hex
digits of its hash before the extension (``readme.1a2b3c4d.md``). Ingesting a file whose
content hash is already stored for the same original path or the same file on disk adds
nothing. A changed file from the same place is stored as a new source and the old one is
marked ``superseded_by`` it, so pages citing the old version show as stale.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from goat_core.errors import BadInput
from goat_core.filestore import atomic_write

__all__ = ["MANIFEST_NAME", "Manifest", "Source"]

#: The manifest file inside the raw folder (a dot-file, so never a note or attachment).
MANIFEST_NAME = ".goat-wiki-manifest.json"
_VERSION = 1


@dataclass
class Source:
    """One stored source.

    :param id: path under the raw folder (POSIX, with extension).
    :param original: the path relative to what was ingested, including the ingested
        folder's own name (``docs/a/readme.md``; a single file: its name).
    :param origin: the absolute path it was read from (to tell a changed file from a new one).
    :param hash: content hash (``goat_core.filestore.etag``: 32 hex digits of SHA-256).
    :param size: bytes. :param mtime_ns: the origin's modification time when ingested.
    :param ingested: UTC ISO 8601 time of ingest.
    :param superseded_by: id of a newer version of the same origin, if one was ingested.
    """

    id: str
    original: str
    origin: str
    hash: str
    size: int
    mtime_ns: int
    ingested: str
    superseded_by: str | None = None


@dataclass
class Manifest:
    """All sources of a wiki, in ingest order."""

    sources: list[Source] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> Manifest:
        """Read the manifest; a missing file is an empty manifest.

        :raises BadInput: the file is not a manifest this version wrote.
        """
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls()
        try:
            data = json.loads(raw)
            items = data["sources"]
            sources = [Source(**item) for item in items]
        except (ValueError, KeyError, TypeError) as exc:
            raise BadInput(
                f"source manifest {path} is not readable ({type(exc).__name__}); it was not changed"
            ) from exc
        return cls(sources=sources)

    def encoded(self) -> bytes:
        """The manifest file's bytes (sorted keys, one source per list item)."""
        data: dict[str, Any] = {"version": _VERSION, "sources": [asdict(s) for s in self.sources]}
        text = json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
        return text.encode("utf-8")

    def save(self, path: Path) -> str:
        """Write the manifest atomically; returns the etag of what was written."""
        return atomic_write(path, self.encoded())

    def by_id(self) -> dict[str, Source]:
        return {s.id: s for s in self.sources}

    def find_same(self, original: str, origin: str, digest: str) -> Source | None:
        """A stored source with this content from the same original path or the same file."""
        for s in self.sources:
            if s.hash == digest and (s.original == original or s.origin == origin):
                return s
        return None

    def choose_id(self, original: str, digest: str, taken: set[str]) -> str:
        """The id for new content: ``original`` when free, else with the hash's first eight
        hex digits before the extension. ``taken``: ids and raw paths already in use
        (case-folded)."""
        if original.casefold() not in taken:
            return original
        stem, ext = posixpath.splitext(original)
        return f"{stem}.{digest[:8]}{ext}"

    def supersede(self, origin: str, new: Source) -> list[Source]:
        """Mark older current versions read from ``origin`` as superseded by ``new``."""
        marked = []
        for s in self.sources:
            if s is not new and s.origin == origin and s.superseded_by is None:
                s.superseded_by = new.id
                marked.append(s)
        return marked
