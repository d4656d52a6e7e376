"""The wiki provider: the LLM Wiki pattern on a folder of Markdown pages (DESIGN section 5).

Layout (names configurable, see :class:`~goat_wiki.plugin.WikiSettings`)::

    raw/                 immutable sources, each stored once, with .goat-wiki-manifest.json
    sources/ entities/ concepts/ syntheses/    page folders named by the schema
    schema.md  index.md  log.md                the provider's own files (frontmatter marker)

The provider's own files start with ``---`` and ``goat-wiki: <kind>`` on the first
frontmatter line; a file of the same name without that marker is a user's note and is never
taken over (the fallback name is used and lint reports ``name-taken``). The provider's files
and the raw folder are not pages.

Every write (page write, remember, feedback, forget, ingest, lint fixes) runs under the store's
cross-process :class:`~goat_core.files.StoreLock` and follows an intent journal kept under the
GOAT home: journal, page file, ``index.md`` line, ``log.md`` entry, journal removed. A journal
left by a crash is completed on the next call, so the index and log never drift from what was
written. Reads start with one stat walk and a :class:`~goat_core.search.SearchIndex` sync that
loads only changed pages; recall, listing and single-page reads never read every page. The link
map, connections and lint read every page (each once per change, cached by mtime and size).
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goat_core import pages as core_pages
from goat_core.errors import (
    BadInput,
    Conflict,
    NotFound,
    PathError,
    Rejected,
    ScopeError,
    TooLarge,
)
from goat_core.files import (
    MISSING_ETAG,
    StoreLock,
    WalkResult,
    atomic_write,
    contain,
    current_etag,
    etag,
    fsync_dir,
    safe_title_filename,
    validate_store_root,
    walk_notes,
)
from goat_core.frontmatter import append_entry, parse_note, render_note, set_keys
from goat_core.logs import get_logger
from goat_core.models import (
    Connections,
    Health,
    LinkMap,
    LinkResolution,
    MemoryWrite,
    Page,
    PageList,
    ProviderSpec,
    RecallResult,
    Receipt,
    ReceiptStatus,
    normalize_pen_id,
)
from goat_core.provider import (
    ModelTool,
    Provider,
    ProviderContext,
    ProviderOperation,
    StoreWorker,
)

from goat_wiki import text as wt
from goat_wiki.sources import MANIFEST_NAME, Manifest, Source

if TYPE_CHECKING:
    from goat_core.links import LinkIndex
    from goat_core.search import IndexedDoc, SearchIndex

    from goat_wiki.plugin import WikiSettings

__all__ = ["MARKER_KEY", "Finding", "LintReport", "PageWrite", "WikiProvider"]

log = get_logger("goat_wiki")

#: Frontmatter key marking the provider's own files (``goat-wiki: index``).
MARKER_KEY = "goat-wiki"
_KINDS = ("index", "log", "schema")
_MAX_SOURCE_BYTES = 50 * 1024 * 1024
_READ_SOURCE_CHARS = 100_000
#: Markup dropped before untitled text is titled: Markdown's, plus table pipes.
_TITLE_MARKUP = core_pages.MARKUP_CHARS + "|"
_now = core_pages.now_utc
_stem = core_pages.file_stem
_fold = core_pages.fold
_nfc = core_pages.nfc
_sort_key = core_pages.page_order
_str_list = core_pages.str_list


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


@dataclass(frozen=True)
class Finding:
    """One lint finding (the ``--json`` shape, issue "LLM Wiki provider" item 4).

    :param code: ``broken-link``, ``missing-attachment``, ``ambiguous-link``, ``bare-link``,
        ``escaped-alias-pipe``, ``broken-anchor``, ``orphan-page``, ``index-drift``,
        ``log-gap``, ``stale-page``, ``no-sources``, ``schema-folder-drift``,
        ``footnote-undefined``, ``name-taken``, ``unparsable-frontmatter``.
    :param severity: ``error``, ``warning`` or ``info``.
    :param path: the file concerned (store-relative), ``None`` for the wiki as a whole.
    :param line: 1-based line in that file, if any. :param target: the link target,
        source id or name concerned, if any.
    :param fixable: ``lint --fix`` repairs it deterministically.
    """

    code: str
    severity: str
    path: str | None
    line: int | None
    target: str | None
    message: str
    fixable: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "path": self.path,
            "line": self.line,
            "target": self.target,
            "message": self.message,
            "fixable": self.fixable,
        }


@dataclass(frozen=True)
class LintReport:
    """Findings (after fixes, when fixing) and what was fixed."""

    findings: tuple[Finding, ...] | list[Finding]
    fixed: tuple[Finding, ...] | list[Finding] = ()
    #: why findings are missing (e.g. ``"2 findings hidden by policy"``); empty when whole.
    degraded: tuple[str, ...] | list[str] = ()

    def to_json(self) -> dict[str, Any]:
        """``{"findings": [...], "fixed": [...]}``, plus ``"degraded"`` when findings about
        pages a browse policy hides were left out."""
        out: dict[str, Any] = {
            "findings": [f.to_json() for f in self.findings],
            "fixed": [f.to_json() for f in self.fixed],
        }
        if self.degraded:
            out["degraded"] = list(self.degraded)
        return out

    def count(self, code: str) -> int:
        return sum(1 for f in self.findings if f.code == code)


@dataclass(frozen=True)
class PageWrite:
    """A page write (``goat wiki write``, the ``wiki_write_page`` tool).

    :param title: the page title; without ``folder``, ``folder/Title`` names the folder too
        (with ``folder`` given, a ``/`` is part of the title: ``TCP/IP`` -> ``TCP-IP.md``).
    :param body: the page text, with or without a frontmatter block (its keys are kept;
        ``title``, ``type``, ``summary`` and ``sources`` given here win).
    :param folder: a schema folder (or its obvious singular/plural); default: from ``type``,
        else the schema's default folder.
    :param type: the page type (default: the folder's singular).
    :param summary: the index line (default: derived from the body).
    :param sources: ids of ingested sources the page's claims come from.
    :param etag: the etag read before an update; required to update an existing page.
    """

    title: str
    body: str
    folder: str | None = None
    type: str | None = None
    summary: str | None = None
    sources: tuple[str, ...] | None = None
    etag: str | None = None


class _Note(core_pages.StoredNote):
    """A page file as read (see :class:`goat_core.pages.StoredNote`)."""

    @property
    def is_wiki_page(self) -> bool:
        """Written through the wiki (its frontmatter has ``sources``)."""
        return "sources" in self.data


@dataclass(frozen=True)
class _Layout:
    """Where the provider's files are. A name is ``None`` when both it and its fallback are
    users' files."""

    index: str | None
    log: str | None
    schema: str | None
    raw: str | None
    own: frozenset[str]  # provider files that exist and carry the marker
    taken: tuple[tuple[str, str], ...]  # (name, kind) of users' files holding a name

    def is_page(self, rel: str) -> bool:
        if rel in self.own:
            return False
        return not (self.raw is not None and rel.startswith(self.raw + "/"))


@dataclass(frozen=True)
class _Schema:
    folders: tuple[str, ...]
    default_folder: str
    root_pages: bool
    stored: bool


@dataclass
class _Scan:
    walk: WalkResult
    layout: _Layout
    notes: list[_Note] = field(default_factory=list)


class WikiProvider(Provider):
    """One wiki for one scope.

    :param context: scope, binding, validated :class:`~goat_wiki.plugin.WikiSettings`, home.
    :param spec: the provider's declaration.
    :raises PathError: the root is ``/``, a home directory itself, or not a folder.
    :raises ScopeError: a forged, non-canonical Pen id.
    """

    def __init__(self, context: ProviderContext, *, spec: ProviderSpec) -> None:
        super().__init__(context)
        self.spec = spec
        pen_id = context.scope.pen_id
        if pen_id is not None and normalize_pen_id(pen_id) != pen_id:
            raise ScopeError(f"Pen id {pen_id!r} is not canonical; no wiki was opened")
        from goat_wiki.plugin import WikiSettings

        settings = context.settings
        if not isinstance(settings, WikiSettings):
            settings = WikiSettings.model_validate(context.binding.settings)
        self.settings: WikiSettings = settings
        if settings.root is None:
            default = context.home.default_store_dir(context.scope)
            default.mkdir(mode=0o700, parents=True, exist_ok=True)
            raw_root = default
        else:
            raw_root = Path(settings.root).expanduser()
        self.root: Path = validate_store_root(raw_root)
        home = context.home
        self._lock = StoreLock(home.lock_path(self.root))
        self._index_path = home.index_path(self.root, "wiki")
        self._journal_path = home.index_dir / f"{home.store_key(self.root)}-wiki-journal.json"
        self._worker = StoreWorker(home.store_key(self.root))
        self._index: SearchIndex | None = None
        self._cache: dict[str, _Note] = {}
        self._anchor_cache: dict[tuple[str, str], tuple[set[str], set[str]]] = {}
        self._recovered = False
        self._closed = False

    # == files and layout ========================================================================
    def _marked(self, rel: str, kind: str) -> bool | None:
        """``True``: the provider's file of ``kind``; ``False``: someone else's; ``None``:
        no such file."""
        path = self.root / rel
        try:
            with open(path, "rb") as fh:
                head = fh.read(256)
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            return False
        text = head.decode("utf-8", "replace").replace("\r\n", "\n").lstrip("\ufeff")
        return text.startswith(f"---\n{MARKER_KEY}: {kind}\n")

    def _layout(self) -> _Layout:
        s = self.settings
        chosen: dict[str, str | None] = {}
        own: set[str] = set()
        taken: list[tuple[str, str]] = []
        for kind, names in (
            ("index", (s.index_file, s.index_fallback)),
            ("log", (s.log_file, s.log_fallback)),
            ("schema", (s.schema_file, s.schema_fallback)),
        ):
            states = [(n, self._marked(n, kind)) for n in names]
            ours = [n for n, st in states if st is True]
            free = [n for n, st in states if st is None]
            taken += [(n, kind) for n, st in states if st is False]
            if ours:
                chosen[kind] = ours[0]
                own.add(ours[0])
            else:
                chosen[kind] = free[0] if free else None
        raw: str | None = None
        for name in (s.raw_folder, s.raw_fallback):
            folder = self.root / name
            if not folder.exists() or (folder / MANIFEST_NAME).is_file():
                raw = name
                break
            taken.append((name, "raw"))
        return _Layout(
            index=chosen["index"],
            log=chosen["log"],
            schema=chosen["schema"],
            raw=raw,
            own=frozenset(own),
            taken=tuple(t for t in taken if t[0] != raw),
        )

    def _page_files(self, walk: WalkResult, layout: _Layout) -> list[Any]:
        return [f for f in walk.files if layout.is_page(f.path)]

    def _top_folders(self, layout: _Layout) -> list[str]:
        names = []
        try:
            with os.scandir(self.root) as it:
                for entry in it:
                    if entry.name.startswith(".") or not entry.is_dir():
                        continue
                    if entry.name == layout.raw:
                        continue
                    names.append(_nfc(entry.name))
        except OSError:
            return []
        return sorted(names, key=str.casefold)

    def _schema(self, layout: _Layout, walk: WalkResult | None = None) -> _Schema:
        """The schema file's folders, or (before it exists) what it would say: a new, empty
        wiki gets the settings' folders; a bound vault its own top-level folders plus the
        default folder, with pages at the root allowed."""
        s = self.settings
        if layout.schema is not None and layout.schema in layout.own:
            parsed = parse_note((self.root / layout.schema).read_text("utf-8", "replace"))
            folders = tuple(_str_list(parsed.data.get("folders")))
            default = parsed.data.get("default_folder")
            if folders:
                return _Schema(
                    folders=folders,
                    default_folder=str(default) if default else s.default_folder,
                    root_pages=bool(parsed.data.get("root_pages", False)),
                    stored=True,
                )
        walk = walk if walk is not None else walk_notes(self.root)
        pages = self._page_files(walk, layout)
        top = self._top_folders(layout)
        if not pages and not top:
            return _Schema(tuple(s.folders), s.default_folder, False, False)
        found = list(top)
        if not any(f.casefold() == s.default_folder.casefold() for f in found):
            found.append(s.default_folder)
        return _Schema(tuple(found), s.default_folder, True, False)

    def _is_empty(self) -> bool:
        try:
            with os.scandir(self.root) as it:
                return not any(not e.name.startswith(".") for e in it)
        except OSError:
            return False

    def _provider_frontmatter(self, kind: str, extra: dict[str, Any] | None = None) -> str:
        data: dict[str, Any] = {MARKER_KEY: kind, **(extra or {})}
        return render_note(data, "")

    def _ensure_files(self, *, raw: bool = False) -> _Layout:
        """Create what is missing of schema, index and log (and the raw folder when
        ``raw``); a new, empty wiki also gets its page folders. Call under the lock."""
        layout = self._layout()
        empty = self._is_empty()
        for kind in _KINDS:
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

    def _ensure_raw(self, layout: _Layout) -> Path:
        if layout.raw is None:
            names = [n for n, k in layout.taken if k == "raw"]
            raise Conflict(
                f"cannot create the sources folder: {' and '.join(names)} are users' folders; "
                "set raw_fallback to a free name"
            )
        folder = self.root / layout.raw
        folder.mkdir(exist_ok=True)
        manifest = folder / MANIFEST_NAME
        if not manifest.exists():
            Manifest().save(manifest)
        return folder

    def _write_schema(self, layout: _Layout, schema: _Schema) -> None:
        assert layout.schema is not None
        s = self.settings
        folders = ", ".join(f"`{f}/`" for f in schema.folders)
        body = (
            "# Wiki schema\n\n"
            "Conventions of this wiki, kept by the provider.\n\n"
            f"- Pages live in the folders {folders}; a page written without a folder goes to "
            f"`{schema.default_folder}/`.\n"
            f"- `{s.raw_folder}/` holds the ingested sources, unchanged. Pages cite them in "
            "their `sources` frontmatter (source id and content hash).\n"
            "- Every page has frontmatter `title`, `type`, `summary` (its line in the index), "
            "`sources` and `updated`.\n"
            "- Link pages with folder-qualified wikilinks, e.g. `[[concepts/Attention]]`; "
            "escape an alias pipe (`\\|`) only inside tables.\n"
            f"- `{layout.index}` lists every page; `{layout.log}` records every operation as "
            "`## [YYYY-MM-DD] op | title` (UTC). Both are written by the provider only.\n"
        )
        fm = self._provider_frontmatter(
            "schema",
            {
                "folders": list(schema.folders),
                "default_folder": schema.default_folder,
                "root_pages": schema.root_pages,
            },
        )
        atomic_write(
            self.root / layout.schema, (fm + body).encode("utf-8"), expected_etag=MISSING_ETAG
        )

    # == notes ===================================================================================
    def _load(self, rel: str, mtime_ns: int = 0, size: int = 0) -> _Note | None:
        note = core_pages.read_note(self.root, rel, mtime_ns, size, noun="page")
        return None if note is None else _Note(**vars(note))

    def _must_load(self, rel: str) -> _Note:
        note = self._load(rel)
        if note is None:
            raise NotFound(f"page {rel!r} in {self.label()} vanished or is not readable")
        return note

    def _scan(self) -> _Scan:
        """Every page parsed (for map, connections, lint and a full index): one stat walk,
        re-reading only pages changed since this object last read them."""
        walk = walk_notes(self.root)
        layout = self._layout()
        notes = core_pages.refresh_notes(self._page_files(walk, layout), self._cache, self._load)
        return _Scan(walk=walk, layout=layout, notes=notes)

    # == search index ============================================================================
    def _index_open(self) -> SearchIndex:
        if self._index is None:
            self._index = core_pages.open_search_index(self._index_path)
        return self._index

    def _indexed_doc(self, note: _Note) -> IndexedDoc:
        return core_pages.indexed_doc(note, description_keys=("summary", "description"))

    def _sync(
        self, progress: Callable[[int, int], None] | None = None
    ) -> tuple[WalkResult, _Layout]:
        """The change scan: one stat walk, then an index sync loading only changed pages."""
        from goat_core.search import FileStat

        self._recover()
        walk = walk_notes(self.root)
        layout = self._layout()
        load = core_pages.index_loader(self._load, self._cache, self._indexed_doc)
        files = (FileStat(f.path, f.mtime_ns, f.size) for f in self._page_files(walk, layout))
        # a read reports through the host's sink (a first indexing can take minutes)
        sink = progress if progress is not None else self.context.progress
        self._index_open().sync(files, load, progress=sink)
        return walk, layout

    def _index_note(self, rel: str) -> None:
        note = self._load(rel)
        if note is not None:
            core_pages.index_note(self._index_open(), note, self._indexed_doc(note))

    def _refs(self) -> list[tuple[str, str, str | None]]:
        return [(d.path, d.title, d.ident) for d in self._index_open().documents()]

    # == resolution ==============================================================================
    def _resolve(
        self, ref: str, refs: Iterable[tuple[str, str, str | None]], *, exact_paths: bool = False
    ) -> str:
        """The page ``ref`` names: its path (with or without ``.md``), frontmatter ``id``,
        then a unique title or file name ignoring case (NFC)
        (:func:`goat_core.pages.resolve_page_ref`; pages sharing an ``id`` fall through to
        titles and names).

        :raises NotFound: nothing matches. :raises Ambiguous: several do.
        :raises PathError: an unsafe path (traversal, absolute...).
        """
        return core_pages.resolve_page_ref(
            ref,
            refs,
            root=self.root,
            where=self.label(),
            shared_ids_ambiguous=False,
            exact_paths=exact_paths,
        )

    # == journal, index and log ==================================================================
    def _recover(self) -> None:
        """Complete a write a crash interrupted (once per process, and before each write)."""
        if self._recovered and not self._journal_path.exists():
            return
        self._recovered = True
        try:
            raw = self._journal_path.read_text("utf-8")
        except FileNotFoundError:
            return
        with self._lock:
            try:
                journal = json.loads(raw)
            except ValueError:
                log.warning("wiki.journal_unreadable", path=str(self._journal_path))
                self._journal_path.unlink(missing_ok=True)
                return
            layout = self._layout()
            landed = all(
                current_etag(self.root / path) == after
                for path, after in journal.get("expect", {}).items()
            )
            if layout.index in layout.own:
                self._update_index(layout, journal.get("pages", []))
            if landed and layout.log is not None:
                log_path = self.root / layout.log
                if current_etag(log_path) == journal.get("log_before"):
                    self._append_log(
                        layout, journal["op"], journal["title"], journal["details"], journal["date"]
                    )
            log.info("wiki.journal_completed", op=journal.get("op"), landed=landed)
            self._journal_path.unlink(missing_ok=True)

    def _commit(
        self,
        op: str,
        title: str,
        pages: Sequence[str],
        details: Sequence[str],
        change: Callable[[], dict[str, str]],
        *,
        layout: _Layout | None = None,
    ) -> None:
        """Run ``change`` (returns ``{path: etag after}`` of what it wrote) and keep the
        index lines of ``pages`` and a log entry true, through the intent journal. Call
        under the lock."""
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
            "expect": {},
        }
        self._journal_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        atomic_write(self._journal_path, json.dumps(journal).encode("utf-8"))
        expect = change()
        journal["expect"] = expect
        atomic_write(self._journal_path, json.dumps(journal).encode("utf-8"))
        self._update_index(layout, pages)
        self._append_log(layout, op, title, details, date)
        self._journal_path.unlink(missing_ok=True)

    def _index_entry(self, note: _Note) -> str:
        return wt.index_line(
            wt.IndexEntry(note.path, note.title, wt.derive_summary(note.data, note.body))
        )

    def _rebuild_index(self, layout: _Layout) -> int:
        """Write the whole index from every page; returns the number of lines."""
        assert layout.index is not None
        scan = self._scan()
        lines = {n.path: self._index_entry(n) for n in scan.notes}
        text = wt.render_index(lines, self._provider_frontmatter("index"))
        path = self.root / layout.index
        expected = current_etag(path)
        if expected != MISSING_ETAG and layout.index not in layout.own:
            raise Conflict(f"{layout.index} is a user's note; the index was not written")
        atomic_write(path, text.encode("utf-8"), expected_etag=expected)
        return len(lines)

    def _update_index(self, layout: _Layout, pages: Iterable[str]) -> None:
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
        self, layout: _Layout, op: str, title: str, details: Sequence[str], date: str
    ) -> None:
        assert layout.log is not None
        path = self.root / layout.log
        raw = path.read_bytes()
        heading = f"[{date}] {op} | {_one_line(title) or '(untitled)'}"
        body = "\n".join(details) if details else f"- {op}"
        new = append_entry(raw.decode("utf-8"), heading, body)
        atomic_write(path, new.encode("utf-8"), expected_etag=etag(raw))

    # == manifest ================================================================================
    def _manifest(self, layout: _Layout) -> Manifest:
        if layout.raw is None:
            return Manifest()
        return Manifest.load(self.root / layout.raw / MANIFEST_NAME)

    def _source_ref(self, ref: str, layout: _Layout) -> str:
        ref = _nfc(ref.strip())
        if layout.raw is not None and ref.startswith(layout.raw + "/"):
            ref = ref[len(layout.raw) + 1 :]
        return ref

    # == page writes =============================================================================
    def _schema_folder(self, requested: str, schema: _Schema) -> str:
        top, _, rest = requested.strip("/").partition("/")
        raw_names = {self.settings.raw_folder.casefold(), self.settings.raw_fallback.casefold()}
        if top.casefold() in raw_names:
            raise BadInput(
                f"pages cannot be written into {top}/: ingested sources are immutable "
                "(rule raw-is-immutable)"
            )
        folder = wt.folder_for(top, schema.folders)
        if folder is None:
            raise BadInput(
                f"folder {top!r} is not defined by the wiki schema; allowed folders: "
                f"{', '.join(schema.folders)} (rule schema-folder)"
            )
        return f"{folder}/{rest}" if rest else folder

    def _reserved_title(self, name: str, layout: _Layout) -> None:
        names = {
            _stem(n).casefold()
            for n in (
                self.settings.index_file,
                self.settings.index_fallback,
                self.settings.log_file,
                self.settings.log_fallback,
                self.settings.schema_file,
                self.settings.schema_fallback,
            )
        }
        if name.casefold() in names:
            raise BadInput(
                f"title {name!r} is reserved for the wiki's own files (index, log, schema); "
                "they are written by the provider only (rule provider-file)"
            )

    def _cite(self, ids: Iterable[Any], layout: _Layout) -> list[dict[str, str]]:
        manifest = self._manifest(layout).by_id()
        cited: list[dict[str, str]] = []
        unknown = []
        for item in ids:
            ident = item.get("id") if isinstance(item, dict) else item
            if not isinstance(ident, str) or not ident.strip():
                raise BadInput(f"source {item!r} is not a source id")
            key = self._source_ref(ident, layout)
            src = manifest.get(key)
            if src is None:
                unknown.append(ident)
                continue
            if all(c["id"] != src.id for c in cited):
                cited.append({"id": src.id, "hash": src.hash})
        if unknown:
            raise BadInput(
                f"unknown source id(s): {', '.join(unknown)}; cite ids of ingested sources "
                "(goat wiki ingest; the wiki_ingest_status tool lists them) (rule source-id)"
            )
        return cited

    def _find_titled(self, name: str, folder: str | None) -> str | None:
        """The page a write of ``name`` (in ``folder``) updates, or ``None``."""
        docs = self._index_open().documents()
        if folder is not None:
            want = _fold(f"{folder}/{safe_title_filename(name)}.md")
            hits = [d.path for d in docs if _fold(d.path) == want]
            if hits:
                return hits[0]
        exact = [d.path for d in docs if d.title == name or _nfc(_stem(d.path)) == name]
        if folder is not None:
            exact = [p for p in exact if p.startswith(folder + "/")] or (
                exact if len(exact) == 1 else []
            )
        if len(exact) > 1:
            raise core_pages.ambiguous_pages(name, exact)
        if exact:
            return exact[0]
        key = _fold(name)
        twins = [d for d in docs if _fold(d.title) == key or _fold(_stem(d.path)) == key]
        if twins:
            names = ", ".join(f"{d.path!r} (title {d.title!r})" for d in twins)
            raise Conflict(
                f"title {name!r} differs only in case from existing page {names}; use its "
                "exact title to update it"
            )
        return None

    def _write_page(self, req: PageWrite) -> dict[str, Any]:
        body = req.body.replace("\r\n", "\n")
        if len(body) > self.spec.max_input_chars:
            raise TooLarge(
                f"page text is {len(body)} characters; at most {self.spec.max_input_chars}; "
                "nothing was written"
            )
        parsed = parse_note(body)
        if parsed.error is not None:
            raise BadInput(f"the page's frontmatter does not parse: {parsed.error}")
        given = dict(parsed.data)
        if MARKER_KEY in given:
            raise BadInput(
                f"frontmatter key {MARKER_KEY!r} marks the provider's own files; pages cannot "
                "carry it (rule provider-file)"
            )
        content = parsed.body
        if not content.strip():
            raise BadInput("the page body is empty")
        title = _nfc(req.title.strip())
        if not title:
            raise BadInput("the page title is empty")
        folder_req = req.folder
        if "/" in title and folder_req is None:  # "concepts/Attention"; with a folder
            title_folder, _, title = title.rpartition("/")  # given, "TCP/IP" is a title
            title = title.strip()
            folder_req = title_folder
        with self._lock:
            self._sync()
            layout = self._ensure_files()
            self._reserved_title(title, layout)
            schema = self._schema(layout)
            folder: str | None = None
            if folder_req is not None and folder_req.strip("/"):
                contain(self.root, folder_req.strip("/"))
                folder = self._schema_folder(folder_req, schema)
            existing = self._find_titled(title, folder)
            now = _now()
            if existing is not None:
                note = self._must_load(existing)
                if req.etag is None:
                    raise Conflict(
                        f"page {existing!r} exists (etag {note.etag}); read it and pass its "
                        "etag to update it"
                    )
                if req.etag != note.etag:
                    raise Conflict(
                        f"page {existing!r} changed since it was read (etag {req.etag} -> "
                        f"{note.etag}); nothing was written"
                    )
                if note.error is not None:
                    raise Conflict(f"{existing} was not changed: {note.error}")
                rel = existing
                page_folder = posixpath.dirname(rel)
            else:
                if req.etag is not None and req.etag != MISSING_ETAG:
                    raise Conflict(
                        f"no page titled {title!r} exists, but an etag was given; nothing was "
                        "written"
                    )
                if folder is None:
                    type_hint = req.type or given.get("type")
                    hinted = wt.folder_for(str(type_hint), schema.folders) if type_hint else None
                    folder = hinted or self._schema_folder(schema.default_folder, schema)
                stem = safe_title_filename(title)
                rel = f"{folder}/{stem}.md"
                contain(self.root, rel)
                page_folder = folder
                note = None
            kept: dict[str, Any] = note.data if note is not None else {}
            sources: list[Any]
            if req.sources is not None or "sources" in given:
                source_ids = req.sources if req.sources is not None else given.get("sources")
                sources = self._cite(_str_or_items(source_ids), layout)
            else:  # an update that names no sources keeps the provenance it had
                sources = [
                    s for s in _str_or_items(kept.get("sources")) if isinstance(s, dict | str)
                ]
            page_type = (
                req.type
                or given.get("type")
                or kept.get("type")
                or wt.type_for_folder(page_folder.split("/", 1)[0])
            )
            summary = (
                req.summary
                or given.get("summary")
                or kept.get("summary")
                or wt.derive_summary({}, content)
            )
            managed: dict[str, Any] = {
                "title": title,
                "type": str(page_type),
                "summary": _one_line(str(summary)),
                "sources": sources,
                "updated": now,
            }
            extra = {k: v for k, v in given.items() if k not in managed and k != "created"}
            if note is None:
                data = {**managed, "created": now, **extra}
                new_text = render_note(data, content if content.endswith("\n") else content + "\n")
                expected = MISSING_ETAG
                op = "write"
            else:
                updated = set_keys(note.text, {**managed, **extra})
                split = parse_note(updated)
                new_text = updated[: split.body_start] + content
                if not new_text.endswith("\n"):
                    new_text += "\n"
                expected = note.etag
                op = "update"
            data_bytes = new_text.encode("utf-8")
            target = self.root / rel

            def change() -> dict[str, str]:
                target.parent.mkdir(parents=True, exist_ok=True)
                return {rel: atomic_write(target, data_bytes, expected_etag=expected)}

            details = [f"- page: {rel}"]
            if sources:
                details.append(
                    "- sources: "
                    + ", ".join(str(s["id"] if isinstance(s, dict) else s) for s in sources)
                )
            self._commit(op, title, [rel], details, change, layout=layout)
            self._index_note(rel)
            findings = self._page_findings(rel)
        return {
            "status": "stored",
            "op": op,
            "page": rel,
            "etag": etag(data_bytes),
            "findings": [f.to_json() for f in findings],
        }

    # == remember, feedback, forget ==============================================================
    def _check_text(self, write: MemoryWrite) -> str:
        return core_pages.checked_text(write.text, self.spec.max_input_chars, noun="wiki")

    def _append(self, rel: str, heading: str, text: str, op: str, title: str, source: str) -> None:
        note = self._must_load(rel)
        if note.error is not None:
            raise Conflict(f"{rel} was not changed: {note.error}; such pages are never rewritten")
        raw = note.text
        updated = set_keys(raw, {"updated": _now()}) if parse_note(raw).has_frontmatter else raw
        new = append_entry(updated, heading, text).encode("utf-8")

        def change() -> dict[str, str]:
            return {rel: atomic_write(self.root / rel, new, expected_etag=note.etag)}

        self._commit(op, title, [rel], [f"- page: {rel}", f"- by: {source}"], change)
        self._index_note(rel)

    def _generated_title(self, text: str) -> str:
        return core_pages.generated_title(text, markup=_TITLE_MARKUP)

    def _create(self, title: str, text: str, kind: str, source: str, unique: bool) -> str:
        layout = self._ensure_files()
        schema = self._schema(layout)
        folder = self._schema_folder(schema.default_folder, schema)
        try:
            stem = safe_title_filename(title)
        except PathError:
            if not unique:
                raise
            stem = "Note"
        existing = {_fold(f.path) for f in walk_notes(self.root).files}
        n = 1
        while True:
            rel = f"{folder}/{stem}.md" if n == 1 else f"{folder}/{stem}-{n}.md"
            if _fold(rel) not in existing:
                break
            if not unique:
                raise Conflict(f"a page named {rel!r} already exists")
            n += 1
        contain(self.root, rel)
        now = _now()
        data = {
            "title": title or stem,
            "type": "feedback" if kind == "feedback" else wt.type_for_folder(folder),
            "summary": wt.derive_summary({}, text),
            "sources": [],
            "remembered_by": source,
            "created": now,
            "updated": now,
        }
        content = render_note(data, text if text.endswith("\n") else text + "\n").encode("utf-8")
        target = self.root / rel

        def change() -> dict[str, str]:
            target.parent.mkdir(parents=True, exist_ok=True)
            return {rel: atomic_write(target, content, expected_etag=MISSING_ETAG)}

        self._commit(
            kind,
            str(data["title"]),
            [rel],
            [f"- page: {rel}", f"- by: {source}"],
            change,
            layout=layout,
        )
        self._index_note(rel)
        return rel

    def _write(self, write: MemoryWrite, kind: str) -> Receipt:
        text = self._check_text(write)
        stamp = _now().strftime("%Y-%m-%d %H:%M UTC")
        heading = f"{stamp} {kind} ({_one_line(write.source)})"
        with self._lock:
            self._sync()
            if kind == "feedback" and write.on:
                rel = self._resolve(write.on, self._refs())
                self._append(
                    rel, heading, text, "feedback", self._must_load(rel).title, write.source
                )
            elif write.title is not None and write.title.strip():
                title = _nfc(write.title.strip())
                existing = self._find_titled(title, None)
                if existing is not None:
                    self._append(existing, heading, text, kind, title, write.source)
                    rel = existing
                else:
                    self._reserved_title(title, self._layout())
                    rel = self._create(title, text, kind, write.source, unique=False)
            else:
                title = self._generated_title(text) or ("Feedback" if kind == "feedback" else "")
                rel = self._create(title, text, kind, write.source, unique=True)
        return Receipt(status=ReceiptStatus.STORED, id=rel, path=rel, scope=self.scope.key)

    def _forget(self, ref: str) -> Receipt:
        with self._lock:
            self._sync()
            rel = self._resolve(ref, self._refs(), exact_paths=True)
            contain(self.root, rel)
            title = self._must_load(rel).title
            path = self.root / rel

            def change() -> dict[str, str]:
                try:
                    os.unlink(path)
                except FileNotFoundError as exc:
                    raise NotFound(f"page {rel!r} vanished meanwhile") from exc
                fsync_dir(path.parent)
                return {rel: MISSING_ETAG}

            self._commit("forget", title, [rel], [f"- page: {rel}"], change)
            self._cache.pop(rel, None)
            self._index_open().remove(rel)
        return Receipt(
            status=ReceiptStatus.STORED, id=rel, path=rel, scope=self.scope.key, removed=(rel,)
        )

    # == ingest ==================================================================================
    def _ingest(
        self,
        source: Path,
        progress: Callable[[int, int], None] | None,
        inspect: Callable[[MemoryWrite], MemoryWrite] | None = None,
    ) -> dict[str, Any]:
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
                try:
                    st = path.stat()
                    if st.st_size > _MAX_SOURCE_BYTES:
                        skipped.append({"path": original, "reason": "larger than 50 MB"})
                        continue
                    data = path.read_bytes()
                except OSError as exc:
                    skipped.append({"path": original, "reason": f"not readable: {exc.strerror}"})
                    continue
                if inspect is not None:
                    policed = _policed_source(inspect, original, data)
                    if isinstance(policed, str):
                        skipped.append({"path": original, "reason": policed})
                        continue
                    data = policed
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
                    taken.add(ident.casefold())
                    added.append(ident)
                if progress is not None:
                    progress(done, total)
            if added:
                name = origin.name

                def change() -> dict[str, str]:
                    manifest.save(manifest_path)
                    return {}

                details = [f"- source: {i}" for i in added]
                if present:
                    details.append(f"- already present: {len(present)}")
                self._commit("ingest", name, [], details, change, layout=layout)
        return {
            "added": added,
            "present": present,
            "skipped": skipped,
            "sources": len(manifest.sources),
        }

    def _source_status(self) -> dict[str, Any]:
        scan = self._scan()
        manifest = self._manifest(scan.layout)
        cited: dict[str, list[str]] = {}
        for note in scan.notes:
            for item in _str_or_items(note.data.get("sources")):
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

    # == reads ===================================================================================
    def _recall(self, query: str, limit: int) -> RecallResult:
        walk, _layout = self._sync()
        index = self._index_open()
        results = index.search(query, limit=limit)
        items = []
        for hit in results.hits:
            items.append(
                core_pages.recall_item(hit, self._load(hit.path), source=f"wiki page {hit.path}")
            )
        degraded = core_pages.degraded_reasons(index.problems(), walk.skipped)
        degraded += [d for d in results.degraded if d not in degraded]
        # A ranked top-``limit`` is not degraded: ``complete=False`` says more matched.
        return RecallResult(
            scope=self.scope.key,
            items=tuple(items),
            complete=bool(results.complete) and results.total <= len(items),
            degraded=tuple(degraded),
        )

    def _list_pages(self, limit: int, cursor: str | None) -> PageList:
        walk, layout = self._sync()
        ordered = [f.path for f in self._page_files(walk, layout)]
        chunk, more, next_cursor = core_pages.page_window(ordered, limit, cursor, issuer="wiki")
        degraded = core_pages.degraded_reasons(self._index_open().problems(), walk.skipped)
        items, unread = core_pages.page_summaries(chunk, self._load)
        degraded += unread
        return PageList(
            items=tuple(items),
            next_cursor=next_cursor,
            complete=not more and len(items) == len(chunk),
            degraded=tuple(degraded),
        )

    def _page(self, note: _Note) -> Page:
        return core_pages.to_page(
            note, ("sources", "type", "summary", "created", "updated", "remembered_by")
        )

    def _get_page(self, ref: str) -> Page:
        self._sync()
        return self._page(self._must_load(self._resolve(ref, self._refs())))

    def _read_any(self, ref: str) -> dict[str, Any]:
        """A page, or one of the provider's files by name, or a source (``raw/<id>``)."""
        layout = self._layout()
        clean = _nfc(ref.strip())
        if layout.raw is not None and clean.startswith(layout.raw + "/"):
            return self._read_source(clean)
        for kind in _KINDS:
            name = getattr(layout, kind)
            if (
                name is not None
                and name in layout.own
                and clean.casefold() in {name.casefold(), _stem(name).casefold(), kind}
            ):
                data = (self.root / name).read_bytes()
                return {
                    "file": name,
                    "kind": kind,
                    "text": data.decode("utf-8", "replace"),
                    "etag": etag(data),
                    "read_only": True,
                }
        return self._get_page(ref).to_json()

    def _link_index(self, scan: _Scan) -> LinkIndex:
        from goat_core.links import LinkIndex

        paths = [f.path for f in scan.walk.files] + list(scan.walk.attachments)
        return LinkIndex([(n.summary(), n.text) for n in scan.notes], paths)

    def _link_map(self) -> LinkMap:
        scan = self._scan()
        result = self._link_index(scan).link_map()
        nodes = {n.id for n in result.nodes}
        edges = tuple(  # a link to a source or a provider file names a file, not a page
            e.model_copy(update={"resolution": LinkResolution.ATTACHMENT})
            if e.target is not None
            and e.target not in nodes
            and e.resolution is not LinkResolution.ATTACHMENT
            else e
            for e in result.edges
        )
        result = result.model_copy(update={"edges": edges})
        problems = core_pages.degraded_reasons(
            [(n.path, n.error) for n in scan.notes if n.error], scan.walk.skipped
        )
        return result.model_copy(update={"degraded": tuple(problems)}) if problems else result

    def _connections(self, ref: str) -> Connections:
        scan = self._scan()
        rel = self._resolve(ref, [(n.path, n.title, None) for n in scan.notes])
        return self._link_index(scan).connections(rel)

    # == lint ====================================================================================
    def _lint(
        self, fix: bool, inspect: Callable[[MemoryWrite], MemoryWrite] | None = None
    ) -> LintReport:
        self._recover()
        findings = self._findings()
        if not fix or not any(f.fixable for f in findings):
            return LintReport(tuple(findings))
        fixed: list[Finding] = []
        with self._lock:
            self._sync()
            fixed += self._fix_links([f for f in findings if f.fixable], inspect)
            drift = [f for f in self._findings() if f.code == "index-drift"]
            if drift:
                layout = self._ensure_files()  # may create the index: still logged below

                def change() -> dict[str, str]:
                    self._rebuild_index(layout)
                    return {}

                self._commit(
                    "lint", "rebuild index", [], ["- fix: index rebuilt"], change, layout=layout
                )
                fixed += drift
        return LintReport(tuple(self._findings()), tuple(fixed))

    def _fix_links(
        self,
        fixable: list[Finding],
        inspect: Callable[[MemoryWrite], MemoryWrite] | None = None,
    ) -> list[Finding]:
        """Rewrite bare links to their unique folder-qualified target and unescape alias pipes
        outside tables; one atomic, etag-checked write and one log entry per page."""
        from goat_core.links import parse_links

        by_page: dict[str, list[Finding]] = {}
        for f in fixable:
            if f.code in {"bare-link", "escaped-alias-pipe"} and f.path is not None:
                by_page.setdefault(f.path, []).append(f)
        done: list[Finding] = []
        scan = self._scan()
        resolver = self._link_index(scan).resolver
        for rel, items in sorted(by_page.items()):
            note = self._must_load(rel)
            if note.error:
                continue  # unparsable or not UTF-8: never rewritten (reported, not fixed)
            tables = wt.table_lines(note.text)
            # "\n" only, as parse_links counts lines; joined back exactly
            lines = note.text.split("\n")
            wanted = {(f.line, f.code) for f in items}
            applied: set[tuple[int, str]] = set()
            changed = False
            for link in parse_links(note.text):
                if link.kind != "wikilink":
                    continue
                idx = link.line - 1
                line = lines[idx]
                new_raw = link.raw
                if (link.line, "escaped-alias-pipe") in wanted and "\\|" in link.raw:
                    if link.line not in tables:
                        new_raw = new_raw.replace("\\|", "|", 1)
                if (link.line, "bare-link") in wanted and "/" not in link.target_text:
                    target, res = resolver.resolve_target(link.target_text, rel)
                    if res is LinkResolution.NAME and target is not None and "/" in target:
                        qualified = target[:-3] if target.lower().endswith(".md") else target
                        pipe = "\\|" if link.line in tables else "|"
                        sub = ""
                        if link.heading is not None:
                            sub = f"#{link.heading}"
                        if link.block is not None:
                            sub += f"#^{link.block}"
                        alias = link.alias if link.alias is not None else link.target_text + sub
                        bang = "!" if link.embed else ""
                        new_raw = f"{bang}[[{qualified}{sub}{pipe}{alias}]]"
                # Only a line where the link stands once and outside any code span is edited:
                # a sample in backticks must never be rewritten (the rest stays reported).
                if new_raw != link.raw and line.count(link.raw) == 1 and "`" not in line:
                    lines[idx] = line.replace(link.raw, new_raw, 1)
                    changed = True
                    for code in ("escaped-alias-pipe", "bare-link"):
                        if (link.line, code) in wanted:
                            applied.add((link.line, code))
            if not changed:
                continue
            text = "\n".join(lines)
            if inspect is not None:
                try:
                    text = inspect(
                        MemoryWrite(kind="remember", text=text, title=note.title, source="lint")
                    ).text
                except Rejected:
                    continue  # refused by policy: left as it is, still reported
            new = text.encode("utf-8")

            def change(rel: str = rel, new: bytes = new, old: str = note.etag) -> dict[str, str]:
                return {rel: atomic_write(self.root / rel, new, expected_etag=old)}

            self._commit("fix", note.title, [rel], [f"- page: {rel}", "- fix: links"], change)
            self._index_note(rel)
            done += [f for f in items if (f.line, f.code) in applied]
        return done

    def _page_findings(self, rel: str) -> list[Finding]:
        """Findings about one page just written, without reading every page: its links are
        resolved against a stat walk; only link targets with a heading or block are read."""
        from goat_core.links import LinkResolver, parse_links

        walk = walk_notes(self.root)
        layout = self._layout()
        note = self._must_load(rel)
        resolver = LinkResolver([f.path for f in walk.files] + list(walk.attachments))
        links = [resolver.resolve(p, rel) for p in parse_links(note.text)]

        def get_note(path: str) -> _Note | None:
            if path == rel:
                return note
            return self._load(path) if layout.is_page(path) else None

        out = self._note_findings(note, links, get_note, self._schema(layout, walk))
        out += self._stale_findings([note], layout)
        return out

    def _findings(self) -> list[Finding]:
        scan = self._scan()
        layout = scan.layout
        out: list[Finding] = []
        index = self._link_index(scan)
        notes = {n.path: n for n in scan.notes}
        schema = self._schema(layout, scan.walk)
        for name, kind in layout.taken:
            chosen = getattr(layout, kind, None) if kind != "raw" else layout.raw
            out.append(
                Finding(
                    "name-taken",
                    "info",
                    name,
                    None,
                    name,
                    f"{name} is a user's {'folder' if kind == 'raw' else 'note'}, not the "
                    f"wiki's {kind}; the wiki uses {chosen or 'no name (set a free fallback)'}",
                )
            )
        backlinked: set[str] = set()
        for note in scan.notes:
            links = index.links.get(note.path, ())
            out += self._note_findings(note, links, notes.get, schema)
            backlinked.update(
                link.target for link in links if link.target and link.target != note.path
            )
        for note in scan.notes:
            if note.path not in backlinked:
                out.append(
                    Finding(
                        "orphan-page", "warning", note.path, None, None, "no other page links here"
                    )
                )
        out += self._stale_findings(scan.notes, layout)
        out += self._index_findings(scan, layout)
        out += self._log_findings(scan, layout)
        order = {"error": 0, "warning": 1, "info": 2}
        out.sort(
            key=lambda f: (order.get(f.severity, 3), f.code, _sort_key(f.path or ""), f.line or 0)
        )
        return out

    def _note_findings(
        self,
        note: _Note,
        links: Iterable[Any],
        get_note: Callable[[str], _Note | None],
        schema: _Schema,
    ) -> list[Finding]:
        """Findings about one page alone: frontmatter, its links, footnotes, folder, sources."""
        out: list[Finding] = []
        if note.error:
            out.append(
                Finding(
                    "unparsable-frontmatter",
                    "warning",
                    note.path,
                    1,
                    None,
                    f"frontmatter ignored: {note.error}",
                )
            )
        tables = wt.table_lines(note.text)
        for link in links:
            out += self._link_findings(note, link, tables, get_note)
        # footnotes live in the body: Obsidian renders none in frontmatter (a summary that
        # quotes a reference is not one); lines stay numbered as in the file
        head = len(note.text) - len(note.body)
        body_line = note.text.count("\n", 0, head) if note.text.endswith(note.body) else 0
        for line, ident in wt.footnote_problems(note.text[head:] if body_line else note.text):
            line += body_line
            out.append(
                Finding(
                    "footnote-undefined",
                    "warning",
                    note.path,
                    line,
                    f"^{ident}",
                    f"footnote [^{ident}] has no definition",
                )
            )
        top = note.path.split("/", 1)[0] if "/" in note.path else None
        if top is None and not schema.root_pages:
            out.append(
                Finding(
                    "schema-folder-drift",
                    "warning",
                    note.path,
                    None,
                    None,
                    "page at the wiki root; the schema puts pages in " + ", ".join(schema.folders),
                )
            )
        elif top is not None and not any(top == f for f in schema.folders):
            out.append(
                Finding(
                    "schema-folder-drift",
                    "warning",
                    note.path,
                    None,
                    top,
                    f"folder {top!r} is not defined by the schema ("
                    + ", ".join(schema.folders)
                    + ")",
                )
            )
        if note.is_wiki_page and not _str_or_items(note.data.get("sources")):
            out.append(
                Finding(
                    "no-sources",
                    "warning",
                    note.path,
                    None,
                    None,
                    "page cites no sources; its claims trace to nothing",
                )
            )
        return out

    def _link_findings(
        self,
        note: _Note,
        link: Any,
        tables: set[int],
        get_note: Callable[[str], _Note | None],
    ) -> list[Finding]:
        out: list[Finding] = []
        res = link.resolution
        if res is LinkResolution.MISSING:
            if wt.is_attachment_target(link.target_text):
                out.append(
                    Finding(
                        "missing-attachment",
                        "info",
                        note.path,
                        link.line,
                        link.target_text,
                        f"{link.raw}: no such file in the wiki",
                    )
                )
            else:
                out.append(
                    Finding(
                        "broken-link",
                        "warning",
                        note.path,
                        link.line,
                        link.target_text,
                        f"{link.raw}: no page {link.target_text!r}",
                    )
                )
        elif res is LinkResolution.AMBIGUOUS and link.target is not None:
            if posixpath.dirname(link.target) != posixpath.dirname(note.path):
                out.append(
                    Finding(
                        "ambiguous-link",
                        "info",
                        note.path,
                        link.line,
                        link.target_text,
                        f"{link.raw}: several pages are named {link.target_text!r}; "
                        f"Obsidian opens {link.target}; qualify the link",
                    )
                )
        if (
            link.kind == "wikilink"
            and note.is_wiki_page
            and res is LinkResolution.NAME
            and link.target is not None
            and "/" in link.target
            and "/" not in link.target_text
        ):
            out.append(
                Finding(
                    "bare-link",
                    "info",
                    note.path,
                    link.line,
                    link.target,
                    f"{link.raw}: bare link to a page in a folder; write [[{link.target[:-3]}]]",
                    fixable=True,
                )
            )
        if link.kind == "wikilink" and "\\|" in link.raw and link.line not in tables:
            out.append(
                Finding(
                    "escaped-alias-pipe",
                    "warning",
                    note.path,
                    link.line,
                    link.target_text,
                    f"{link.raw}: '\\|' escapes an alias pipe only inside tables",
                    fixable=True,
                )
            )
        wants_anchor = bool(link.heading) or bool(link.block)
        target = get_note(link.target) if link.target and wants_anchor else None
        if target is not None and res is not LinkResolution.ATTACHMENT:
            if (
                link.heading
                and wt.heading_key(link.heading.split("#")[-1]) not in (self._anchors(target)[0])
            ):
                out.append(
                    Finding(
                        "broken-anchor",
                        "info",
                        note.path,
                        link.line,
                        f"{link.target}#{link.heading}",
                        f"{link.raw}: no heading {link.heading!r} in {link.target}",
                    )
                )
            if link.block and link.block.casefold() not in self._anchors(target)[1]:
                out.append(
                    Finding(
                        "broken-anchor",
                        "info",
                        note.path,
                        link.line,
                        f"{link.target}#^{link.block}",
                        f"{link.raw}: no block ^{link.block} in {link.target}",
                    )
                )
        return out

    def _anchors(self, note: _Note) -> tuple[set[str], set[str]]:
        """Heading keys and block ids of a page, cached with the parsed page."""
        key = (note.path, note.etag)
        cached = self._anchor_cache.get(key)
        if cached is None:
            cached = (wt.heading_keys(note.text), wt.block_ids(note.text))
            self._anchor_cache[key] = cached
        return cached

    def _stale_findings(self, notes: Iterable[_Note], layout: _Layout) -> list[Finding]:
        manifest = self._manifest(layout).by_id()
        hashes: dict[str, str] = {}
        origin_changed: dict[str, bool] = {}
        out: list[Finding] = []
        for note in notes:
            for item in _str_or_items(note.data.get("sources")):
                if not isinstance(item, dict) or not isinstance(item.get("id"), str):
                    continue
                ident = self._source_ref(item["id"], layout)
                recorded = item.get("hash")
                src = manifest.get(ident)
                why = None
                if src is None or layout.raw is None:
                    why = "is not in the source manifest"
                else:
                    if ident not in hashes:
                        hashes[ident] = current_etag(self.root / layout.raw / src.id)
                    now = hashes[ident]
                    if now == MISSING_ETAG:
                        why = "vanished from the raw folder"
                    elif now != src.hash:
                        why = "was modified in the raw folder"
                    elif recorded != src.hash:
                        why = "differs from the version the page was written from"
                    elif src.superseded_by:
                        why = f"has a newer version (source {src.superseded_by})"
                    else:
                        if ident not in origin_changed:
                            origin_changed[ident] = _origin_changed(src)
                        if origin_changed[ident]:
                            why = f"changed at its origin {src.origin}; ingest it again"
                if why:
                    out.append(
                        Finding(
                            "stale-page", "warning", note.path, None, ident, f"source {ident} {why}"
                        )
                    )
        return out

    def _index_findings(self, scan: _Scan, layout: _Layout) -> list[Finding]:
        if layout.index is None:
            return []
        if layout.index not in layout.own:
            return [
                Finding(
                    "index-drift",
                    "warning",
                    layout.index,
                    None,
                    None,
                    f"{layout.index} does not exist yet; lint --fix builds it",
                    fixable=True,
                )
            ]
        text = (self.root / layout.index).read_text("utf-8", "replace")
        have = wt.parse_index(text)
        want = {n.path: self._index_entry(n) for n in scan.notes}
        out = []
        for rel, line in want.items():
            if rel not in have:
                out.append(
                    Finding(
                        "index-drift",
                        "warning",
                        layout.index,
                        None,
                        rel,
                        f"page {rel} is missing from the index",
                        fixable=True,
                    )
                )
            elif have[rel][1] != line:
                out.append(
                    Finding(
                        "index-drift",
                        "warning",
                        layout.index,
                        have[rel][0],
                        rel,
                        f"index line of {rel} is out of date",
                        fixable=True,
                    )
                )
        for rel, (number, _line) in have.items():
            if rel not in want:
                out.append(
                    Finding(
                        "index-drift",
                        "warning",
                        layout.index,
                        number,
                        rel,
                        f"index lists {rel}, which is not a page",
                        fixable=True,
                    )
                )
        return out

    def _log_findings(self, scan: _Scan, layout: _Layout) -> list[Finding]:
        if layout.log is None or layout.log not in layout.own:
            return []
        entries, malformed = wt.parse_log((self.root / layout.log).read_text("utf-8", "replace"))
        out = [
            Finding(
                "log-gap",
                "warning",
                layout.log,
                number,
                None,
                f"not a log entry heading (## [YYYY-MM-DD] op | title): {line.strip()}",
            )
            for number, line in malformed
        ]
        last = ""
        for entry in entries:
            if entry.date < last:
                out.append(
                    Finding(
                        "log-gap",
                        "warning",
                        layout.log,
                        entry.line,
                        None,
                        f"entry dated {entry.date} follows one dated {last}",
                    )
                )
            last = max(last, entry.date)
        logged = {p for e in entries for p in e.pages}
        for note in scan.notes:
            if note.is_wiki_page and note.path not in logged:
                out.append(
                    Finding(
                        "log-gap",
                        "warning",
                        note.path,
                        None,
                        None,
                        f"page has no entry in {layout.log}",
                    )
                )
        return out

    # == maintenance =============================================================================
    def _reindex(self, progress: Callable[[int, int], None] | None) -> dict[str, int]:
        walk, _layout = self._sync(progress)
        stats = self._index_open().stats()
        return {
            "notes": stats.documents,
            "skipped": len(walk.skipped),
            "unparsable": len(self._index_open().problems()),
        }

    def _check(self) -> Health:
        return core_pages.folder_health(self.root, noun="wiki", healthy=f"LLM wiki in {self.root}")

    def _close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None

    # == the async API ===========================================================================
    async def remember(self, write: MemoryWrite) -> Receipt:
        """With a title: append a dated entry (``## <YYYY-MM-DD HH:MM> UTC remember
        (<source>)``) to the page of that title, else create it in the default folder;
        without: a new page titled by the text's first words (``-2``... for a taken name).
        Index and log are updated.

        :raises TooLarge: over ``max_input_chars``. :raises BadInput: empty text, a title
            reserved for the provider's files. :raises Conflict: a case-only twin, a page
            changed meanwhile, the lock timing out. :raises Ambiguous: several pages match.
        """
        return await self._worker.run(self._write, write, "remember")

    async def feedback(self, write: MemoryWrite) -> Receipt:
        """Append feedback to page ``write.on``, or create a page of type ``feedback``."""
        return await self._worker.run(self._write, write, "feedback")

    async def forget(self, ref: str) -> Receipt:
        """Remove a page (resolved as :meth:`get_page`); its index line goes, the log says so."""
        return await self._worker.run(self._forget, ref)

    async def recall(self, query: str, *, limit: int = 10) -> RecallResult:
        """Ranked full-text search over pages (user text, never query syntax; CJK pairs).

        :raises BadInput: ``limit`` outside 1..100 or an empty query.
        """
        core_pages.check_recall_args(query, limit)
        return await self._worker.run(self._recall, query, limit)

    async def list_pages(self, *, limit: int = 50, cursor: str | None = None) -> PageList:
        """Pages (never the provider's files or sources) by path, case-insensitively.

        :raises BadInput: ``limit`` outside 1..1000 or a foreign cursor.
        """
        core_pages.check_list_limit(limit)
        return await self._worker.run(self._list_pages, limit, cursor)

    async def get_page(self, ref: str) -> Page:
        return await self._worker.run(self._get_page, ref)

    async def link_map(self) -> LinkMap:
        return await self._worker.run(self._link_map)

    async def connections(self, ref: str) -> Connections:
        return await self._worker.run(self._connections, ref)

    async def reindex(self, progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        return await self._worker.run(self._reindex, progress)

    async def check(self) -> Health:
        return await self._worker.run(self._check)

    async def write_page(self, write: PageWrite) -> dict[str, Any]:
        """Write a new page or update one (etag-checked); index line and log entry follow.

        :returns: ``{"status": "stored", "op": "write"|"update", "page", "etag",
            "findings"}`` (the lint findings of that page, e.g. ``no-sources``).
        :raises BadInput: a folder the schema does not define (allowed ones named), the raw
            folder, a title reserved for the provider's files, an unknown source id, bad
            frontmatter, an empty body. :raises Conflict: a missing or outdated etag on
            update. :raises PathError: an unsafe title or folder.
        """
        return await self._worker.run(self._write_page, write)

    async def ingest(
        self,
        source: Path,
        progress: Callable[[int, int], None] | None = None,
        *,
        inspect: Callable[[MemoryWrite], MemoryWrite] | None = None,
    ) -> dict[str, Any]:
        """Copy a file or folder into the raw folder (no model is called).

        :param inspect: the policy gate's ``inspect`` (``goat wiki ingest`` passes it): each
            file's text passes ``goat_inspect_remember`` first; a refused file is skipped
            with the policy's reason, a changed text is stored as changed (a file that is not
            UTF-8 and that a policy changes is skipped: its bytes cannot carry the change).
        :returns: ``{"added": [ids], "present": [ids], "skipped": [{"path", "reason"}],
            "sources": total}``. :raises NotFound: no such path. :raises BadInput: a path
            inside (or containing) the wiki.
        """
        return await self._worker.run(self._ingest, source, progress, inspect)

    async def sources(self) -> dict[str, Any]:
        """The manifest with the pages citing each source, and the uncited ones."""
        return await self._worker.run(self._source_status)

    async def read(self, ref: str) -> dict[str, Any]:
        """A page (``Page.to_json()``), a provider file by name (read-only), or a source."""
        return await self._worker.run(self._read_any, ref)

    async def lint(
        self, *, fix: bool = False, inspect: Callable[[MemoryWrite], MemoryWrite] | None = None
    ) -> LintReport:
        """Check the wiki; with ``fix`` apply the deterministic fixes (rebuild the index,
        qualify bare links, unescape alias pipes outside tables) and report the rest.

        :param inspect: the policy gate's ``inspect``: a page a fix rewrites passes
            ``goat_inspect_remember`` with its new text first (refused: left unfixed and
            reported). The index and log are the provider's record of pages already stored
            and are kept true without it."""
        return await self._worker.run(self._lint, fix, inspect)

    def operations(self) -> Sequence[ProviderOperation]:
        """``ingest``, ``lint``, ``lint_fix``, ``write_page`` for ``goat wiki ...`` (see
        :func:`goat_wiki.tools.wiki_operations`)."""
        from goat_wiki.tools import wiki_operations

        return wiki_operations(self)

    def model_tools(self) -> Sequence[ModelTool]:
        """``wiki_read_page``, ``wiki_write_page``, ``wiki_search``, ``wiki_list_pages``,
        ``wiki_lint``, ``wiki_ingest_status`` (see :mod:`goat_wiki.tools`)."""
        from goat_wiki.tools import wiki_tools

        return wiki_tools(self)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self._worker.run(self._close)
        finally:
            self._worker.close()


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


def _str_or_items(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str | dict):
        return [value]
    if isinstance(value, list | tuple):
        return [v for v in value if v is not None]
    return [value]


def _origin_changed(src: Source) -> bool:
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
