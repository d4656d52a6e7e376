"""Where a wiki's files are: the provider's own files, the sources folder, the schema's page
folders, and reading the pages themselves.

The provider's own files (``index.md``, ``log.md``, ``schema.md``) start with ``---`` and
``goat-wiki: <kind>`` on the first frontmatter line; a file of the same name without that
marker is a user's note and is never taken over (the fallback name is used and lint reports
``name-taken``). The provider's files and the raw folder are not pages.

:class:`WikiStore` opens the wiki (the folder store skeleton of
:class:`~goat_core.filestore.FolderStoreProvider` plus the wiki's settings and journal path)
and answers these questions; the other jobs build on it (:mod:`goat_wiki.journal`,
:mod:`goat_wiki.ingest`, :mod:`goat_wiki.lint`, :mod:`goat_wiki.pages`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goat_core import filestore
from goat_core.contract import ProviderContext, ProviderSpec
from goat_core.errors import BadInput, Conflict
from goat_core.filestore import (
    MISSING_ETAG,
    FolderStoreProvider,
    WalkResult,
    atomic_write,
    parse_note,
    render_note,
    walk_notes,
)
from goat_wiki import text as wt
from goat_wiki.settings import WikiSettings
from goat_wiki.sources import MANIFEST_NAME, Manifest

if TYPE_CHECKING:
    from goat_core.filestore import LinkIndex

__all__ = [
    "KINDS",
    "MARKER_KEY",
    "Layout",
    "Scan",
    "Schema",
    "WikiNote",
    "WikiStore",
    "one_line",
    "str_or_items",
]

#: Frontmatter key marking the provider's own files (``goat-wiki: index``).
MARKER_KEY = "goat-wiki"
#: The provider's own files, by kind.
KINDS = ("index", "log", "schema")
_stem = filestore.file_stem
_nfc = filestore.nfc
_str_list = filestore.str_list


def one_line(text: str) -> str:
    """``text`` on one line, runs of white space folded to one space."""
    return " ".join(str(text).split())


def str_or_items(value: Any) -> list[Any]:
    """A frontmatter value as a list of items (``sources`` holds ids or ``{id, hash}``)."""
    if value is None:
        return []
    if isinstance(value, str | dict):
        return [value]
    if isinstance(value, list | tuple):
        return [v for v in value if v is not None]
    return [value]


class WikiNote(filestore.StoredNote):
    """A page file as read (see :class:`goat_core.filestore.StoredNote`)."""

    @property
    def is_wiki_page(self) -> bool:
        """Written through the wiki (its frontmatter has ``sources``)."""
        return "sources" in self.data


@dataclass(frozen=True)
class Layout:
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
class Schema:
    """What the schema says: the page folders, where a page without a folder goes, whether
    pages may stand at the root, and whether the schema file exists (``stored``)."""

    folders: tuple[str, ...]
    default_folder: str
    root_pages: bool
    stored: bool


@dataclass
class Scan:
    """One stat walk, the layout at that moment and every page parsed."""

    walk: WalkResult
    layout: Layout
    notes: list[WikiNote] = field(default_factory=list)


class WikiStore(FolderStoreProvider[WikiNote]):
    """One wiki's folder: settings, layout, schema, sources manifest and pages as read.

    :param context: scope, binding, validated :class:`~goat_wiki.settings.WikiSettings`, home.
    :param spec: the provider's declaration.
    :raises PathError: the root is ``/``, a home directory itself, or not a folder.
    :raises ScopeError: a forged, non-canonical Pen id.
    """

    noun = "wiki"
    index_name = "wiki"
    healthy = "LLM wiki in {root}"
    description_keys = ("summary", "description")
    page_keys = ("sources", "type", "summary", "created", "updated", "remembered_by")
    #: Markup dropped before untitled text is titled: Markdown's, plus table pipes.
    title_markup = filestore.MARKUP_CHARS + "|"
    shared_ids_ambiguous = False

    settings: WikiSettings

    def __init__(self, context: ProviderContext, *, spec: ProviderSpec) -> None:
        super().__init__(context, spec=spec)
        home = context.home
        self._journal_path = home.index_dir / f"{home.store_key(self.root)}-wiki-journal.json"
        self._anchor_cache: dict[tuple[str, str], tuple[set[str], set[str]]] = {}
        self._recovered = False
        self._journal_error: str | None = None  # why a journal could not be applied

    def _store_settings(self, context: ProviderContext) -> WikiSettings:
        settings = context.settings
        if not isinstance(settings, WikiSettings):
            settings = WikiSettings.model_validate(context.binding.settings)
        self.settings = settings
        return settings

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

    def _layout(self) -> Layout:
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
        return Layout(
            index=chosen["index"],
            log=chosen["log"],
            schema=chosen["schema"],
            raw=raw,
            own=frozenset(own),
            taken=tuple(t for t in taken if t[0] != raw),
        )

    def _page_files(self, walk: WalkResult, layout: Layout) -> list[Any]:
        return [f for f in walk.files if layout.is_page(f.path)]

    def _note_files(self) -> list[Any]:
        """A reference names pages only (never a raw source, the index or the log)."""
        return self._page_files(self._walk(), self._layout())

    def _top_folders(self, layout: Layout) -> list[str]:
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

    def _schema(self, layout: Layout, walk: WalkResult | None = None) -> Schema:
        """The schema file's folders, or (before it exists) what it would say: a new, empty
        wiki gets the settings' folders; a bound vault its own top-level folders plus the
        default folder, with pages at the root allowed."""
        s = self.settings
        if layout.schema is not None and layout.schema in layout.own:
            parsed = parse_note((self.root / layout.schema).read_text("utf-8", "replace"))
            folders = tuple(_str_list(parsed.data.get("folders")))
            default = parsed.data.get("default_folder")
            if folders:
                return Schema(
                    folders=folders,
                    default_folder=str(default) if default else s.default_folder,
                    root_pages=bool(parsed.data.get("root_pages", False)),
                    stored=True,
                )
        walk = walk if walk is not None else walk_notes(self.root)
        pages = self._page_files(walk, layout)
        top = self._top_folders(layout)
        if not pages and not top:
            return Schema(tuple(s.folders), s.default_folder, False, False)
        found = list(top)
        if not any(f.casefold() == s.default_folder.casefold() for f in found):
            found.append(s.default_folder)
        return Schema(tuple(found), s.default_folder, True, False)

    def _is_empty(self) -> bool:
        try:
            with os.scandir(self.root) as it:
                return not any(not e.name.startswith(".") for e in it)
        except OSError:
            return False

    def _provider_frontmatter(self, kind: str, extra: dict[str, Any] | None = None) -> str:
        data: dict[str, Any] = {MARKER_KEY: kind, **(extra or {})}
        return render_note(data, "")

    def _ensure_raw(self, layout: Layout) -> Path:
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

    def _write_schema(self, layout: Layout, schema: Schema) -> None:
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

    # == manifest ================================================================================
    def _manifest(self, layout: Layout) -> Manifest:
        if layout.raw is None:
            return Manifest()
        return Manifest.load(self.root / layout.raw / MANIFEST_NAME)

    def _source_ref(self, ref: str, layout: Layout) -> str:
        ref = _nfc(ref.strip())
        if layout.raw is not None and ref.startswith(layout.raw + "/"):
            ref = ref[len(layout.raw) + 1 :]
        return ref

    # == where pages go ==========================================================================
    def _schema_folder(self, requested: str, schema: Schema) -> str:
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

    def _reserved_title(self, name: str, layout: Layout) -> None:
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

    # == pages as read ===========================================================================
    def _load(self, rel: str, mtime_ns: int = 0, size: int = 0) -> WikiNote | None:
        note = filestore.read_note(self.root, rel, mtime_ns, size, noun="page")
        return None if note is None else WikiNote(**vars(note))

    def _scan(self) -> Scan:
        """Every page parsed (for map, connections, lint and a full index): one stat walk,
        re-reading only pages changed since this object last read them."""
        walk = self._walk()
        layout = self._layout()
        notes = filestore.refresh_notes(self._page_files(walk, layout), self._cache, self._load)
        return Scan(walk=walk, layout=layout, notes=notes)

    def _link_index(self, scan: Scan) -> LinkIndex:
        from goat_core.filestore import LinkIndex

        paths = [f.path for f in scan.walk.files] + list(scan.walk.attachments)
        return LinkIndex([(n.summary(), n.text) for n in scan.notes], paths)
