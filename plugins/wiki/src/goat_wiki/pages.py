"""Pages: writing them (``write_page``, remember, feedback, forget) and reading them
(recall, listing, one page, any file by name, the link map and connections).

Reads start with one stat walk and a :class:`~goat_core.filestore.search.SearchIndex` sync
that loads only changed pages; recall, listing and single-page reads never read every page.
The link map, connections and lint read every page (each once per change, cached by mtime and
size).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from goat_core import filestore
from goat_core.contract import (
    Connections,
    LinkMap,
    LinkResolution,
    MemoryWrite,
    Page,
    PageList,
    PageSummary,
    RecallResult,
    Receipt,
)
from goat_core.errors import BadInput, Conflict, NotFound, PathError, Rejected, TooLarge
from goat_core.filestore import (
    MISSING_ETAG,
    UneditableFrontmatter,
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
from goat_wiki import text as wt
from goat_wiki.layout import KINDS, MARKER_KEY, Layout, Schema, WikiNote, one_line, str_or_items
from goat_wiki.lint import WikiLint

__all__ = ["PageWrite", "WikiPages"]
_now = filestore.now_utc
_stem = filestore.file_stem
_fold = filestore.fold
_nfc = filestore.nfc


def _clashes_with_hidden(title: str) -> Rejected:
    """The refusal of a page write whose title or file name is a hidden page's: it names
    neither that page's path nor its etag."""
    return Rejected(
        f"a page titled {title!r} cannot be written here: it clashes with a page hidden by "
        "policy; nothing was written"
    )


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


@dataclass(frozen=True)
class _Draft:
    """A checked page write: its title, the folder it names (or ``None``), its frontmatter
    keys and its body."""

    title: str
    folder: str | None
    given: dict[str, Any]
    content: str


def _managed_keys(
    req: PageWrite,
    draft: _Draft,
    kept: dict[str, Any],
    page_folder: str,
    sources: list[Any],
    now: datetime,
) -> dict[str, Any]:
    """The frontmatter keys the provider sets on a page: ``title``, ``type`` and ``summary``
    (the request's, else the page's frontmatter, else the note's ``kept`` keys, else
    derived), ``sources`` and ``updated``."""
    given = draft.given
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
        or wt.derive_summary({}, draft.content)
    )
    return {
        "title": draft.title,
        "type": str(page_type),
        "summary": one_line(str(summary)),
        "sources": sources,
        "updated": now,
    }


def _page_text(
    note: WikiNote | None,
    managed: dict[str, Any],
    extra: dict[str, Any],
    content: str,
    now: datetime,
) -> tuple[str, str, str]:
    """``(text, expected etag, op)`` of a page write: a new page (``note`` is ``None``) is
    rendered whole with ``created``; an update sets the keys in the note's own frontmatter
    and replaces its body."""
    if note is None:
        data = {**managed, "created": now, **extra}
        text = render_note(data, content if content.endswith("\n") else content + "\n")
        return text, MISSING_ETAG, "write"
    try:
        updated = set_keys(note.text, {**managed, **extra})
    except UneditableFrontmatter as exc:
        raise Conflict(
            f"{note.path} was not changed: {exc}; such pages are never rewritten"
        ) from None
    split = parse_note(updated)
    new_text = updated[: split.body_start] + content
    if not new_text.endswith("\n"):
        new_text += "\n"
    return new_text, note.etag, "update"


class WikiPages(WikiLint):
    """Writing and reading the wiki's pages."""

    # == page writes =============================================================================
    def _cite(self, ids: Iterable[Any], layout: Layout) -> list[dict[str, str]]:
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

    def _find_titled(
        self,
        name: str,
        folder: str | None,
        visible: Callable[[PageSummary], bool] | None = None,
    ) -> str | None:
        """The page a write of ``name`` (in ``folder``) updates, or ``None``.

        :param visible: whether the caller may see a page: a case twin it may not see is
            :class:`Rejected` without naming it (the twin's path would tell of it)."""
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
            raise filestore.ambiguous_pages(name, exact)
        if exact:
            return exact[0]
        key = _fold(name)
        twins = [d for d in docs if _fold(d.title) == key or _fold(_stem(d.path)) == key]
        if twins and visible is not None:
            if not all(visible(PageSummary(id=d.path, title=d.title, path=d.path)) for d in twins):
                raise _clashes_with_hidden(name)
        if twins:
            names = ", ".join(f"{d.path!r} (title {d.title!r})" for d in twins)
            raise Conflict(
                f"title {name!r} differs only in case from existing page {names}; use its "
                "exact title to update it"
            )
        return None

    def _name_free(self, title: str, rel: str) -> None:
        """A new page titled ``title`` goes to ``rel``: :class:`Conflict` naming the file and
        the page that holds it when that file name is taken (ignoring case), e.g. ``Alpha?``
        maps to ``Alpha.md`` (``?`` cannot stand in a file name) where page ``Alpha`` is."""
        want = _fold(rel)
        if (self.root / rel).exists():
            held: str | None = rel
        else:
            docs = self._index_open().documents()
            held = next((d.path for d in docs if _fold(d.path) == want), None)
        if held is None:
            return
        note = self._load(held)
        what = f"the existing page {held!r}" + (
            f" (title {note.title!r})" if note is not None else ""
        )
        raise Conflict(
            f"title {title!r} maps to the file name {rel!r}, which is {what}; choose a title "
            "that differs in more than the characters a file name cannot hold, or update that "
            "page by its own title; nothing was written"
        )

    def _write_page(
        self, req: PageWrite, visible: Callable[[PageSummary], bool] | None = None
    ) -> dict[str, Any]:
        """Write or update the page ``req`` names; returns the ``stored`` result (``op``,
        ``page``, ``etag``, ``findings``).

        :raises TooLarge, BadInput: the request itself is refused (:meth:`_draft`).
        :raises Conflict, Rejected: the page it names cannot take it (:meth:`_page_to_update`,
            :meth:`_new_page_path`).
        """
        draft = self._draft(req)
        title, given, content = draft.title, draft.given, draft.content
        with self._lock:
            self._sync()
            layout = self._ensure_files()
            self._reserved_title(title, layout)
            schema = self._schema(layout)
            folder: str | None = None
            if draft.folder is not None and draft.folder.strip("/"):
                contain(self.root, draft.folder.strip("/"))
                folder = self._schema_folder(draft.folder, schema)
            existing = self._find_titled(title, folder, visible)
            now = _now()
            note: WikiNote | None
            if existing is not None:
                note = self._page_to_update(existing, title, req.etag, visible)
                rel = existing
                page_folder = posixpath.dirname(rel)
            else:
                rel, page_folder = self._new_page_path(req, draft, folder, schema, visible)
                note = None
            kept: dict[str, Any] = note.data if note is not None else {}
            sources: list[Any]
            if req.sources is not None or "sources" in given:
                source_ids = req.sources if req.sources is not None else given.get("sources")
                sources = self._cite(str_or_items(source_ids), layout)
            else:  # an update that names no sources keeps the provenance it had
                sources = [
                    s for s in str_or_items(kept.get("sources")) if isinstance(s, dict | str)
                ]
            managed = _managed_keys(req, draft, kept, page_folder, sources, now)
            extra = {k: v for k, v in given.items() if k not in managed and k != "created"}
            new_text, expected, op = _page_text(note, managed, extra, content, now)
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
            planned = {rel: etag(data_bytes)}
            self._commit(op, title, [rel], details, change, layout=layout, planned=planned)
            self._index_note(rel)
            findings = self._page_findings(rel)
        return {
            "status": "stored",
            "op": op,
            "page": rel,
            "etag": etag(data_bytes),
            "findings": [f.to_json() for f in findings],
        }

    def _draft(self, req: PageWrite) -> _Draft:
        """``req`` checked and split: its title (``folder/Title`` without ``folder`` names
        the folder too), its frontmatter and its body.

        :raises TooLarge: the page text is longer than ``max_input_chars``.
        :raises BadInput: the frontmatter does not parse or carries the provider's marker,
            or the body or title is empty.
        """
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
        return _Draft(title, folder_req, given, content)

    def _page_to_update(
        self,
        existing: str,
        title: str,
        given_etag: str | None,
        visible: Callable[[PageSummary], bool] | None,
    ) -> WikiNote:
        """The note of page ``existing`` that a write titled ``title`` updates.

        :raises Rejected: the caller may not see that page (nothing of it is told).
        :raises Conflict: no etag, a stale etag, or a page that does not parse.
        """
        note = self._must_load(existing)
        if visible is not None and not visible(
            PageSummary(id=existing, title=note.title, path=existing)
        ):
            # the caller may not see this page: no path, etag or text of it is told,
            # and nothing is written over it
            raise Rejected(
                f"a page titled {title!r} cannot be written here: the browse policy "
                "hides the page of that name; nothing was written"
            )
        if given_etag is None:
            raise Conflict(
                f"page {existing!r} exists (etag {note.etag}); read it and pass its "
                "etag to update it"
            )
        if given_etag != note.etag:
            raise Conflict(
                f"page {existing!r} changed since it was read (etag {given_etag} -> "
                f"{note.etag}); nothing was written"
            )
        if note.error is not None:
            raise Conflict(f"{existing} was not changed: {note.error}")
        return note

    def _new_page_path(
        self,
        req: PageWrite,
        draft: _Draft,
        folder: str | None,
        schema: Schema,
        visible: Callable[[PageSummary], bool] | None,
    ) -> tuple[str, str]:
        """``(path, folder)`` of a new page ``draft``: in ``folder``, else the folder of its
        type, else the schema's default folder.

        :raises Conflict: an etag was given for it, or its file name is taken.
        :raises Rejected: its file name is a page the caller cannot see.
        """
        if req.etag is not None and req.etag != MISSING_ETAG:
            raise Conflict(
                f"no page titled {draft.title!r} exists, but an etag was given; nothing was written"
            )
        if folder is None:
            type_hint = req.type or draft.given.get("type")
            hinted = wt.folder_for(str(type_hint), schema.folders) if type_hint else None
            folder = hinted or self._schema_folder(schema.default_folder, schema)
        stem = safe_title_filename(draft.title)
        rel = f"{folder}/{stem}.md"
        contain(self.root, rel)
        if visible is not None:  # the file name is taken by a page the caller cannot see
            for doc in self._index_open().documents():
                if _fold(doc.path) == _fold(rel) and not visible(
                    PageSummary(id=doc.path, title=doc.title, path=doc.path)
                ):
                    raise _clashes_with_hidden(draft.title)
        self._name_free(draft.title, rel)
        return rel, folder

    # == remember, feedback, forget ==============================================================
    def _append(self, rel: str, heading: str, text: str, op: str, title: str, source: str) -> None:
        note = self._must_load(rel)
        if note.error is not None:
            raise Conflict(f"{rel} was not changed: {note.error}; such pages are never rewritten")
        raw = note.text
        try:
            updated = set_keys(raw, {"updated": _now()}) if parse_note(raw).has_frontmatter else raw
        except UneditableFrontmatter as exc:
            raise Conflict(
                f"{rel} was not changed: {exc}; such pages are never rewritten"
            ) from None
        new = append_entry(updated, heading, text).encode("utf-8")

        def change() -> dict[str, str]:
            return {rel: atomic_write(self.root / rel, new, expected_etag=note.etag)}

        details = [f"- page: {rel}", f"- by: {source}"]
        self._commit(op, title, [rel], details, change, planned={rel: etag(new)})
        self._index_note(rel)

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
                self._name_free(title, rel)
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
            planned={rel: etag(content)},
        )
        self._index_note(rel)
        return rel

    def _write(self, write: MemoryWrite, kind: str) -> Receipt:
        text = self._check_text(write)
        stamp = _now().strftime("%Y-%m-%d %H:%M UTC")
        heading = f"{stamp} {kind} ({one_line(write.source)})"
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
        return self._receipt(rel)

    def _forget(self, ref: str) -> Receipt:
        with self._lock:
            self._sync()
            rel = self._resolve(ref, self._refs(), exact_paths=True)
            contain(self.root, rel)
            title = self._must_load(rel).title
            path = self.root / rel

            planned = {rel: MISSING_ETAG}

            def change() -> dict[str, str]:
                try:
                    os.unlink(path)
                except FileNotFoundError as exc:
                    planned.clear()  # removed by someone else: not this write's to log
                    raise NotFound(f"page {rel!r} vanished meanwhile") from exc
                fsync_dir(path.parent)
                return {rel: MISSING_ETAG}

            self._commit("forget", title, [rel], [f"- page: {rel}"], change, planned=planned)
            self._cache.pop(rel, None)
            self._index_open().remove(rel)
        return self._receipt(rel, removed=(rel,))

    # == reads ===================================================================================
    def _recall(self, query: str, limit: int) -> RecallResult:
        return self._whole_read(lambda: self._recall_once(query, limit))

    def _recall_once(self, query: str, limit: int) -> RecallResult:
        walk, _layout = self._sync()
        index = self._index_open()
        results = self._ranked(query, limit)
        items = []
        for hit in results.hits:
            items.append(
                filestore.recall_item(hit, self._load(hit.path), source=f"wiki page {hit.path}")
            )
        degraded = filestore.degraded_reasons(index.problems(), walk.skipped)
        degraded += filestore.unsearched_reasons(index.unsearched)
        degraded += [d for d in results.degraded if d not in degraded]
        degraded += self._pending_journal()
        # A ranked top-``limit`` is not degraded: ``complete=False`` says more matched.
        return RecallResult(
            scope=self.scope.key,
            items=tuple(items),
            complete=bool(results.complete)
            and results.total <= len(items)
            and not filestore.withheld(walk.skipped)
            and not index.unsearched,
            degraded=tuple(degraded),
        )

    def _list_pages(self, limit: int, cursor: str | None) -> PageList:
        walk, layout = self._sync()
        ordered = [f.path for f in self._page_files(walk, layout)]
        chunk, more, next_cursor = filestore.page_window(ordered, limit, cursor, issuer="wiki")
        degraded = filestore.degraded_reasons(self._problems(), walk.skipped)
        behind = self._behind()  # the index missed changes: the listing may be behind
        degraded += behind + self._pending_journal()
        items, unread = filestore.page_summaries(chunk, self._load)
        degraded += unread
        return PageList(
            items=tuple(items),
            next_cursor=next_cursor,
            complete=not more
            and len(items) == len(chunk)
            and not filestore.withheld(walk.skipped)
            and not behind,
            degraded=tuple(degraded),
        )

    def _get_page(self, ref: str) -> Page:
        def read() -> Page:
            self._sync()
            return self._page(self._must_load(self._resolve(ref, self._refs())))

        return self._whole_read(read)

    def _read_any(self, ref: str) -> dict[str, Any]:
        """A page, or one of the provider's files by name, or a source (``raw/<id>``)."""
        layout = self._layout()
        clean = _nfc(ref.strip())
        if layout.raw is not None and clean.startswith(layout.raw + "/"):
            return self._read_source(clean)
        for kind in KINDS:
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
        problems = filestore.degraded_reasons(
            [(n.path, n.error) for n in scan.notes if n.error], scan.walk.skipped
        )
        return result.model_copy(update={"degraded": tuple(problems)}) if problems else result

    def _connections(self, ref: str) -> Connections:
        scan = self._scan()
        rel = self._resolve(ref, [(n.path, n.title, None) for n in scan.notes])
        return self._link_index(scan).connections(rel)

    def _reindex(self, progress: Callable[[int, int], None] | None) -> dict[str, int]:
        walk, _layout = self._sync(progress)
        stats = self._index_open().stats()
        return {
            "notes": stats.documents,
            "skipped": len(walk.skipped),
            "unparsable": len(self._index_open().problems()),
        }
