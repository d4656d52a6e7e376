"""Copies and imports into a wiki: the ``import_pages`` operation
(:data:`goat_core.contract.IMPORT_OPERATION`; docs/design.md, Copy, export and import).

Each page is ingested once into the raw folder as a source (``imports/<path>.txt``, stored
read-only, its manifest entry naming where it came from), and written as a page at its own
path citing that source in ``sources``, with ``imported_from`` / ``copied_from``
provenance and every other byte of its text kept. The whole batch is one journalled
operation: its index lines and one log entry (``import | <n> pages from <scope>``, each
page and source listed) follow as for every other write. Into a wiki whose schema is not yet
written, the pages' top-level folders become its schema folders; into one whose schema is
written, pages keep their paths (lint reports folders outside the schema).

Planning and writing hold the wiki's lock for the whole batch; a page whose content hash a
page's provenance already carries is a duplicate, a taken path (or one of the wiki's own
files or its raw folder) a conflict. A batch cut short (a kill, a full or read-only disk) is
recovered to what landed (:meth:`goat_wiki.journal.WikiJournal._apply_journal`): the log lists
the pages written, the manifest enters their sources (a source stored for a page that did not
land is removed), and importing again writes the rest.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goat_core import filestore
from goat_core.contract import (
    PolicyGate,
    ProviderOperation,
    Receipt,
    TransferItem,
    TransferPage,
)
from goat_core.filestore import (
    MISSING_ETAG,
    ImportPlan,
    atomic_write,
    contain,
    current_etag,
    etag,
    folder_import_operation,
    import_into_store,
    set_keys,
)
from goat_wiki.sources import MANIFEST_NAME, Manifest, Source

if TYPE_CHECKING:
    from goat_wiki.layout import Layout, Scan
    from goat_wiki.settings import WikiSettings


@dataclass(frozen=True)
class ImportTarget:
    """What an import needs of a wiki, handed over by the provider
    (:meth:`goat_wiki.provider.WikiProvider.import_target`).

    :param root: the wiki folder. :param settings: its settings. :param lock: the store
        lock, held for the batch. :param sync: ``() -> (walk, layout)``, the index brought
        up to date. :param scan: ``() -> Scan``, the pages as read. :param ensure_files:
        ``(raw=True) -> Layout``, the schema, index and log written if missing.
    :param ensure_raw: ``(layout) -> Path``, the raw folder made. :param commit: a
        journalled write (index line and log entry kept true). :param index_note:
        ``(rel) -> ...``. :param receipt: ``(rel) -> Receipt``.
    """

    root: Path
    settings: WikiSettings
    lock: AbstractContextManager[Any]
    sync: Callable[[], tuple[Any, Layout]]
    scan: Callable[[], Scan]
    ensure_files: Callable[..., Layout]
    ensure_raw: Callable[[Layout], Path]
    commit: Callable[..., Any]
    index_note: Callable[[str], object]
    receipt: Callable[[str], Receipt]


__all__ = ["IMPORTS_FOLDER", "SOURCE_SUFFIX", "wiki_operations_for_import"]

#: Where imported pages are kept as sources, under the raw folder.
IMPORTS_FOLDER = "imports"
#: Appended to an imported page's source name: a ``.md`` file in the raw folder would be a
#: second note of the same name in Obsidian's eyes, making every bare link to it ambiguous.
SOURCE_SUFFIX = ".txt"


def _reserved(target: ImportTarget) -> Callable[[str], str | None]:
    s = target.settings
    own = {
        n.casefold()
        for n in (
            s.index_file,
            s.index_fallback,
            s.log_file,
            s.log_fallback,
            s.schema_file,
            s.schema_fallback,
        )
    }
    raw = {s.raw_folder.casefold(), s.raw_fallback.casefold()}

    def why(path: str) -> str | None:
        top = path.split("/", 1)[0].casefold()
        if "/" in path and top in raw:
            return (
                f"{path!r} is inside the wiki's sources folder, which holds only ingested sources"
            )
        if path.casefold() in own:
            return f"{path!r} is one of the wiki's own files (index, log, schema)"
        return None

    return why


@dataclass
class _Staged:
    """An import batch laid out for its one journalled step: each page's ``(path, text,
    source id, the new source's bytes or None)``, and what a crash's recovery needs (each
    page's and new source's etag, each page's log lines, the new sources' manifest
    entries)."""

    writes: list[tuple[str, bytes, str, bytes | None]] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    planned: dict[str, str] = field(default_factory=dict)
    parts: list[dict[str, Any]] = field(default_factory=list)
    entries: list[dict[str, Any]] = field(default_factory=list)


def _ready_layout(target: ImportTarget, layout: Layout, pages: Sequence[TransferPage]) -> Layout:
    """Before the first write: a wiki without a written schema takes the pages' top-level
    folders as its own; then the schema, index, log and raw folder are made."""
    if layout.schema not in layout.own:
        for page in pages:
            top, sep, _ = page.path.partition("/")
            if sep and _reserved(target)(page.path) is None:
                (target.root / top).mkdir(exist_ok=True)
    ready = target.ensure_files(raw=True)
    target.ensure_raw(ready)
    return ready


def _page_source(
    root: Path, raw: str, manifest: Manifest, taken: set[str], page: TransferPage, data: bytes
) -> tuple[Source, bytes | None]:
    """The source that holds ``page`` (its stored note ``data``): the manifest's own when it
    already has it, else a new one entered in ``manifest`` (its id added to ``taken``),
    returned with the bytes to store.

    :raises PathError: the new source's path leaves the wiki.
    """
    digest = etag(data)
    original = f"{IMPORTS_FOLDER}/{page.path}{SOURCE_SUFFIX}"
    origin = f"goat:{page.provenance.get('scope')}:{page.provenance.get('id')}"
    source = manifest.find_same(original, origin, digest)
    if source is not None:
        return source, None
    ident = manifest.choose_id(original, digest, taken)
    contain(root, f"{raw}/{ident}")
    source = Source(
        id=ident,
        original=original,
        origin=origin,
        hash=digest,
        size=len(data),
        mtime_ns=0,
        ingested=filestore.now_utc().isoformat().replace("+00:00", "Z"),
    )
    manifest.sources.append(source)
    manifest.supersede(origin, source)
    taken.add(ident.casefold())
    return source, data


def _stage(root: Path, raw: str, manifest: Manifest, plans: Sequence[ImportPlan]) -> _Staged:
    """Lay out the planned pages of a batch, each citing its source (new sources are entered
    in ``manifest``).

    :raises PathError: a page's or source's path leaves the wiki.
    """
    taken = {s.id.casefold() for s in manifest.sources}
    staged = _Staged()
    for plan in plans:
        assert plan.target is not None and plan.text is not None
        # the note as the policy passed it (with its provenance): what is stored
        data = plan.text.encode("utf-8")
        source, raw_data = _page_source(root, raw, manifest, taken, plan.page, data)
        if raw_data is not None:
            staged.planned[f"{raw}/{source.id}"] = etag(data)
            staged.entries.append({"page": plan.target, "source": asdict(source)})
        cite = {"id": source.id, "hash": source.hash}
        text = set_keys(plan.text, {"sources": [cite]}).encode("utf-8")
        contain(root, plan.target)
        staged.writes.append((plan.target, text, source.id, raw_data))
        lines = [f"- page: {plan.target}", f"- source: {source.id}"]
        staged.details += lines
        staged.planned[plan.target] = etag(text)
        staged.parts.append({"page": plan.target, "details": lines})
    return staged


def _write_staged(
    root: Path,
    raw_dir: Path,
    staged: _Staged,
    manifest: Manifest,
    manifest_path: Path,
    progress: Callable[[int, int], None] | None,
) -> dict[str, str]:
    """Write each new source (read-only) and page of ``staged``, never over a file, then the
    manifest; returns ``{path: etag}`` of the pages."""
    done: dict[str, str] = {}
    writes = staged.writes
    for n, (rel, text, ident, raw_data) in enumerate(writes, start=1):
        if raw_data is not None:
            raw_target = raw_dir / ident
            raw_target.parent.mkdir(parents=True, exist_ok=True)
            if current_etag(raw_target) != etag(raw_data):  # a crash's copy
                atomic_write(raw_target, raw_data, expected_etag=MISSING_ETAG, mode=0o444)
        dest = root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        done[rel] = atomic_write(dest, text, expected_etag=MISSING_ETAG)
        if progress is not None:
            progress(n, len(writes))
    manifest.save(manifest_path)
    return done


def _batch_title(plans: Sequence[ImportPlan]) -> tuple[str, str, str]:
    """``(kind, title, title_of)`` of a batch's log entry: ``copy`` or ``import``,
    ``<n> page(s) from <scope>``, and that title as a template of ``n`` and ``s``."""
    first = plans[0].page
    kind = "copy" if first.provenance_key == "copied_from" else "import"
    where = str(first.provenance.get("scope"))
    title_of = "{n} page{s} from " + where.replace("{", "{{").replace("}", "}}")
    title = title_of.format(n=len(plans), s="" if len(plans) == 1 else "s")
    return kind, title, title_of


def _import(
    target: ImportTarget,
    provider: Any,
    gate: PolicyGate,
    pages: Sequence[TransferPage],
    dry_run: bool,
    rename: bool,
    progress: Callable[[int, int], None] | None,
) -> list[TransferItem]:
    with target.lock:
        walk, layout = target.sync()
        scan = target.scan()
        prepared: dict[str, Any] = {}  # the layout, made before the first write

        def write_many(plans: list[ImportPlan]) -> list[Receipt]:
            """Every page and its source in one journalled step: one manifest save, one
            index update and one log entry for the whole batch."""
            if "layout" not in prepared:
                prepared["layout"] = _ready_layout(target, layout, pages)
            ready = prepared["layout"]
            raw_dir = target.root / ready.raw
            manifest_path = raw_dir / MANIFEST_NAME
            manifest = Manifest.load(manifest_path)
            staged = _stage(target.root, ready.raw, manifest, plans)

            def change() -> dict[str, str]:
                return _write_staged(
                    target.root, raw_dir, staged, manifest, manifest_path, progress
                )

            kind, title, title_of = _batch_title(plans)
            rels = [w[0] for w in staged.writes]
            sources = {"manifest": f"{ready.raw}/{MANIFEST_NAME}", "entries": staged.entries}
            extra = {"parts": staged.parts, "title_of": title_of, "sources": sources}
            target.commit(
                kind,
                title,
                rels,
                staged.details,
                change,
                layout=ready,
                planned=staged.planned,
                extra=extra,
            )
            for rel in rels:
                target.index_note(rel)
            return [target.receipt(rel) for rel in rels]

        return import_into_store(
            provider,
            gate,
            pages,
            notes=scan.notes,
            walk=walk,
            dry_run=dry_run,
            rename=rename,
            progress=progress,
            write_many=write_many,
            reserved=_reserved(target),
        )


def wiki_operations_for_import(provider: Any, target: ImportTarget) -> list[ProviderOperation]:
    """``import_pages(pages, *, dry_run, rename, resend_unknown, progress)`` (write), run on
    ``provider``'s store worker (a :class:`~goat_core.filestore.FolderStoreProvider`)."""
    return [folder_import_operation(provider, functools.partial(_import, target))]
