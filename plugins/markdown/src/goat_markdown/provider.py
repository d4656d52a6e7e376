"""The markdown provider: one folder of ``.md`` notes per scope (DESIGN section 5).

Notes carry YAML frontmatter (``id``, ``title``, ``created``, ``updated``, ``tags``, ``kind``
remember|feedback, ``source``). Notes written by Obsidian or by hand are read as they are and
never rewritten unless a remember or feedback targets them; then only the ``updated`` line
changes and a dated entry is appended.

Every blocking call runs on the store's :class:`~goat_core.provider.StoreWorker`, which also
owns the SQLite search index (``GoatHome.index_path(root)``). Each call starts with one cheap
change scan (a stat walk) and syncs the index, which reads and parses only the notes whose
``(mtime, size)`` changed; titles, frontmatter ids and unparsable-frontmatter problems then come
from the index, and only the notes a call returns or edits are read (recall: the hits; pages:
the page shown or listed). Only ``link_map`` and ``connections`` read every note, each once
(kept between calls of one process and refreshed when mtime or size change). Read-modify-write
cycles hold
the store's cross-process :class:`~goat_core.files.StoreLock` and re-check the note's
content hash just before the rename, so concurrent updates either both land or one gets
:class:`~goat_core.errors.Conflict`.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import os
import re
import threading
import unicodedata
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goat_core.errors import (
    Ambiguous,
    BadInput,
    Conflict,
    NotFound,
    PathError,
    ScopeError,
    TooLarge,
)
from goat_core.files import (
    MISSING_ETAG,
    StoreLock,
    WalkResult,
    atomic_write,
    contain,
    etag,
    fsync_dir,
    safe_title_filename,
    validate_store_root,
    walk_notes,
)
from goat_core.frontmatter import append_entry, jsonable, parse_note, render_note, set_keys
from goat_core.logs import get_logger
from goat_core.models import (
    Connections,
    Health,
    LinkMap,
    MemoryWrite,
    Page,
    PageList,
    PageSummary,
    ProviderSpec,
    RecallItem,
    RecallResult,
    Receipt,
    ReceiptStatus,
    normalize_pen_id,
)
from goat_core.provider import Provider, ProviderContext, StoreWorker

if TYPE_CHECKING:
    from goat_core.search import DocInfo, IndexedDoc, SearchIndex, SyncStats

__all__ = ["MarkdownProvider"]

log = get_logger("goat_markdown")

#: Notes whose frontmatter did not parse, already logged in this process: (root, path).
_REPORTED: set[tuple[str, str]] = set()
_REPORTED_LOCK = threading.Lock()

_TEXT_CHARS = 2000
_TITLE_WORDS = 8
_TITLE_CHARS = 60


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _fold(text: str) -> str:
    return _nfc(text).casefold()


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def _stamp(moment: datetime) -> str:
    """The heading of an appended entry: ``2026-11-29 22:00 UTC``."""
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _stem(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    return name[:-3] if name.lower().endswith(".md") else name


def _str_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [str(v) for v in value if v is not None]
    return [str(value)]


@dataclass
class _Note:
    """What the provider knows about one note file (refreshed when mtime or size change)."""

    path: str
    mtime_ns: int
    size: int
    etag: str
    title: str
    data: dict[str, Any]
    body: str
    error: str | None

    @property
    def fm_id(self) -> str | None:
        value = self.data.get("id")
        return str(value) if value is not None else None

    def summary(self) -> PageSummary:
        updated = self.data.get("updated")
        if not isinstance(updated, datetime):
            updated = datetime.fromtimestamp(self.mtime_ns / 1e9, UTC)
        elif updated.tzinfo is None:
            updated = updated.replace(tzinfo=UTC)
        return PageSummary(
            id=self.path, title=self.title, path=self.path, etag=self.etag, updated=updated
        )


#: What page resolution needs of a note: ``(path, title, frontmatter id)``.
_Ref = tuple[str, str, str | None]


def _sort_key(path: str) -> tuple[str, str]:
    """Page order: by path case-insensitively, ties by exact path (as ``walk_notes``)."""
    return (path.casefold(), path)


@dataclass
class _Scan:
    walk: WalkResult
    notes: list[_Note] = field(default_factory=list)


class MarkdownProvider(Provider):
    """A store of Markdown notes for one scope.

    :param context: the scope, binding, validated :class:`~goat_markdown.plugin.
        MarkdownSettings` and GOAT home.
    :param spec: the provider's declaration.
    :raises PathError: the root is ``/``, a home directory itself, or (when given
        explicitly) not an existing folder.
    """

    def __init__(self, context: ProviderContext, *, spec: ProviderSpec) -> None:
        super().__init__(context)
        self.spec = spec
        pen_id = context.scope.pen_id
        if pen_id is not None and normalize_pen_id(pen_id) != pen_id:
            raise ScopeError(f"Pen id {pen_id!r} is not canonical; no store was opened")
        configured = getattr(context.settings, "root", None)
        if configured is None:
            default = context.home.default_store_dir(context.scope)
            default.mkdir(mode=0o700, parents=True, exist_ok=True)
            raw_root = default
        else:
            raw_root = Path(configured).expanduser()
        self.root: Path = validate_store_root(raw_root)
        self._lock = StoreLock(context.home.lock_path(self.root))
        self._index_path = context.home.index_path(self.root)
        self._worker = StoreWorker(context.home.store_key(self.root))
        self._index: SearchIndex | None = None
        self._cache: dict[str, _Note] = {}
        self._closed = False

    # -- helpers on the worker thread -----------------------------------------------------------
    def _index_open(self) -> SearchIndex:
        if self._index is None:
            from goat_core.search import SearchIndex

            self._index_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._index = SearchIndex(self._index_path)
        return self._index

    def _load(self, rel: str, mtime_ns: int = 0, size: int = 0) -> _Note | None:
        """Read and parse one note, or ``None`` if it vanished or is unreadable."""
        path = self.root / rel
        try:
            raw = path.read_bytes()
            if not mtime_ns:
                st = os.stat(path)
                mtime_ns, size = st.st_mtime_ns, st.st_size
        except OSError:
            return None
        text = raw.decode("utf-8", "replace")
        parsed = parse_note(text)
        error = parsed.error
        if error is None and "\ufffd" in text and b"\xef\xbf\xbd" not in raw:
            error = "note is not valid UTF-8"
        title_value = parsed.data.get("title")
        title = (
            _nfc(str(title_value))
            if isinstance(title_value, str | int | float) and str(title_value).strip()
            else _nfc(_stem(rel))
        )
        note = _Note(
            path=rel,
            mtime_ns=mtime_ns,
            size=size,
            etag=etag(raw),
            title=title,
            data=parsed.data,
            body=parsed.body,
            error=error,
        )
        if error is not None:
            key = (str(self.root), rel)
            with _REPORTED_LOCK:
                first = key not in _REPORTED
                _REPORTED.add(key)
            if first:
                log.warning("markdown.note_unparsable", path=rel, error=error)
        return note

    def _scan(self) -> _Scan:
        """Every note parsed, for the link map: stat every note, re-read only those that
        changed since this object last read them (kept in ``_cache``)."""
        walk = walk_notes(self.root)
        notes: list[_Note] = []
        seen = set()
        for f in walk.files:
            seen.add(f.path)
            cached = self._cache.get(f.path)
            if cached is not None and cached.mtime_ns == f.mtime_ns and cached.size == f.size:
                notes.append(cached)
                continue
            note = self._load(f.path, f.mtime_ns, f.size)
            if note is not None:
                self._cache[f.path] = note
                notes.append(note)
        for gone in set(self._cache) - seen:
            del self._cache[gone]
        return _Scan(walk=walk, notes=notes)

    @staticmethod
    def _degraded(walk: WalkResult, problems: Iterable[tuple[str, str]]) -> list[str]:
        """Unparsable notes (``<path>: <problem>; read as body``), then walk skips."""
        reasons = [f"{path}: {problem}; read as body" for path, problem in problems]
        reasons += [f"{path}: skipped, {reason}" for path, reason in walk.skipped]
        return reasons

    def _indexed_doc(self, note: _Note) -> IndexedDoc:
        from goat_core.search import IndexedDoc

        data = note.data
        description = data.get("description")
        extra_values = [
            str(v)
            for k, v in data.items()
            if k not in {"title", "description", "aliases", "tags", "id", "created", "updated"}
            and isinstance(v, str | int | float)
            and not isinstance(v, bool)
        ]
        return IndexedDoc(
            path=note.path,
            title=note.title,
            body=note.body,
            description=str(description) if isinstance(description, str) else "",
            aliases=tuple(_str_list(data.get("aliases") or data.get("alias"))),
            tags=tuple(_str_list(data.get("tags") or data.get("tag"))),
            extra=" ".join(extra_values),
            ident=note.fm_id,
            problem=note.error,
        )

    def _sync_index(
        self, progress: Callable[[int, int], None] | None = None
    ) -> tuple[WalkResult, SyncStats]:
        """The change scan plus an index sync: one stat walk; only new or changed notes
        (by ``(mtime_ns, size)``) are read and parsed."""
        walk = walk_notes(self.root)
        cached = self._cache

        def load(rel: str) -> IndexedDoc | None:
            note = self._load(rel)
            if note is None:
                return None
            if rel in cached:  # keep the link-map cache fresh without a second parse there
                cached[rel] = note
            return self._indexed_doc(note)

        # the walk's entries go in as they are (copying 100k of them costs more than the check)
        stats = self._index_open().sync(walk.files, load, progress=progress)
        return walk, stats

    def _documents(self) -> list[DocInfo]:
        """Indexed notes (path, title, id, problem) in page order; call after a sync."""
        return self._index_open().documents()

    @staticmethod
    def _refs(docs: Iterable[DocInfo]) -> list[_Ref]:
        return [(d.path, d.title, d.ident) for d in docs]

    def _must_load(self, rel: str) -> _Note:
        """Read a note the index named; :class:`NotFound` when it vanished meanwhile."""
        note = self._load(rel)
        if note is None:
            raise NotFound(f"page {rel!r} in {self.label()} vanished or is not readable")
        return note

    def _index_note(self, rel: str) -> None:
        from goat_core.search import FileStat

        note = self._load(rel)
        if note is not None:
            self._index_open().update_one(
                self._indexed_doc(note), FileStat(note.path, note.mtime_ns, note.size)
            )

    def _receipt(self, rel: str, removed: tuple[str, ...] = ()) -> Receipt:
        return Receipt(
            status=ReceiptStatus.STORED, id=rel, path=rel, scope=self.scope.key, removed=removed
        )

    # -- resolution -------------------------------------------------------------------------------
    def _resolve(self, ref: str, notes: Iterable[_Ref]) -> str:
        """The path of the one note ``ref`` names: by id (its path), frontmatter ``id``, path
        without ``.md``, then a unique title or file name ignoring case (NFC).

        :param notes: ``(path, title, frontmatter id)`` of every note (from the index).
        """
        if not isinstance(ref, str) or not ref.strip():
            raise BadInput("page reference is empty")
        ref = _nfc(ref.strip())
        refs = list(notes)
        nfc_paths = {_nfc(p): p for p, _t, _i in refs}
        if ref in nfc_paths:
            return nfc_paths[ref]
        with_id = [p for p, _t, i in refs if i == ref]
        if len(with_id) == 1:
            return with_id[0]
        if f"{ref}.md" in nfc_paths:
            return nfc_paths[f"{ref}.md"]
        if "/" in ref or ref.lower().endswith(".md"):
            contain(self.root, ref)  # an unsafe reference is refused with its rule, not "missing"
            folded = _fold(ref if ref.lower().endswith(".md") else f"{ref}.md")
            path_matches = [p for n, p in nfc_paths.items() if _fold(n) == folded]
            if len(path_matches) == 1:
                return path_matches[0]
            if path_matches:
                raise self._ambiguous(ref, path_matches)
        key = _fold(ref[:-3] if ref.lower().endswith(".md") else ref)
        matches = [p for p, t, _i in refs if _fold(t) == key or _fold(_stem(p)) == key]
        if len(with_id) > 1:
            matches = with_id
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise self._ambiguous(ref, matches)
        raise NotFound(f"no page matches {ref!r} in {self.label()}")

    @staticmethod
    def _ambiguous(ref: str, paths: list[str]) -> Ambiguous:
        ordered = sorted(paths, key=_sort_key)
        return Ambiguous(
            f"{len(ordered)} pages match {ref!r}: {', '.join(ordered)}; use a path",
            candidates=ordered,
        )

    # -- writes (worker thread) -----------------------------------------------------------------
    def _check_text(self, write: MemoryWrite) -> str:
        text = write.text
        if len(text) > self.spec.max_input_chars:
            raise TooLarge(
                f"text is {len(text)} characters; this store accepts at most "
                f"{self.spec.max_input_chars}; nothing was stored"
            )
        if not text.strip():
            raise BadInput("nothing to remember: the text is empty")
        return text.replace("\r\n", "\n")

    def _append(self, note: _Note, heading: str, text: str) -> str:
        if note.error is not None:
            raise Conflict(
                f"{note.path} was not changed: {note.error}; such notes are never rewritten "
                "(fix the note or choose another title)"
            )
        path = self.root / note.path
        raw = path.read_bytes()
        current = raw.decode("utf-8")
        updated = current
        if parse_note(current).has_frontmatter:
            updated = set_keys(current, {"updated": _now()})
        new = append_entry(updated, heading, text)
        atomic_write(path, new.encode("utf-8"), expected_etag=etag(raw))
        self._index_note(note.path)
        return note.path

    def _create(
        self,
        stem: str,
        frontmatter: dict[str, Any],
        text: str,
        *,
        unique: bool,
        walk: WalkResult,
    ) -> str:
        """Create ``<stem>.md`` at the root (``<stem>-2.md``... when ``unique``); ``walk``:
        the change scan taken under the store lock (its root file names are taken)."""
        existing = {_fold(f.path) for f in walk.files if "/" not in f.path}
        n = 1
        while True:
            name = f"{stem}.md" if n == 1 else f"{stem}-{n}.md"
            if _fold(name) not in existing:
                break
            if not unique:  # callers checked titles; a name clash here is a twin
                raise Conflict(f"a note named {name!r} already exists")
            n += 1
        contain(self.root, name)
        body = text if text.endswith("\n") else text + "\n"
        data = render_note(frontmatter, body).encode("utf-8")
        atomic_write(self.root / name, data, expected_etag=MISSING_ETAG)
        self._index_note(name)
        return name

    def _new_frontmatter(self, title: str, write: MemoryWrite, kind: str) -> dict[str, Any]:
        now = _now()
        return {
            "id": uuid.uuid4().hex,
            "title": title,
            "created": now,
            "updated": now,
            "tags": list(write.tags),
            "kind": kind,
            "source": write.source,
        }

    def _remember_titled(self, write: MemoryWrite, text: str, kind: str) -> str:
        assert write.title is not None
        title = _nfc(write.title.strip())
        stem = safe_title_filename(title)
        walk, _stats = self._sync_index()
        docs = self._documents()
        exact = [d for d in docs if d.title == title or _nfc(_stem(d.path)) == title]
        if len(exact) > 1:
            raise self._ambiguous(title, [d.path for d in exact])
        heading = _stamp(_now()) + (" feedback" if kind == "feedback" else "")
        if exact:  # the index named it; the note itself is re-read here, under the lock
            return self._append(self._must_load(exact[0].path), heading, text)
        key = _fold(title)
        twins = [d for d in docs if _fold(d.title) == key or _fold(_stem(d.path)) == key]
        if twins:
            names = ", ".join(f"{d.path!r} (title {d.title!r})" for d in twins)
            raise Conflict(
                f"title {title!r} differs only in case from existing note {names}; "
                "use its exact title to append to it"
            )
        taken = [d for d in docs if "/" not in d.path and _fold(d.path) == _fold(f"{stem}.md")]
        if taken:
            raise Conflict(
                f"file name {stem + '.md'!r} for title {title!r} is taken by note "
                f"{taken[0].path!r} (title {taken[0].title!r}); choose another title"
            )
        return self._create(
            stem, self._new_frontmatter(title, write, kind), text, unique=False, walk=walk
        )

    def _generated_title(self, text: str) -> str:
        words = re.sub(r"[#>*_`\[\]]+", " ", text).split()
        title = ""
        for word in words[:_TITLE_WORDS]:
            candidate = f"{title} {word}".strip()
            if len(candidate) > _TITLE_CHARS:
                break
            title = candidate
        if not title and words:
            title = words[0][:_TITLE_CHARS]
        return _nfc(title)

    def _remember_untitled(self, write: MemoryWrite, text: str, kind: str) -> str:
        title = self._generated_title(text)
        try:
            stem = safe_title_filename(title)
        except PathError:
            stem = "Note"
        if kind == "feedback" and not title:
            title = "Feedback"
        return self._create(
            stem,
            self._new_frontmatter(title or stem, write, kind),
            text,
            unique=True,
            walk=walk_notes(self.root),
        )

    def _write(self, write: MemoryWrite, kind: str) -> Receipt:
        text = self._check_text(write)
        with self._lock:
            if kind == "feedback" and write.on:
                self._sync_index()
                target = self._resolve(write.on, self._refs(self._documents()))
                rel = self._append(self._must_load(target), _stamp(_now()) + " feedback", text)
            elif write.title is not None and write.title.strip():
                rel = self._remember_titled(write, text, kind)
            else:
                rel = self._remember_untitled(write, text, kind)
        return self._receipt(rel)

    def _forget(self, ref: str) -> Receipt:
        with self._lock:
            self._sync_index()
            rel = self._resolve(ref, self._refs(self._documents()))
            contain(self.root, rel)
            path = self.root / rel  # a symlinked note: the link goes, not its target
            try:
                os.unlink(path)
            except FileNotFoundError as exc:
                raise NotFound(f"page {rel!r} in {self.label()} vanished meanwhile") from exc
            fsync_dir(path.parent)
            self._cache.pop(rel, None)
            self._index_open().remove(rel)
        return self._receipt(rel, removed=(rel,))

    # -- reads (worker thread) ------------------------------------------------------------------
    def _recall(self, query: str, limit: int) -> RecallResult:
        walk, _stats = self._sync_index()
        index = self._index_open()
        results = index.search(query, limit=limit)
        items = []
        for hit in results.hits:
            note = self._load(hit.path)  # only the hits are read (at most ``limit`` files)
            text = note.body.strip()[:_TEXT_CHARS] if note is not None else None
            source = note.data.get("source") if note is not None else None
            items.append(
                RecallItem(
                    id=hit.path,
                    title=hit.title,
                    path=hit.path,
                    score=float(hit.score),
                    snippet=hit.snippet,
                    text=text,
                    source=str(source) if isinstance(source, str) else None,
                )
            )
        complete = bool(results.complete) and results.total <= len(items)
        degraded = self._degraded(walk, index.problems())
        degraded += [d for d in results.degraded if d not in degraded]
        if results.total > len(items):
            degraded.insert(0, f"{results.total} notes matched; {len(items)} returned")
        return RecallResult(
            scope=self.scope.key, items=tuple(items), complete=complete, degraded=tuple(degraded)
        )

    def _list_pages(self, limit: int, cursor: str | None) -> PageList:
        walk, _stats = self._sync_index()
        ordered = [f.path for f in walk.files]  # already in page order
        start = 0
        if cursor is not None:
            start = bisect.bisect_right(ordered, _sort_key(_decode_cursor(cursor)), key=_sort_key)
        chunk = ordered[start : start + limit]
        more = start + limit < len(ordered)
        next_cursor = _encode_cursor(chunk[-1]) if more and chunk else None
        degraded = self._degraded(walk, self._index_open().problems())
        items = []
        for rel in chunk:  # only the listed notes are read (etag, updated, title)
            note = self._load(rel)
            if note is None:
                degraded.append(f"{rel}: skipped, not readable")
            else:
                items.append(note.summary())
        unreadable = len(items) < len(chunk) or any("not readable" in r for _, r in walk.skipped)
        return PageList(
            items=tuple(items),
            next_cursor=next_cursor,
            complete=not more and not unreadable,
            degraded=tuple(degraded),
        )

    def _page(self, note: _Note) -> Page:
        data = note.data
        provenance: dict[str, Any] = {
            k: jsonable(data.get(k)) for k in ("source", "created", "kind") if k in data
        }
        if note.error:
            provenance["error"] = note.error
        return Page(
            id=note.path,
            title=note.title,
            path=note.path,
            frontmatter=jsonable(data),
            body=note.body,
            etag=note.etag,
            provenance=provenance,
        )

    def _get_page(self, ref: str) -> Page:
        self._sync_index()
        return self._page(self._must_load(self._resolve(ref, self._refs(self._documents()))))

    def _link_inputs(self) -> tuple[_Scan, list[tuple[PageSummary, str]], list[str]]:
        scan = self._scan()
        pages = [(n.summary(), n.body) for n in scan.notes]
        paths = [n.path for n in scan.notes] + list(scan.walk.attachments)
        return scan, pages, paths

    def _link_map(self) -> LinkMap:
        from goat_core.links import build_link_map

        scan, pages, paths = self._link_inputs()
        result = build_link_map(pages, paths)
        problems = [(n.path, n.error) for n in scan.notes if n.error]
        degraded = tuple(result.degraded) + tuple(self._degraded(scan.walk, problems))
        return result.model_copy(update={"degraded": degraded}) if degraded else result

    def _connections(self, ref: str) -> Connections:
        from goat_core import links

        scan, pages, paths = self._link_inputs()
        rel = self._resolve(ref, [(n.path, n.title, n.fm_id) for n in scan.notes])
        return links.connections(pages, rel, paths)

    def _reindex(self, progress: Callable[[int, int], None] | None) -> dict[str, int]:
        walk, stats = self._sync_index(progress)
        counts = _counts(stats)
        counts.setdefault("notes", self._index_open().stats().documents)
        counts["skipped"] = len(walk.skipped)
        counts["unparsable"] = len(self._index_open().problems())
        return counts

    def _check(self) -> Health:
        if not self.root.is_dir():
            return Health.broken(f"store folder {self.root} is missing")
        if not os.access(self.root, os.R_OK | os.X_OK):
            return Health.broken(f"store folder {self.root} is not readable")
        return Health.healthy(f"markdown notes in {self.root}")

    def _close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None

    # -- the async API --------------------------------------------------------------------------
    async def remember(self, write: MemoryWrite) -> Receipt:
        """Store a note, or append a dated entry to the note titled ``write.title``.

        With a title: a note whose frontmatter ``title`` or file name equals it (NFC) gets
        ``## <YYYY-MM-DD HH:MM> UTC`` plus the text appended and its ``updated`` line set;
        otherwise ``<safe title>.md`` is created at the root. Without a title: a new note
        titled by the text's first words, with a unique file name (``-2``, ``-3``...).

        :raises TooLarge: text over ``spec.max_input_chars``. :raises BadInput: empty text.
        :raises PathError: a title that leaves no usable file name or is a device name.
        :raises Conflict: a title differing only in case from an existing note, a file
            name taken by a note of another title, a note changed during the write, a note
            whose frontmatter does not parse, or the store lock timing out.
        :raises Ambiguous: several notes carry the title.
        """
        return await self._worker.run(self._write, write, "remember")

    async def feedback(self, write: MemoryWrite) -> Receipt:
        """Append feedback to the page ``write.on`` (resolved like :meth:`get_page`), or store
        a new note of kind ``feedback``. Errors as :meth:`remember`, plus :class:`NotFound`."""
        return await self._worker.run(self._write, write, "feedback")

    async def forget(self, ref: str) -> Receipt:
        """Remove the note ``ref`` resolves to (like :meth:`get_page`); ``removed`` lists its
        path. A symlinked note loses the link, never its target."""
        return await self._worker.run(self._forget, ref)

    async def recall(self, query: str, *, limit: int = 10) -> RecallResult:
        """Ranked full-text search after a cheap change scan. ``complete`` is ``False`` when
        more notes matched than ``limit``; ``degraded`` names unparsable notes (searched as
        body) and skipped symlinks.

        :raises BadInput: ``limit`` outside 1..100 or an empty query.
        """
        if not 1 <= limit <= 100:
            raise BadInput(f"limit must be between 1 and 100, got {limit}")
        if not query.strip():
            raise BadInput("query is empty")
        return await self._worker.run(self._recall, query, limit)

    async def list_pages(self, *, limit: int = 50, cursor: str | None = None) -> PageList:
        """Notes ordered by path case-insensitively; ``next_cursor`` continues the listing.

        :raises BadInput: ``limit`` outside 1..1000 or a cursor this store did not issue.
        """
        if not 1 <= limit <= 1000:
            raise BadInput(f"limit must be between 1 and 1000, got {limit}")
        return await self._worker.run(self._list_pages, limit, cursor)

    async def get_page(self, ref: str) -> Page:
        return await self._worker.run(self._get_page, ref)

    async def link_map(self) -> LinkMap:
        return await self._worker.run(self._link_map)

    async def connections(self, ref: str) -> Connections:
        return await self._worker.run(self._connections, ref)

    async def reindex(self, progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        """Bring the index in line with the folder; returns the sync counts plus ``notes``,
        ``skipped`` and ``unparsable``."""
        return await self._worker.run(self._reindex, progress)

    async def check(self) -> Health:
        return await self._worker.run(self._check)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self._worker.run(self._close)
        finally:
            self._worker.close()


def _encode_cursor(path: str) -> str:
    return base64.urlsafe_b64encode(path.encode("utf-8")).decode("ascii").rstrip("=")


def _decode_cursor(cursor: str) -> str:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        return base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError) as exc:
        raise BadInput(f"invalid page cursor {cursor!r}: not one this store issued") from exc


def _counts(stats: SyncStats) -> dict[str, int]:
    return {
        "scanned": stats.scanned,
        "added": stats.added,
        "updated": stats.updated,
        "removed": stats.removed,
        "unchanged": stats.unchanged,
        "unreadable": stats.skipped,
    }
