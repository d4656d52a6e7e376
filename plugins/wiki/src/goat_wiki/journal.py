"""Keeping ``index.md`` and ``log.md`` true: the intent journal every write goes through.

Every write (page write, remember, feedback, forget, ingest, lint fixes) runs under the store's
cross-process :class:`~goat_core.filestore.StoreLock` and follows an intent journal kept under the
GOAT home: journal, page file, ``index.md`` line, ``log.md`` entry, journal removed. A journal
left by a crash or a failed write is completed on the next call (:meth:`WikiJournal._recover`,
which every read's index sync runs first), so the index and log never drift from what was
written: the log records only writes whose files hold the bytes planned for them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from goat_core import filestore
from goat_core.errors import Conflict, GoatError
from goat_core.fileio import is_utf8, shown_name
from goat_core.filestore import (
    MISSING_ETAG,
    WalkResult,
    append_entry,
    atomic_write,
    current_etag,
    etag,
    walk_notes,
)
from goat_core.logs import get_logger
from goat_wiki import text as wt
from goat_wiki.layout import KINDS, Layout, WikiNote, WikiStore, one_line

__all__ = ["WikiJournal"]

log = get_logger("goat_wiki")
_now = filestore.now_utc


def _why(exc: BaseException) -> str:
    """``exc`` in a few words that stay the same while the fault lasts: an OS error names
    the folder it could not write in (not the temp file, whose name changes each time)."""
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.strerror or type(exc).__name__}: {Path(os.fsdecode(exc.filename)).parent}"
    return str(exc)


def _read_or_none(path: Path) -> bytes | None:
    """The bytes of ``path``, or ``None`` when there is no such file."""
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None


class WikiJournal(WikiStore):
    """The wiki's own files kept in step with its pages (see the module docstring)."""

    def _sync(
        self, progress: Callable[[int, int], None] | None = None
    ) -> tuple[WalkResult, Layout]:
        """The change scan: one stat walk, then an index sync loading only changed pages."""
        from goat_core.filestore.search import FileStat

        self._recover()
        walk = self._walk()
        layout = self._layout()
        load = filestore.index_loader(self._load, self._cache, self._indexed_doc)
        files = (FileStat(f.path, f.mtime_ns, f.size) for f in self._page_files(walk, layout))
        # a read reports through the host's sink (a first indexing can take minutes)
        sink = progress if progress is not None else self.context.progress
        self._index_open().sync(files, load, progress=sink)
        return walk, layout

    def _ensure_files(self, *, raw: bool = False) -> Layout:
        """Create what is missing of schema, index and log (and the raw folder when
        ``raw``); a new, empty wiki also gets its page folders. Call under the lock."""
        layout = self._layout()
        empty = self._is_empty()
        for kind in KINDS:
            if getattr(layout, kind) is None:
                taken = [n for n, k in layout.taken if k == kind]
                raise Conflict(
                    f"cannot create the wiki's {kind} file: {' and '.join(taken)} are users' "
                    f"notes; set {kind}_fallback to a free name (goat bind ... --set "
                    f"{kind}_fallback=NAME.md)"
                )
        walk = walk_notes(self.root)
        if layout.schema not in layout.own:
            schema = self._schema(layout, walk)
            if empty:
                for folder in schema.folders:
                    (self.root / folder).mkdir(exist_ok=True)
            self._write_schema(layout, schema)
        if layout.log not in layout.own:
            assert layout.log is not None
            text = self._provider_frontmatter("log") + "# Log\n"
            atomic_write(self.root / layout.log, text.encode("utf-8"), expected_etag=MISSING_ETAG)
        if (raw or empty) and layout.raw is not None:
            self._ensure_raw(layout)
        layout = self._layout()
        if layout.index not in layout.own:
            self._rebuild_index(layout)
            layout = self._layout()
        return layout

    def _recover(self) -> None:
        """Complete a write a crash or a failure interrupted (once per process, and before
        each write): the index lines of its pages follow the files, the log records only
        what landed, and the sources an import stored are entered in the manifest.

        A read (the search index not syncing strictly) never fails because the journal
        cannot be applied now (a read-only or full wiki folder): it answers, and
        :meth:`_pending_journal` says why in its ``degraded``; the next write that can
        applies it. A write raises the error (``StoreUnwritable`` at the provider's edge).
        """
        if self._recovered and not self._journal_path.exists():
            return
        self._recovered = True
        try:
            raw = self._journal_path.read_text("utf-8")
        except FileNotFoundError:
            self._journal_error = None
            return
        try:
            journal = json.loads(raw)
        except ValueError:
            log.warning("wiki.journal_unreadable", path=str(self._journal_path))
            self._journal_path.unlink(missing_ok=True)
            return
        try:
            with self._lock:
                self._apply_journal(journal)
                self._journal_path.unlink(missing_ok=True)
        except (OSError, GoatError) as exc:
            self._journal_error = _why(exc)
            if self._index_open().strict:
                raise
            log.warning("wiki.journal_pending", path=str(self._journal_path), error=str(exc))
            return
        self._journal_error = None

    def _pending_journal(self) -> list[str]:
        """The ``degraded`` line of a read while an interrupted write's journal could not be
        applied (else none)."""
        if self._journal_error is None or not self._journal_path.exists():
            return []
        return [
            f"an interrupted write's journal ({self._journal_path}) could not be applied "
            f"({self._journal_error}); index.md, log.md and the source manifest may be "
            "behind until a write can apply it"
        ]

    def _apply_journal(self, journal: dict[str, Any]) -> None:
        """Bring index, log and manifest in line with what of ``journal`` landed: a file
        landed when it holds exactly the bytes planned for it (an empty plan: nothing
        landed). With ``parts`` (an import), the log entry lists only the parts whose page
        landed, titled by ``title_of``, and only their ``sources`` enter the manifest."""
        expect: dict[str, str] = journal.get("expect") or journal.get("planned") or {}
        there = {p for p, after in expect.items() if current_etag(self.root / p) == after}
        parts = journal.get("parts")
        title, details = journal["title"], journal["details"]
        if parts is None:
            landed = bool(expect) and len(there) == len(expect)
        else:
            got = [part for part in parts if part["page"] in there]
            landed = bool(got)
            details = [line for part in got for line in part["details"]]
            title = journal["title_of"].format(n=len(got), s="" if len(got) == 1 else "s")
        self._enter_sources(journal.get("sources"), there)
        layout = self._layout()
        if layout.index in layout.own:
            self._update_index(layout, journal.get("pages", []))
        if landed and layout.log is not None:
            log_path = self.root / layout.log
            if current_etag(log_path) == journal.get("log_before"):
                self._append_log(layout, journal["op"], title, details, journal["date"])
        log.info("wiki.journal_completed", op=journal.get("op"), landed=landed)

    def _enter_sources(self, sources: dict[str, Any] | None, there: set[str]) -> None:
        """Settle the sources an interrupted import stored: ``sources["entries"]`` holds
        ``{"page", "source"}`` (a page and the manifest entry of the new source it cites).
        A source whose page landed (``there``) enters the manifest; one whose page did not
        is removed (its raw file alone, never listed or cited), so importing again stores
        it under its own id."""
        if not sources:
            return
        from goat_wiki.sources import Manifest, Source

        manifest_path = self.root / sources["manifest"]
        raw_dir = manifest_path.parent
        manifest = Manifest.load(manifest_path)
        known = {s.id for s in manifest.sources}
        added = False
        for item in sources["entries"]:
            entry = item["source"]
            raw = raw_dir / entry["id"]
            if entry["id"] in known or current_etag(raw) != entry["hash"]:
                continue
            if item["page"] not in there:
                raw.unlink()
                continue
            source = Source(**entry)
            manifest.sources.append(source)
            manifest.supersede(source.origin, source)
            known.add(source.id)
            added = True
        if added:
            manifest.save(manifest_path)

    def _commit(
        self,
        op: str,
        title: str,
        pages: Sequence[str],
        details: Sequence[str],
        change: Callable[[], dict[str, str]],
        *,
        layout: Layout | None = None,
        planned: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Run ``change`` (returns ``{path: etag after}`` of what it wrote) and keep the
        index lines of ``pages`` and a log entry true, through the intent journal. Call
        under the lock.

        :param planned: ``{path: etag after}`` the change will write, known before it runs:
            after a crash the log then records what landed. Without it, a change that did
            not return (failed, or killed) is logged as nothing landed. A change that finds
            its effect was another writer's (a page removed meanwhile) clears it before
            raising, so nothing is logged.
        :param extra: more of the journal (``parts``, ``title_of``, ``sources``: see
            :meth:`_apply_journal`).

        A change that raises is rolled forward at once (:meth:`_apply_journal`: the log
        records only what landed) before the error goes on; when even that cannot be
        written, the journal stays for the next call.

        A change that landed while its bookkeeping (journal, index line, log entry) then
        fails is rolled back: the files of ``planned`` get their bytes from before, so the
        error's "nothing was stored" is true. When the rollback cannot be written either,
        the write stands and returns (its journal stays pending: reads say so in
        ``degraded`` until a write applies it).
        """
        layout = layout or self._ensure_files()
        assert layout.log is not None
        date = _now().strftime("%Y-%m-%d")
        journal: dict[str, Any] = {
            "op": op,
            "title": title,
            "pages": list(pages),
            "details": list(details),
            "date": date,
            "log_before": current_etag(self.root / layout.log),
            "planned": planned if planned is not None else {},
            "expect": {},
            **(extra or {}),
        }
        self._journal_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        atomic_write(self._journal_path, json.dumps(journal).encode("utf-8"))
        before = {p: _read_or_none(self.root / p) for p in journal["planned"]}
        try:
            expect = change()
        except BaseException:
            self._settle(journal)
            raise
        try:
            journal["expect"] = expect
            atomic_write(self._journal_path, json.dumps(journal).encode("utf-8"))
            self._update_index(layout, pages)
            self._append_log(layout, op, title, details, date)
        except (OSError, GoatError) as exc:
            if not self._roll_back(expect, before):
                self._journal_error = _why(exc)
                log.warning("wiki.journal_pending", path=str(self._journal_path), error=str(exc))
                return  # the write landed: it stands, its bookkeeping is pending
            self._settle(journal)
            raise
        self._journal_path.unlink(missing_ok=True)

    def _settle(self, journal: dict[str, Any]) -> None:
        """Roll ``journal`` forward to what landed (nothing logged when nothing did) and
        remove it; when that cannot be written, it stays for the next call."""
        try:
            self._apply_journal(journal)
        except (OSError, GoatError) as exc:
            self._journal_error = _why(exc)
            log.warning("wiki.journal_pending", path=str(self._journal_path), error=str(exc))
        else:
            self._journal_path.unlink(missing_ok=True)

    def _roll_back(self, expect: dict[str, str], before: dict[str, bytes | None]) -> bool:
        """Give each file a change wrote (``expect``: ``{path: etag after}``) its bytes from
        ``before`` (``None``: it did not exist); ``False`` when one cannot be restored (no
        bytes kept of it, or the restore fails), leaving the rest as they are."""
        restored = True
        for rel, after in expect.items():
            if rel not in before:
                restored = False
                continue
            path, old = self.root / rel, before[rel]
            try:
                if current_etag(path) != after:
                    continue  # not this write's bytes (another writer's): left alone
                if old is None:
                    path.unlink()
                else:
                    atomic_write(path, old, expected_etag=after)
            except (OSError, GoatError) as exc:
                log.warning("wiki.rollback_failed", path=str(path), error=str(exc))
                restored = False
        return restored

    def _index_entry(self, note: WikiNote) -> str:
        return wt.index_line(
            wt.IndexEntry(note.path, note.title, wt.derive_summary(note.data, note.body))
        )

    def _rebuild_index(self, layout: Layout) -> int:
        """Write the whole index from every page; returns the number of lines. A page whose
        file name is not UTF-8 gets no line (the index is UTF-8 text; a log line names it,
        and recall names it as not searched)."""
        assert layout.index is not None
        scan = self._scan()
        lines = {}
        for n in scan.notes:
            if not is_utf8(n.path):
                log.warning("wiki.index_unlisted", path=shown_name(n.path), why="not UTF-8")
                continue
            lines[n.path] = self._index_entry(n)
        text = wt.render_index(lines, self._provider_frontmatter("index"))
        path = self.root / layout.index
        expected = current_etag(path)
        if expected != MISSING_ETAG and layout.index not in layout.own:
            raise Conflict(f"{layout.index} is a user's note; the index was not written")
        atomic_write(path, text.encode("utf-8"), expected_etag=expected)
        return len(lines)

    def _update_index(self, layout: Layout, pages: Iterable[str]) -> None:
        """Set or drop the index lines of ``pages`` (read from disk now)."""
        if layout.index is None:
            return
        path = self.root / layout.index
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            self._rebuild_index(layout)
            return
        lines = {p: line for p, (_n, line) in wt.parse_index(raw.decode("utf-8")).items()}
        for rel in pages:
            note = self._load(rel) if (self.root / rel).is_file() else None
            if note is None:
                lines.pop(rel, None)
            else:
                lines[rel] = self._index_entry(note)
        text = wt.render_index(lines, self._provider_frontmatter("index"))
        if text.encode("utf-8") != raw:
            atomic_write(path, text.encode("utf-8"), expected_etag=etag(raw))

    def _append_log(
        self, layout: Layout, op: str, title: str, details: Sequence[str], date: str
    ) -> None:
        assert layout.log is not None
        path = self.root / layout.log
        raw = path.read_bytes()
        heading = f"[{date}] {op} | {one_line(title) or '(untitled)'}"
        body = "\n".join(details) if details else f"- {op}"
        new = append_entry(raw.decode("utf-8"), heading, body)
        atomic_write(path, new.encode("utf-8"), expected_etag=etag(raw))
