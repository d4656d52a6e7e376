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
from dataclasses import asdict, dataclass
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
        prepared: dict[str, Any] = {}

        def prepare() -> Any:
            """Before the first write: a wiki without a written schema takes the pages'
            top-level folders as its own; then the schema, index, log and raw folder."""
            if "layout" not in prepared:
                if layout.schema not in layout.own:
                    for page in pages:
                        top, sep, _ = page.path.partition("/")
                        if sep and _reserved(target)(page.path) is None:
                            (target.root / top).mkdir(exist_ok=True)
                ready = target.ensure_files(raw=True)
                target.ensure_raw(ready)
                prepared["layout"] = ready
            return prepared["layout"]

        def write_many(plans: list[ImportPlan]) -> list[Receipt]:
            """Every page and its source in one journalled step: one manifest save, one
            index update and one log entry for the whole batch."""
            ready = prepare()
            raw_dir = target.root / ready.raw
            manifest_path = raw_dir / MANIFEST_NAME
            manifest = Manifest.load(manifest_path)
            taken = {s.id.casefold() for s in manifest.sources}
            writes: list[tuple[str, bytes, str, bytes | None]] = []
            details: list[str] = []
            # what a crash's recovery needs: each page's and new source's bytes (by etag),
            # the log lines of each page, and the manifest entries of the new sources
            planned: dict[str, str] = {}
            parts: list[dict[str, Any]] = []
            entries: list[dict[str, Any]] = []
            for plan in plans:
                assert plan.target is not None and plan.text is not None
                page = plan.page
                # the note as the policy passed it (with its provenance): what is stored
                data = plan.text.encode("utf-8")
                digest = etag(data)
                original = f"{IMPORTS_FOLDER}/{page.path}{SOURCE_SUFFIX}"
                origin = f"goat:{page.provenance.get('scope')}:{page.provenance.get('id')}"
                source = manifest.find_same(original, origin, digest)
                raw_data: bytes | None = None
                if source is None:
                    ident = manifest.choose_id(original, digest, taken)
                    contain(target.root, f"{ready.raw}/{ident}")
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
                    raw_data = data
                    planned[f"{ready.raw}/{ident}"] = digest
                    entries.append({"page": plan.target, "source": asdict(source)})
                cite = {"id": source.id, "hash": source.hash}
                text = set_keys(plan.text, {"sources": [cite]}).encode("utf-8")
                contain(target.root, plan.target)
                writes.append((plan.target, text, source.id, raw_data))
                lines = [f"- page: {plan.target}", f"- source: {source.id}"]
                details += lines
                planned[plan.target] = etag(text)
                parts.append({"page": plan.target, "details": lines})

            def change() -> dict[str, str]:
                done: dict[str, str] = {}
                for n, (rel, text, ident, raw_data) in enumerate(writes, start=1):
                    if raw_data is not None:
                        raw_target = raw_dir / ident
                        raw_target.parent.mkdir(parents=True, exist_ok=True)
                        if current_etag(raw_target) != etag(raw_data):  # a crash's copy
                            atomic_write(
                                raw_target, raw_data, expected_etag=MISSING_ETAG, mode=0o444
                            )
                    dest = target.root / rel
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    done[rel] = atomic_write(dest, text, expected_etag=MISSING_ETAG)
                    if progress is not None:
                        progress(n, len(writes))
                manifest.save(manifest_path)
                return done

            first = plans[0].page
            kind = "copy" if first.provenance_key == "copied_from" else "import"
            where = str(first.provenance.get("scope"))
            title_of = "{n} page{s} from " + where.replace("{", "{{").replace("}", "}}")
            title = title_of.format(n=len(plans), s="" if len(plans) == 1 else "s")
            rels = [w[0] for w in writes]
            sources = {"manifest": f"{ready.raw}/{MANIFEST_NAME}", "entries": entries}
            extra = {"parts": parts, "title_of": title_of, "sources": sources}
            target.commit(
                kind, title, rels, details, change, layout=ready, planned=planned, extra=extra
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
