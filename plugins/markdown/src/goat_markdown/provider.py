"""The markdown provider: one folder of ``.md`` notes per scope (docs/design.md, Bindings
and providers).

Notes carry YAML frontmatter (``id``, ``title``, ``created``, ``updated``, ``tags``, ``kind``
remember|feedback, ``source``). Notes written by Obsidian or by hand are read as they are and
never rewritten unless a remember or feedback targets them; then only the ``updated`` line
changes and a dated entry is appended.

Every blocking call runs on the store's :class:`~goat_core.filestore.StoreWorker`, which also
owns the SQLite search index (``GoatHome.index_path(root)``). Each call starts with one cheap
change scan (a stat walk) and syncs the index, which reads and parses only the notes whose
``(mtime, size)`` changed; a long-lived host's provider replaces the scan by a file watcher
for recall and page lookups (see :class:`MarkdownProvider`). Titles, frontmatter ids and
unparsable-frontmatter problems then come from the index, and only the notes a call returns
or edits are read (recall: the hits, each kept parsed between recalls and read again when its
``(mtime, size)`` changed, the store wrote it or the watcher reported it; pages: the page
shown or listed). Only ``link_map`` and
``connections`` read every note, each once (kept between calls of one process and refreshed
when mtime or size change). Read-modify-write cycles hold the store's cross-process
:class:`~goat_core.filestore.StoreLock` and re-check the note's content hash just before the
rename, so concurrent updates either both land or one gets
:class:`~goat_core.errors.Conflict`.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from goat_core import filestore
from goat_core.contract import (
    Connections,
    LinkMap,
    MemoryWrite,
    Page,
    PageList,
    PageSummary,
    ProviderContext,
    ProviderOperation,
    ProviderSpec,
    RecallResult,
    Receipt,
)
from goat_core.errors import (
    Conflict,
    NotFound,
    PathError,
)
from goat_core.filestore import (
    MISSING_ETAG,
    FolderStoreProvider,
    NoteFile,
    UneditableFrontmatter,
    WalkResult,
    append_entry,
    atomic_write,
    contain,
    etag,
    fsync_dir,
    parse_note,
    render_note,
    safe_title_filename,
    set_keys,
    walk_notes,
)
from goat_core.logs import get_logger

if TYPE_CHECKING:
    from goat_core.filestore.search import DocInfo, SyncStats

__all__ = ["MarkdownProvider"]

log = get_logger("goat_markdown")

#: Notes whose frontmatter did not parse, already logged in this process: (root, path).
_REPORTED: set[tuple[str, str]] = set()
_REPORTED_LOCK = threading.Lock()

#: What the provider knows about one note file (refreshed when mtime or size change).
_Note = filestore.StoredNote
#: What page resolution needs of a note: ``(path, title, frontmatter id)``.
_Ref = filestore.PageRef
_now = filestore.now_utc
_stem = filestore.file_stem
_fold = filestore.fold
_nfc = filestore.nfc


def _stamp(moment: datetime) -> str:
    """The heading of an appended entry: ``2026-11-29 22:00 UTC``."""
    return moment.strftime("%Y-%m-%d %H:%M UTC")


#: A watched store still gets a full change scan when its last one is older than this (seconds):
#: a safety net for file systems whose changes raise no events (a network share or a FUSE
#: mount edited from another machine), where the watcher sees nothing but cannot tell.
WATCH_RESCAN_S = 300.0
#: Longest wait, before a watched call, for file events still on their way (seconds).
WATCH_SETTLE_S = 0.05
#: Watches whose events may have been lost (watchdog logged a warning: queue overflow, a
#: folder it could not watch); each does a full change scan at its next call.
_WATCHES: weakref.WeakSet[_Watch] = weakref.WeakSet()
_WATCH_EVENTS = frozenset({"created", "modified", "deleted", "moved", "closed"})


class _WatchdogWarnings(logging.Handler):
    """Marks every live watch untrusted when watchdog logs a warning or an error."""

    def emit(self, record: logging.LogRecord) -> None:
        for watch in list(_WATCHES):
            watch.distrust(f"watchdog: {record.getMessage()}")


_WATCHDOG_HANDLER = _WatchdogWarnings(logging.WARNING)


def _inotify_fds() -> set[int]:
    """This process's inotify descriptors (Linux ``/proc``; empty elsewhere)."""
    fds: set[int] = set()
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return fds
    for name in names:
        try:
            if os.readlink(f"/proc/self/fd/{name}") == "anon_inode:inotify":
                fds.add(int(name))
        except (OSError, ValueError):
            continue
    return fds


class _Watch:
    """A recursive watchdog observer on a store root, collecting the paths it reports.

    The observer's thread calls :meth:`dispatch`; the store's worker thread calls
    :meth:`take`. Paths are store-relative; dot-segments (``.obsidian``, GOAT's temp files)
    are dropped, except that a move out of or into a dot-folder keeps its other side.
    """

    def __init__(self, root: str) -> None:
        self.root = root
        self._prefix = root.rstrip(os.sep) + os.sep
        self._lock = threading.Lock()
        self._files: set[str] = set()
        self._dirs: set[str] = set()
        self._untrusted: str | None = None
        self.events = 0
        self._observer: Any = None
        self._fds: set[int] = set()
        #: ``(st_dev, st_ino)`` of the root when watching began: inotify follows that folder,
        #: so a root moved away, removed or replaced (``mv notes old; mkdir notes``) is no
        #: longer watched, and the parent folder's events are not seen
        self._identity: tuple[int, int] | None = None
        #: set by :meth:`take` once the root is not the folder being watched
        self.replaced = False

    def start(self) -> None:
        """Start the observer; raises ``OSError``/``RuntimeError`` when it cannot watch
        (no inotify, watch limit reached), ``ImportError`` without watchdog."""
        from watchdog.events import (
            DirCreatedEvent,
            DirDeletedEvent,
            DirMovedEvent,
            FileClosedEvent,
            FileCreatedEvent,
            FileDeletedEvent,
            FileModifiedEvent,
            FileMovedEvent,
        )
        from watchdog.observers import Observer
        from watchdog.observers.inotify import InotifyObserver

        if Observer is not InotifyObserver:
            # FSEvents, kqueue and Windows coalesce or drop events in ways this mapping
            # does not follow; those platforms keep the change scan on every call
            raise RuntimeError("file watching is only trusted with Linux inotify")
        logger = logging.getLogger("watchdog")
        if _WATCHDOG_HANDLER not in logger.handlers:
            logger.addHandler(_WATCHDOG_HANDLER)
        before = _inotify_fds()
        observer = Observer()
        observer.daemon = True
        self._observer = observer  # so that stop() cleans up after a failed start
        _WATCHES.add(self)
        # no open/access/close-without-write events: reading the store (this provider's own
        # walks and reads included) must not wake the observer
        events: list[type[Any]] = [
            FileCreatedEvent,
            FileModifiedEvent,
            FileDeletedEvent,
            FileMovedEvent,
            FileClosedEvent,
            DirCreatedEvent,
            DirDeletedEvent,
            DirMovedEvent,
        ]
        observer.schedule(
            self,  # type: ignore[arg-type]
            self.root,
            recursive=True,
            event_filter=events,
        )
        info = os.stat(self.root)
        self._identity = (info.st_dev, info.st_ino)
        observer.start()  # adds every folder's watch before it returns
        self._fds = (_inotify_fds() - before) or _inotify_fds()

    def stop(self) -> None:
        observer, self._observer = self._observer, None
        _WATCHES.discard(self)
        if observer is not None:
            observer.stop()
            if observer.is_alive():
                observer.join(timeout=2.0)

    def distrust(self, reason: str) -> None:
        with self._lock:
            if self._untrusted is None:
                self._untrusted = reason

    def _rel(self, raw: str | bytes) -> str | None:
        """The store-relative path of an event path; ``None`` for a dot path or outside."""
        path = os.fsdecode(raw)
        if not path.startswith(self._prefix):
            return None
        rel = path[len(self._prefix) :].replace(os.sep, "/")
        if not rel or any(seg.startswith(".") for seg in rel.split("/")):
            return None
        return rel

    def dispatch(self, event: Any) -> None:
        """Called by watchdog on its thread for every event."""
        kind = event.event_type
        if kind not in _WATCH_EVENTS:
            return  # opened, closed without writing, attribute-only
        is_dir = event.is_directory
        if is_dir and kind in {"modified", "closed"}:
            return  # inotify reports the files inside on their own
        paths = [event.src_path]
        if kind == "moved":
            paths.append(event.dest_path)
        with self._lock:
            self.events += 1
            for raw in paths:
                if os.fsdecode(raw).rstrip(os.sep) == self.root.rstrip(os.sep):
                    self._untrusted = self._untrusted or f"the store root itself was {kind}"
                    continue
                rel = self._rel(raw)
                if rel is None:
                    continue
                if is_dir:
                    self._dirs.add(rel)
                elif rel.lower().endswith(".md") or os.path.islink(raw):
                    # inotify types a symlink to a folder as a file: any new link is kept,
                    # and the store falls back to a full scan for it
                    self._files.add(rel)

    def settle(self, timeout_s: float = WATCH_SETTLE_S) -> None:
        """Wait (at most ``timeout_s``) until no inotify event is unread by watchdog and none
        is queued for this observer, so a change made just before a call is seen by it: two
        checks in a row must find nothing, 0.2 ms apart (room for watchdog's threads to move
        an event on). Nothing follows the last check, so no sleep either."""
        import array
        import fcntl
        import termios

        observer = self._observer
        if observer is None:
            return
        deadline = time.monotonic() + timeout_s
        quiet = 0
        while quiet < 2 and time.monotonic() < deadline:
            busy = observer.event_queue.unfinished_tasks > 0
            for fd in self._fds:
                if busy:
                    break
                buf = array.array("i", [0])
                try:
                    fcntl.ioctl(fd, termios.FIONREAD, buf, True)
                except OSError:
                    continue
                busy = buf[0] > 0
            quiet = 0 if busy else quiet + 1
            if quiet < 2:
                time.sleep(0.0002)

    def alive(self) -> bool:
        """Whether the observer and each of its emitter threads still run."""
        observer = self._observer
        if observer is None or not observer.is_alive():
            return False
        return all(e.is_alive() for e in observer.emitters)

    def _held_moves(self) -> list[tuple[bytes, bool]]:
        """``(source path, is a folder)`` of each rename watchdog holds back: it keeps a
        move's first half up to 0.5 s for its other half, so a note moved out of the store
        would still be answered meanwhile. Read from watchdog 7's move grouper (an internal:
        nothing when it is not there; plugins/markdown/tests/test_provider.py checks it)."""
        observer = self._observer
        if observer is None:
            return []
        out: list[tuple[bytes, bool]] = []
        for emitter in list(observer.emitters):
            try:
                queue = emitter._inotify._move_event_grouper._queue
                with queue._lock:
                    held = list(queue._queue)
            except AttributeError:
                continue
            for element, _since, delayed in held:
                event = getattr(element, "ev", None)
                if delayed and event is not None and event.is_moved_from:
                    out.append((element.path, bool(event.is_directory)))
        return out

    def take(self) -> tuple[set[str], set[str], str | None]:
        """The files and folders reported since the last call (renames watchdog still holds
        back included), and why the watch can no longer be trusted (``None`` while it can)."""
        alive = self.alive()
        held = self._held_moves()
        try:
            info = os.stat(self.root)
            same = (info.st_dev, info.st_ino) == self._identity
        except OSError:
            same = False
        with self._lock:
            files, dirs = self._files, self._dirs
            self._files, self._dirs = set(), set()
            reason = self._untrusted
            self._untrusted = None
        for raw, is_dir in held:  # looked at again when watchdog delivers the move itself
            rel = self._rel(raw)
            if rel is not None:
                (dirs if is_dir else files).add(rel)
        if not same:
            self.replaced = True
            reason = "the store root was moved, removed or replaced"
        elif not alive:
            reason = reason or "the file watcher stopped"
        return files, dirs, reason


@dataclass
class _Scan:
    walk: WalkResult
    notes: list[_Note] = field(default_factory=list)


class MarkdownProvider(FolderStoreProvider[filestore.StoredNote]):
    """A store of Markdown notes for one scope (the store skeleton and the async facade:
    :class:`~goat_core.filestore.FolderStoreProvider`).

    **Operations.** :meth:`remember` with a title: a note whose frontmatter ``title`` or file
    name equals it (NFC) gets ``## <YYYY-MM-DD HH:MM> UTC`` plus the text appended and its
    ``updated`` line set; otherwise ``<safe title>.md`` is created at the root. Without a
    title: a new note titled by the text's first words, with a unique file name (``-2``,
    ``-3``...). Besides the base's errors, a title leaving no usable file name or naming a
    device is :class:`PathError`, and a file name taken by a note of another title or a note
    whose frontmatter does not parse is :class:`Conflict`. :meth:`forget` of a symlinked
    note removes the link, never its target. :meth:`reindex` returns the sync counts plus
    ``notes``, ``skipped`` and ``unparsable``.

    **Following external edits.** The first call of an object runs the full change scan
    (:func:`~goat_core.filestore.walk_notes` plus an index sync: O(notes) stats, then only changed
    notes are read), so a one-shot command never starts anything. The second call that syncs
    starts a recursive `watchdog <https://pypi.org/project/watchdog/>`_ observer on the root
    (Linux inotify only; elsewhere, or when it cannot start, e.g. the inotify watch limit is
    reached, every call keeps the full scan) and runs one more full scan. From then on
    :meth:`recall` and :meth:`get_page` sync only the paths the watcher reported: a created,
    modified, moved or deleted ``.md`` file is re-read or removed, a created, moved or
    deleted folder is walked again (notes under its old path removed, under its new path
    added). Cost: proportional to what changed. The store's own writes update the index
    directly. Page lists, the link map, writes and :meth:`reindex` always run the full scan.

    Freshness: an external change is visible to the next call once watchdog has delivered its
    event; before syncing, a call waits up to :data:`WATCH_SETTLE_S` (50 ms) while inotify
    events are still unread or queued, so a change made before the call is normally seen by it.
    The freshness is eventual, not immediate: an event still in transit inside watchdog (read
    from inotify but not yet queued for this observer, which neither check can see), one
    arriving during the window, or any move (watchdog holds a move's first half for up to 0.5 s
    to pair it with its second) is seen by a later call. The store's own writes are immediate
    whatever the watcher does; a one-shot command never watches. A full scan replaces the
    watched sync whenever the watcher cannot be trusted: its observer stopped (then for good),
    watchdog logged a warning (an inotify queue overflow, a folder it could not watch), the root
    itself moved, a reported path is a symlink or an unreadable entry, the last full scan is
    older than :data:`WATCH_RESCAN_S` (300 s; a safety net for network or FUSE mounts that raise
    no events), or the store contains symlinks inside it (events name the target, not the link),
    in which case every call scans. :meth:`close` stops the observer. Set ``watch_files =
    False`` on an object before its second call to never watch.

    :param context: the scope, binding, validated :class:`~goat_markdown.plugin.
        MarkdownSettings` and GOAT home.
    :param spec: the provider's declaration.
    :raises PathError: the root is ``/``, a home directory itself, or (when given
        explicitly) not an existing folder.
    """

    #: Whether the second full sync of an object starts a file watcher (see above).
    watch_files: bool = True

    healthy = "markdown notes in {root}"
    page_keys = ("source", "created", "kind")

    def __init__(self, context: ProviderContext, *, spec: ProviderSpec) -> None:
        super().__init__(context, spec=spec)
        # file watching (see the class docstring): full syncs so far, the watch, and what the
        # index holds as the watch last saw it (None: every read does a full change scan)
        self._syncs = 0
        self._watch: _Watch | None = None
        self._watch_error: str | None = None
        self._known: dict[str, NoteFile] | None = None
        self._skipped: list[tuple[str, str]] = []
        self._scanned_at = 0.0
        # the index's rebuild count as of the last full sync: a rebuild since (the index was
        # found damaged) means it misses notes the watcher will never report again
        self._synced_rebuilds = -1

    # -- helpers on the worker thread -----------------------------------------------------------
    def _load(self, rel: str, mtime_ns: int = 0, size: int = 0) -> _Note | None:
        """Read and parse one note, or ``None`` if it vanished or is unreadable."""
        note = filestore.read_note(self.root, rel, mtime_ns, size)
        if note is None:
            return None
        error = note.error
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
        walk = self._swept(walk_notes(self.root))
        return _Scan(walk=walk, notes=filestore.refresh_notes(walk.files, self._cache, self._load))

    @staticmethod
    def _degraded(
        skipped: Iterable[tuple[str, str]], problems: Iterable[tuple[str, str]]
    ) -> list[str]:
        """Unparsable notes (``<path>: <problem>; read as body``), then walk skips."""
        return filestore.degraded_reasons(problems, skipped)

    def _sync_index(
        self, progress: Callable[[int, int], None] | None = None, *, watch: bool = True
    ) -> tuple[WalkResult, SyncStats]:
        """The full change scan plus an index sync: one stat walk; only new or changed notes
        (by ``(mtime_ns, size)``) are read and parsed. From the second sync of this object
        on, a read (``watch=True``) starts the file watcher (see the class docstring); an
        explicit ``reindex`` never does, since it always scans in full anyway."""
        self._syncs += 1
        if watch and self._syncs >= 2 and self._watch is None and self._watch_error is None:
            self._start_watch()
        if self._watch is not None:
            self._watch.settle()
            self._watch.take()  # the walk below sees every change reported so far
        walk = self._swept(walk_notes(self.root))
        load = filestore.index_loader(self._load, self._cache, self._indexed_doc)
        # the walk's entries go in as they are (copying 100k of them costs more than the check)
        # a read reports through the host's sink (a first indexing can take minutes)
        sink = progress if progress is not None else self.context.progress
        index = self._index_open()
        before = index.rebuilds
        stats = index.sync(walk.folders, load, progress=sink)
        if index.rebuilds != before:  # found damaged mid-sync: rows written before are gone
            stats = index.sync(walk.folders, load, progress=sink)
        self._synced_rebuilds = index.rebuilds
        log.debug(
            "markdown.scan",
            root=str(self.root),
            notes=stats.scanned,
            added=stats.added,
            updated=stats.updated,
            removed=stats.removed,
            ms=round(stats.seconds * 1000, 1),
        )
        if self._watch is not None:
            # symlinked notes or folders: events name the target, not the link; no mapping
            self._known = (
                None
                if walk.symlinks
                else {f.path: f for group in walk.folders.values() for f in group}
            )
            self._skipped = list(walk.skipped)
            self._scanned_at = time.monotonic()
        return walk, stats

    def _start_watch(self) -> None:
        if not self.watch_files:
            self._watch_error = "file watching is off"
            return
        watch = _Watch(str(self.root))
        try:
            watch.start()
        except (ImportError, OSError, RuntimeError) as exc:
            watch.stop()
            self._watch_error = f"file watcher not started: {exc}"
            log.info("markdown.watch_unavailable", root=str(self.root), error=str(exc))
            return
        self._watch = watch
        log.debug("markdown.watch_started", root=str(self.root))

    def _stop_watch(self, reason: str) -> None:
        watch, self._watch = self._watch, None
        self._known = None
        self._watch_error = reason
        if watch is not None:
            watch.stop()

    def _fresh(self) -> list[tuple[str, str]]:
        """Bring the index up to date for a read; returns the walk's ``skipped`` entries.

        Watched (third and later syncs of this object): only the paths the watcher reported
        are looked at. A full change scan instead when nothing is watched, the watch cannot
        be trusted (its observer stopped, watchdog warned of lost events, the root itself
        moved, a symlink appeared, a folder became unreadable) or the last full scan is
        older than :data:`WATCH_RESCAN_S`.
        """
        watch = self._watch
        if (
            watch is None
            or self._known is None
            or time.monotonic() - self._scanned_at > WATCH_RESCAN_S
            or self._index_open().rebuilds != self._synced_rebuilds
            or self._index_open().behind is not None
        ):
            return self._sync_index()[0].skipped
        watch.settle()
        files, dirs, reason = watch.take()
        if reason is None and (files or dirs) and not self._apply_changes(files, dirs):
            reason = "a change the watcher reported needs a full scan"
        if reason is not None:
            log.info("markdown.watch_rescan", root=str(self.root), reason=reason)
            if watch.replaced:
                self._stop_watch(reason)
                self._watch_error = None  # the scan below watches the folder there now
                # no folder there at all: the error a new process gets when it opens the store
                filestore.validate_store_root(self.root)
            elif not watch.alive():
                self._stop_watch(reason)
            return self._sync_index()[0].skipped
        return self._skipped

    def _apply_changes(self, files: set[str], dirs: set[str]) -> bool:
        """Sync the index for the reported paths only: folders are re-walked (notes under a
        folder that moved away are removed, notes under a new one added), files re-read or
        removed. ``False`` when a full scan is needed (a symlink, an unreadable entry)."""
        from goat_core.filestore.search import FileStat

        known = self._known
        assert known is not None
        index = self._index_open()
        root = str(self.root)

        def drop(rel: str) -> None:
            if known.pop(rel, None) is not None:
                index.remove(rel)
            self._cache.pop(rel, None)
            self._hit_notes.pop(rel, None)

        def put(nf: NoteFile) -> None:
            self._hit_notes.pop(nf.path, None)  # the watcher reported it: read it again
            note = self._load(nf.path, nf.mtime_ns, nf.size)
            if note is None:  # vanished or unreadable meanwhile: the next event or scan
                return
            if nf.path in self._cache:
                self._cache[nf.path] = note
            index.update_one(self._indexed_doc(note), FileStat(*nf))
            known[nf.path] = nf

        for folder in sorted(dirs, key=len):
            prefix = folder + "/"
            present = _notes_under(root, folder)
            if present is None:
                return False
            for rel in [p for p in known if p.startswith(prefix) and p not in present]:
                drop(rel)
            for rel, nf in present.items():
                if known.get(rel) != nf:
                    put(nf)
        for rel in files:
            try:
                st = os.lstat(os.path.join(root, rel))
            except (FileNotFoundError, NotADirectoryError):
                drop(rel)
                continue
            except OSError:
                return False
            if stat.S_ISREG(st.st_mode):
                put(NoteFile(rel, st.st_mtime_ns, st.st_size))  # re-read: the event says so
            elif stat.S_ISLNK(st.st_mode) or stat.S_ISDIR(st.st_mode):
                return False
            else:
                drop(rel)
        return True

    def _documents(self) -> list[DocInfo]:
        """Indexed notes (path, title, id, problem) in page order; call after a sync."""
        return self._index_open().documents()

    def _index_note(self, rel: str) -> _Note | None:
        note = super()._index_note(rel)
        if note is not None and self._known is not None:
            self._known[rel] = NoteFile(rel, note.mtime_ns, note.size)
        return note

    # -- writes (worker thread) -----------------------------------------------------------------
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
            try:
                updated = set_keys(current, {"updated": _now()})
            except UneditableFrontmatter as exc:
                raise Conflict(
                    f"{note.path} was not changed: {exc}; such notes are never rewritten "
                    "(fix the note or choose another title)"
                ) from None
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
        existing = {_fold(f.path) for f in walk.folders.get("", ())}  # the root's notes
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
            raise filestore.ambiguous_pages(title, [d.path for d in exact])
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
            walk=self._swept(walk_notes(self.root)),
        )

    def _write(self, write: MemoryWrite, kind: str) -> Receipt:
        text = self._check_text(write)
        with self._lock:
            if kind == "feedback" and write.on:
                self._sync_index()
                target = self._resolve(write.on, self._refs())
                rel = self._append(self._must_load(target), _stamp(_now()) + " feedback", text)
            elif write.title is not None and write.title.strip():
                rel = self._remember_titled(write, text, kind)
            else:
                rel = self._remember_untitled(write, text, kind)
        return self._receipt(rel)

    def _forget(self, ref: str) -> Receipt:
        with self._lock:
            self._sync_index()
            rel = self._resolve(ref, self._refs(), exact_paths=True)
            contain(self.root, rel)
            path = self.root / rel  # a symlinked note: the link goes, not its target
            try:
                os.unlink(path)
            except FileNotFoundError as exc:
                raise NotFound(f"page {rel!r} in {self.label()} vanished meanwhile") from exc
            fsync_dir(path.parent)
            self._cache.pop(rel, None)
            self._hit_notes.pop(rel, None)
            self._index_open().remove(rel)
            if self._known is not None:
                self._known.pop(rel, None)
        return self._receipt(rel, removed=(rel,))

    # -- reads (worker thread) ------------------------------------------------------------------
    def _recall(self, query: str, limit: int) -> RecallResult:
        return self._whole_read(lambda: self._recall_once(query, limit))

    def _recall_once(self, query: str, limit: int) -> RecallResult:
        skipped = self._fresh()
        index = self._index_open()
        results = self._ranked(query, limit)
        items = []
        for hit in results.hits:
            # only the hits are read (at most ``limit`` files; each stat-checked, re-read
            # and parsed only when it changed since the last recall that returned it)
            note = self._hit_note(hit.path)
            source = note.data.get("source") if note is not None else None
            items.append(
                filestore.recall_item(
                    hit, note, source=str(source) if isinstance(source, str) else None
                )
            )
        # a note the walk withheld (a symlink out of the store, an unreadable file) might
        # have matched: not complete, as pages says (filestore.withheld)
        complete = (
            bool(results.complete)
            and results.total <= len(items)
            and not filestore.withheld(skipped)
            and not index.unsearched
        )
        degraded = self._degraded(skipped, index.problems())
        degraded += filestore.unsearched_reasons(index.unsearched)
        degraded += [d for d in results.degraded if d not in degraded]
        # A ranked top-``limit`` is not degraded: ``complete=False`` says more matched.
        return RecallResult(
            scope=self.scope.key, items=tuple(items), complete=complete, degraded=tuple(degraded)
        )

    def _list_pages(self, limit: int, cursor: str | None) -> PageList:
        return self._whole_read(lambda: self._list_pages_once(limit, cursor))

    def _list_pages_once(self, limit: int, cursor: str | None) -> PageList:
        walk, _stats = self._sync_index()
        ordered = [f.path for f in walk.files]  # already in page order
        chunk, more, next_cursor = filestore.page_window(ordered, limit, cursor, issuer="store")
        degraded = self._degraded(walk.skipped, self._problems()) + self._behind()
        # only the listed notes are read (etag, updated, title)
        items, unread = filestore.page_summaries(chunk, self._load)
        degraded += unread
        unreadable = len(items) < len(chunk) or bool(filestore.withheld(walk.skipped))
        return PageList(
            items=tuple(items),
            next_cursor=next_cursor,
            complete=not more and not unreadable,
            degraded=tuple(degraded),
        )

    def _get_page(self, ref: str) -> Page:
        def read() -> Page:
            self._fresh()
            return self._page(self._must_load(self._resolve(ref, self._refs())))

        return self._whole_read(read)

    def _link_inputs(self) -> tuple[_Scan, list[tuple[PageSummary, str]], list[str]]:
        scan = self._scan()
        pages = [(n.summary(), n.body) for n in scan.notes]
        paths = [n.path for n in scan.notes] + list(scan.walk.attachments)
        return scan, pages, paths

    def _link_map(self) -> LinkMap:
        from goat_core.filestore import build_link_map

        scan, pages, paths = self._link_inputs()
        result = build_link_map(pages, paths)
        problems = [(n.path, n.error) for n in scan.notes if n.error]
        degraded = tuple(result.degraded) + tuple(self._degraded(scan.walk.skipped, problems))
        return result.model_copy(update={"degraded": degraded}) if degraded else result

    def _connections(self, ref: str) -> Connections:
        from goat_core.filestore import connections

        scan, pages, paths = self._link_inputs()
        rel = self._resolve(ref, [(n.path, n.title, n.fm_id) for n in scan.notes])
        return connections(pages, rel, paths)

    def _reindex(self, progress: Callable[[int, int], None] | None) -> dict[str, int]:
        walk, stats = self._sync_index(progress, watch=False)
        counts = _counts(stats)
        counts.setdefault("notes", self._index_open().stats().documents)
        counts["skipped"] = len(walk.skipped)
        counts["unparsable"] = len(self._index_open().problems())
        return counts

    def operations(self) -> Sequence[ProviderOperation]:
        """``import_pages``: copies and imports written with provenance (see
        :mod:`goat_markdown.transfer`)."""
        from goat_markdown.transfer import ImportStore, markdown_operations

        def current() -> tuple[Any, Any]:
            walk, _stats = self._sync_index(watch=False)
            return walk, self._scan().notes

        store = ImportStore(self.root, self._lock, current, self._index_note, self._receipt)
        return markdown_operations(self, store)

    def _close(self) -> None:
        self._stop_watch("closed")
        super()._close()


def _counts(stats: SyncStats) -> dict[str, int]:
    return {
        "scanned": stats.scanned,
        "added": stats.added,
        "updated": stats.updated,
        "removed": stats.removed,
        "unchanged": stats.unchanged,
        "unreadable": stats.skipped,
    }


def _notes_under(root: str, folder: str) -> dict[str, NoteFile] | None:
    """``{path: NoteFile}`` of the notes now under ``folder`` (store-relative; empty when it
    is gone or no folder), or ``None`` when only a full scan can tell (a symlink, an
    unreadable entry)."""
    prefix = folder + "/"
    try:
        lst: os.stat_result | None = os.lstat(os.path.join(root, folder))
    except (FileNotFoundError, NotADirectoryError):
        lst = None
    except OSError:
        return None
    present: dict[str, NoteFile] = {}
    if lst is not None and stat.S_ISLNK(lst.st_mode):
        return None
    if lst is not None and stat.S_ISDIR(lst.st_mode):
        sub = walk_notes(os.path.join(root, folder))
        if sub.symlinks or sub.skipped:
            return None
        for f in sub.files:
            rel = prefix + f.path
            present[rel] = NoteFile(rel, f.mtime_ns, f.size)
    return present
