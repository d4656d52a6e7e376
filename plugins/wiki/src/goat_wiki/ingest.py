"""Raw sources: copying files into the raw folder once (``ingest``), the manifest with the
pages citing each source (``sources``), and reading a stored source back.

No model is called: ingesting only stores. A source is immutable once stored (mode ``0444``);
a changed file at its origin becomes a new source superseding the old one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from goat_core import filestore
from goat_core.contract import MemoryWrite
from goat_core.errors import BadInput, NotFound, PathError, Rejected
from goat_core.filestore import MISSING_ETAG, atomic_write, contain, current_etag, etag
from goat_wiki.journal import WikiJournal
from goat_wiki.layout import Layout, str_or_items
from goat_wiki.sources import MANIFEST_NAME, Manifest, Source

__all__ = ["WikiSources", "origin_changed"]

_MAX_SOURCE_BYTES = 50 * 1024 * 1024
_READ_SOURCE_CHARS = 100_000
_now = filestore.now_utc
_nfc = filestore.nfc
_sort_key = filestore.page_order


class WikiSources(WikiJournal):
    """Ingesting and reading the wiki's raw sources."""

    def _ingest(
        self,
        source: Path,
        progress: Callable[[int, int], None] | None,
        inspect: Callable[[MemoryWrite], MemoryWrite] | None = None,
    ) -> dict[str, Any]:
        """Store each file at ``source`` (a file or a folder) once in the raw folder; returns
        ``{"added": [id], "present": [id], "skipped": [{path, reason}], "sources": n}``.

        :raises NotFound, BadInput: see :meth:`_ingest_origin` and :func:`_files_at`.
        """
        origin = self._ingest_origin(source)
        files, skipped = _files_at(origin)
        added: list[str] = []
        present: list[str] = []
        with self._lock:
            self._recover()
            layout = self._ensure_files(raw=True)
            raw_dir = self._ensure_raw(layout)
            assert layout.raw is not None
            manifest_path = raw_dir / MANIFEST_NAME
            manifest = Manifest.load(manifest_path)
            taken = {s.id.casefold() for s in manifest.sources}
            total = len(files)
            for done, (path, original) in enumerate(files, start=1):
                read = _read_source(path, original, inspect)
                if isinstance(read, str):
                    skipped.append({"path": original, "reason": read})
                    continue
                st, data = read
                digest = etag(data)
                same = manifest.find_same(original, str(path), digest)
                if same is not None:
                    present.append(same.id)
                else:
                    ident = manifest.choose_id(original, digest, taken)
                    try:
                        contain(self.root, f"{layout.raw}/{ident}")
                    except PathError as exc:
                        skipped.append({"path": original, "reason": f"unsafe name ({exc.rule})"})
                        continue
                    _store_source(manifest, raw_dir, ident, path, original, data, st)
                    taken.add(ident.casefold())
                    added.append(ident)
                if progress is not None:
                    progress(done, total)
            if added:
                self._commit_ingest(layout, manifest, manifest_path, origin.name, added, present)
        return {
            "added": added,
            "present": present,
            "skipped": skipped,
            "sources": len(manifest.sources),
        }

    def _ingest_origin(self, source: Path) -> Path:
        """``source`` as an absolute path to ingest from.

        :raises NotFound: nothing is there.
        :raises BadInput: it overlaps the wiki (inside it, or holding it).
        """
        origin = Path(os.path.abspath(Path(source).expanduser()))
        if not origin.exists():
            raise NotFound(f"nothing to ingest at {origin}")
        real = os.path.realpath(origin)
        root = os.path.realpath(self.root)
        if real == root or real.startswith(root + os.sep) or root.startswith(real + os.sep):
            raise BadInput(
                f"{origin} overlaps the wiki itself; ingest sources from outside the wiki "
                "(rule source-inside-wiki)"
            )
        return origin

    def _commit_ingest(
        self,
        layout: Layout,
        manifest: Manifest,
        manifest_path: Path,
        name: str,
        added: list[str],
        present: list[str],
    ) -> None:
        """Save ``manifest`` as one journalled ``ingest`` step, its log entry listing the
        sources ``added`` and counting those already ``present``."""
        manifest_rel = f"{layout.raw}/{MANIFEST_NAME}"
        planned = {manifest_rel: etag(manifest.encoded())}

        def change() -> dict[str, str]:
            return {manifest_rel: manifest.save(manifest_path)}

        details = [f"- source: {i}" for i in added]
        if present:
            details.append(f"- already present: {len(present)}")
        self._commit("ingest", name, [], details, change, layout=layout, planned=planned)

    def _source_status(self) -> dict[str, Any]:
        scan = self._scan()
        manifest = self._manifest(scan.layout)
        cited: dict[str, list[str]] = {}
        for note in scan.notes:
            for item in str_or_items(note.data.get("sources")):
                ident = item.get("id") if isinstance(item, dict) else item
                if isinstance(ident, str):
                    cited.setdefault(self._source_ref(ident, scan.layout), []).append(note.path)
        items = [
            {
                "id": s.id,
                "original": s.original,
                "hash": s.hash,
                "size": s.size,
                "ingested": s.ingested,
                "superseded_by": s.superseded_by,
                "cited_by": sorted(cited.get(s.id, []), key=_sort_key),
            }
            for s in manifest.sources
        ]
        return {
            "raw_folder": scan.layout.raw,
            "sources": items,
            "uncited": [i["id"] for i in items if not i["cited_by"] and not i["superseded_by"]],
        }

    def _read_source(self, ref: str) -> dict[str, Any]:
        layout = self._layout()
        ident = self._source_ref(ref, layout)
        src = self._manifest(layout).by_id().get(ident)
        if src is None or layout.raw is None:
            raise NotFound(f"no ingested source {ref!r}")
        path = contain(self.root, f"{layout.raw}/{src.id}")
        data = path.read_bytes()
        text = data.decode("utf-8", "replace")
        return {
            "source": src.id,
            "hash": src.hash,
            "changed": etag(data) != src.hash,
            "text": text[:_READ_SOURCE_CHARS],
            "complete": len(text) <= _READ_SOURCE_CHARS,
        }


def origin_changed(src: Source) -> bool:
    """Whether the file a source was read from now holds other content (stat first; the
    content is hashed only when size or mtime moved). A vanished origin is not a change:
    the stored copy is the record."""
    try:
        st = os.stat(src.origin)
    except OSError:
        return False
    if st.st_size == src.size and st.st_mtime_ns == src.mtime_ns:
        return False
    try:
        return etag(Path(src.origin).read_bytes()) != src.hash
    except OSError:
        return False


def _files_at(origin: Path) -> tuple[list[tuple[Path, str]], list[dict[str, str]]]:
    """``([(path, original name)], skipped)``: the file ``origin``, or every file under the
    folder ``origin`` in sorted order, hidden names left out; a symlink is skipped.

    :raises BadInput: ``origin`` is neither a file nor a folder.
    """
    files: list[tuple[Path, str]] = []
    skipped: list[dict[str, str]] = []
    if origin.is_file():
        files.append((origin, _nfc(origin.name)))
    elif origin.is_dir():
        for folder, dirs, names in os.walk(origin):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(names):
                if name.startswith("."):
                    continue
                path = Path(folder) / name
                rel = path.relative_to(origin).as_posix()
                if path.is_symlink():
                    skipped.append({"path": rel, "reason": "symlink (not followed)"})
                    continue
                files.append((path, _nfc(f"{origin.name}/{rel}")))
    else:
        raise BadInput(f"{origin} is neither a file nor a folder")
    return files, skipped


def _read_source(
    path: Path, original: str, inspect: Callable[[MemoryWrite], MemoryWrite] | None
) -> tuple[os.stat_result, bytes] | str:
    """``(stat, bytes)`` of the file at ``path`` as the policy passed it, or why it is
    skipped (too large, unreadable, refused)."""
    try:
        st = path.stat()
        if st.st_size > _MAX_SOURCE_BYTES:
            return "larger than 50 MB"
        data = path.read_bytes()
    except OSError as exc:
        return f"not readable: {exc.strerror}"
    if inspect is not None:
        policed = _policed_source(inspect, original, data)
        if isinstance(policed, str):
            return policed
        data = policed
    return st, data


def _store_source(
    manifest: Manifest,
    raw_dir: Path,
    ident: str,
    path: Path,
    original: str,
    data: bytes,
    st: os.stat_result,
) -> None:
    """Store ``data`` read-only as source ``ident`` (a copy a crash left is adopted) and
    enter it in ``manifest``, superseding an older source from the same ``path``."""
    digest = etag(data)
    target = raw_dir / ident
    target.parent.mkdir(parents=True, exist_ok=True)
    if current_etag(target) != digest:  # a copy a crash left is adopted
        atomic_write(target, data, expected_etag=MISSING_ETAG, mode=0o444)
    entry = Source(
        id=ident,
        original=original,
        origin=str(path),
        hash=digest,
        size=len(data),
        mtime_ns=st.st_mtime_ns,
        ingested=_now().isoformat().replace("+00:00", "Z"),
    )
    manifest.sources.append(entry)
    manifest.supersede(str(path), entry)


def _policed_source(
    inspect: Callable[[MemoryWrite], MemoryWrite], original: str, data: bytes
) -> bytes | str:
    """A source's bytes after ``goat_inspect_remember``, or why it is skipped."""
    try:
        text, exact = data.decode("utf-8"), True
    except UnicodeDecodeError:
        text, exact = data.decode("utf-8", "replace"), False
    try:
        out = inspect(MemoryWrite(kind="remember", text=text, title=original, source="ingest"))
    except Rejected as exc:
        return f"rejected by policy: {exc.reason}"
    if out.text == text:
        return data
    if not exact:
        return "changed by policy, but not UTF-8 text: not stored"
    return out.text.encode("utf-8")
