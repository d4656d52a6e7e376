"""Copies and imports into a folder store (docs/design.md, Copy, export and import): the
planning and writing every file-based provider shares, behind its ``import_pages``
operation (:data:`goat_core.contract.IMPORT_OPERATION`).

A page is a ``duplicate`` only when the store holds its content: a note is that page byte
for byte (its own hash, or the hash its source store had: an export imported back into the
store it came from adds nothing), or a note is that page as a copy or an import writes it
(:func:`holds_transfer`: its text less the provenance and the keys the store added). A
provenance ``sha256`` alone is a claim anyone can write in frontmatter, never proof. A page
whose frontmatter ``id`` a note already holds is written without it, so no two pages of a
store share an id.

:func:`import_into_folder` runs on the store's worker thread, under the store lock for the
whole batch: it plans every page (duplicate by content hash, conflict by path, the next
free name with ``rename``), passes each page's text through the policy gate, and only when
no conflict remains writes the pages, each atomically and never over an existing file.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from goat_core.contract import (
    IMPORT_OPERATION,
    PROVENANCE_KEYS,
    Access,
    MemoryWrite,
    PolicyGate,
    ProviderOperation,
    Receipt,
    TransferItem,
    TransferOutcome,
    TransferPage,
)
from goat_core.errors import BadInput, Conflict, GoatError, PathError, Rejected, StoreUnwritable
from goat_core.fileio import contain
from goat_core.filestore._frontmatter import drop_keys, set_keys

_O = TransferOutcome


@dataclass
class ImportPlan:
    """One page's plan: where it goes and the exact note text to write there."""

    page: TransferPage
    target: str | None
    outcome: TransferOutcome
    reason: str | None = None
    text: str | None = None
    receipt: Receipt | None = None


def provenance_hashes(notes: Iterable[Any]) -> dict[str, str]:
    """``{sha256: path}`` of every note carrying ``copied_from`` / ``imported_from``
    provenance (``note.data``, ``note.path``): what the notes claim, unchecked (a duplicate
    is decided by :func:`holds_transfer`)."""
    found: dict[str, str] = {}
    for note in notes:
        for key in PROVENANCE_KEYS:
            value = note.data.get(key)
            if isinstance(value, dict) and isinstance(value.get("sha256"), str):
                found.setdefault(value["sha256"], note.path)
    return found


def claimed_by(notes: Iterable[Any]) -> dict[str, list[Any]]:
    """``{sha256: [note, ...]}``: the notes whose provenance claims each hash."""
    found: dict[str, list[Any]] = {}
    for note in notes:
        for key in PROVENANCE_KEYS:
            value = note.data.get(key)
            if isinstance(value, dict) and isinstance(value.get("sha256"), str):
                found.setdefault(value["sha256"], []).append(note)
    return found


def holds_transfer(page: TransferPage, note: Any) -> bool:
    """Whether ``note`` (``.text``, ``.data``) really holds ``page`` as a copy or an import
    writes it: the note's provenance claims the page's hash, and the note's text, less the
    keys the store added that the page lacks (a wiki's ``sources``), is the page's text
    (less an ``id`` the store dropped) with that provenance set (:func:`note_text`). A
    note claiming the page's hash over other content holds nothing of it."""
    own = set(page.frontmatter)
    for key in PROVENANCE_KEYS:
        value = note.data.get(key)
        if not isinstance(value, dict) or value.get("sha256") != page.sha256:
            continue
        extra = [k for k in note.data if k != key and k not in own]
        try:
            held = drop_keys(note.text, extra) if extra else note.text
            texts = [page.text]
            if "id" in own and "id" not in note.data:
                texts.append(drop_keys(page.text, ("id",)))
            if any(_with_provenance(text, key, value, page.path) == held for text in texts):
                return True
        except BadInput:
            continue
    return False


def content_hashes(notes: Iterable[Any]) -> dict[str, str]:
    """``{sha256: path}`` of every note's own text (``note.text``, ``note.path``): a page a
    store already holds byte for byte."""
    import hashlib

    return {hashlib.sha256(n.text.encode("utf-8")).hexdigest(): n.path for n in notes}


def is_export_of(page: TransferPage, note: Any) -> bool:
    """Whether ``page`` (a bundle file whose manifest names ``note``'s hash as its
    ``source_sha256``) really is ``note`` as an export writes it, byte for byte: the note's
    text with only OKF's ``type``, ``title`` and ``timestamp`` added where the note had
    none (``render_page`` in goat_core/host/_okf.py), the values the bundle holds. A
    manifest is only a claim: a new page claiming an existing page's hash, with frontmatter
    that parses the same (``1`` and ``1.0``, ``yes`` and ``true``, a comment more), is not
    that page's duplicate."""
    from goat_core.filestore._frontmatter import jsonable, parse_note, render_note

    parsed = parse_note(page.text)
    if parsed.error is not None or parsed.body != note.body:
        return False
    okf: tuple[str, ...] = ("type", "title", "timestamp")
    added = {k: parsed.data[k] for k in okf if k in parsed.data and k not in note.data}
    if not {"type", "title"} <= set(added) | set(note.data):
        return False  # an export adds both where the note has none
    try:
        written = set_keys(note.text, added) if added else note.text
    except BadInput:  # frontmatter an export cannot edit: it renders the parsed keys
        written = render_note({**jsonable(note.data), **added}, note.body)
    return bool(written == page.text)


def note_text(page: TransferPage, text: str | None = None) -> str:
    """The note written for ``page``: its transferred text (frontmatter and body, every byte
    kept) with the provenance key set (a text without frontmatter gets a block in front), or
    ``text`` instead when a policy changed it. Frontmatter that parses but cannot be edited
    line by line (a flow mapping ``{a: 1}``) is written again from its keys, one line each.

    :raises BadInput: the frontmatter does not parse.
    """
    chosen = page.text if text is None else text
    return _with_provenance(chosen, page.provenance_key, page.provenance, page.path)


def _with_provenance(text: str, key: str, value: Any, path: str) -> str:
    """``text`` with the frontmatter ``key`` set to ``value`` (:func:`note_text`)."""
    from goat_core.filestore._frontmatter import jsonable, parse_note, render_note

    update: dict[str, Any] = {key: value}
    try:
        return set_keys(text, update)
    except BadInput as exc:
        parsed = parse_note(text)
        if parsed.error is not None:
            raise BadInput(f"{path}: {exc}") from None
        try:
            return render_note({**jsonable(parsed.data), **update}, parsed.body)
        except ValueError as bad:
            raise BadInput(f"{path}: frontmatter cannot be written: {bad}") from None


def _fold(path: str) -> str:
    import unicodedata

    return unicodedata.normalize("NFC", path).casefold()


def _renamed(path: str, taken: set[str]) -> str:
    stem, ext = posixpath.splitext(path)
    n = 2
    while _fold(f"{stem}-{n}{ext}") in taken:
        n += 1
    return f"{stem}-{n}{ext}"


@dataclass
class _Planner:
    """Plans one import batch against what the store holds: the notes' hashes and
    provenance claims, the ids they take and the (case-folded) paths in use. Each planned
    page takes its path and id, so later pages of the batch see them."""

    root: Any
    notes: list[Any]
    taken: Iterable[str]
    inspect: Callable[[MemoryWrite], MemoryWrite]
    rename: bool
    reserved: Callable[[str], str | None]
    source: str
    max_chars: int | None

    def __post_init__(self) -> None:
        self.claims = claimed_by(self.notes)  # only a claim: checked against the content
        self.hashes: dict[str, str] = {}  # the pages this batch plans, by hash
        # the pages the store holds byte for byte: an export of this very store imported
        # back (the manifest's source_sha256) finds its pages unchanged, not taken by
        # "other content"
        self.held = content_hashes(self.notes)
        self.by_path = {n.path: n for n in self.notes}
        self.ids = {n.fm_id for n in self.notes if n.fm_id is not None}
        self.used = {_fold(p) for p in self.taken}

    def plan(self, page: TransferPage) -> ImportPlan:
        """The plan for ``page``: a duplicate, a refusal, or planned with its note text."""
        known = self.holder(page)
        if known is not None:
            return ImportPlan(page, known, _O.DUPLICATE)
        placed = self.place(page)
        if isinstance(placed, ImportPlan):
            return placed
        return self.prepare(page, placed)

    def holder(self, page: TransferPage) -> str | None:
        """The path that already holds ``page`` (in this batch or the store), or ``None``."""
        for where in (self.hashes, self.held):
            if page.sha256 is not None and page.sha256 in where:
                return where.get(page.sha256)
        known = next(
            (n.path for n in self.claims.get(page.sha256, ()) if holds_transfer(page, n)), None
        )
        origin = self.held.get(page.origin_sha256) if page.origin_sha256 is not None else None
        if known is None and origin is not None and is_export_of(page, self.by_path[origin]):
            known = origin
        return known

    def place(self, page: TransferPage) -> str | ImportPlan:
        """The path ``page`` goes to (the next free name with ``rename``), or the plan that
        refuses it: an unsafe path is rejected, a reserved or taken one a conflict."""
        try:
            contain(self.root, page.path)
        except PathError as exc:
            return ImportPlan(page, None, _O.REJECTED, f"unsafe path: {exc}")
        target = page.path
        why = self.reserved(target)
        if why is not None and self.rename:  # a store's own file name: the next free name
            renamed = _renamed(target, self.used | {_fold(target)})
            if self.reserved(renamed) is None:
                target, why = renamed, None
        if why is not None:
            return ImportPlan(page, target, _O.CONFLICT, why)
        if _fold(target) in self.used:
            if not self.rename:
                why = (
                    f"{target!r} already exists with other content (--rename picks "
                    "the next free name)"
                )
                return ImportPlan(page, target, _O.CONFLICT, why)
            target = _renamed(target, self.used)
        return target

    def prepare(self, page: TransferPage, target: str) -> ImportPlan:
        """``page`` planned at ``target`` with the note text to write, or rejected: too
        large, an id that cannot be dropped, refused by the policy, or frontmatter that
        cannot take the provenance."""
        if self.max_chars is not None and len(page.body) > self.max_chars:
            reason = f"too large: {len(page.body)} characters, at most {self.max_chars}"
            return ImportPlan(page, target, _O.REJECTED, reason)
        chosen = page.text
        fm_id = page.frontmatter.get("id")
        if fm_id is not None and str(fm_id) in self.ids:
            # A page's id names it within its store, and `show <id>` must find one page. A
            # copy (renamed or not) or an import whose id the destination already holds is
            # a new page there: it goes without that id, the destination names it by its
            # path, and the id it had stays reachable through its provenance's `id`.
            try:
                chosen = drop_keys(chosen, ("id",))
            except BadInput as exc:
                return ImportPlan(page, target, _O.REJECTED, f"{page.path}: {exc}")
        elif fm_id is not None:
            self.ids.add(str(fm_id))
        try:
            # the whole note as it will be stored, frontmatter included (provenance is added
            # by GOAT after the policy, from the source's own record)
            inspected = self.inspect(
                MemoryWrite(kind="remember", text=chosen, title=page.title, source=self.source)
            )
        except Rejected as exc:
            return ImportPlan(page, target, _O.REJECTED, f"rejected: {exc.reason}")
        try:
            text = note_text(page, inspected.text)
        except BadInput as exc:
            return ImportPlan(page, target, _O.REJECTED, str(exc))
        self.used.add(_fold(target))
        self.hashes[page.sha256] = target
        return ImportPlan(page, target, _O.PLANNED, text=text)


def import_into_folder(
    root: Any,
    pages: Sequence[TransferPage],
    *,
    notes: Iterable[Any],
    taken: Iterable[str],
    inspect: Callable[[MemoryWrite], MemoryWrite],
    write: Callable[[ImportPlan], Receipt] | None = None,
    write_many: Callable[[list[ImportPlan]], list[Receipt]] | None = None,
    dry_run: bool = False,
    rename: bool = False,
    reserved: Callable[[str], str | None] = lambda path: None,
    progress: Callable[[int, int], None] | None = None,
    source: str = "import",
    max_chars: int | None = None,
) -> list[TransferItem]:
    """Plan and (unless ``dry_run`` or a conflict remains) write ``pages``. Call on the
    store's worker thread under the store lock.

    :param root: the store root (containment of every target).
    :param notes: the store's parsed notes (``.path``, ``.data``, ``.text``): what it holds.
    :param taken: every file path in the store (case-insensitive clashes are conflicts).
    :param inspect: the policy gate's ``inspect`` (each page body, exactly as stored).
    :param write: writes one planned page (its ``target`` and ``text``), never over an
        existing file; returns the receipt. ``Conflict`` raised here is reported for that
        page (another writer won the path meanwhile).
    :param write_many: instead of ``write``, writes every planned page in one step (a
        store that keeps a catalog or log per operation) and returns their receipts in
        order; it reports its own progress.
    :param reserved: why a path cannot hold a page in this store (the provider's own
        files), or ``None``; with ``rename`` such a path takes the next free name unless
        that is reserved too (a wiki's raw folder).
    :param max_chars: the provider's ``max_input_chars``: a longer body is ``rejected``.
    :returns: one item per page, in order.
    """
    planner = _Planner(root, list(notes), taken, inspect, rename, reserved, source, max_chars)
    plans = [planner.plan(page) for page in pages]
    conflicts = [p for p in plans if p.outcome is _O.CONFLICT]
    if conflicts and not dry_run:
        names = ", ".join(repr(p.target) for p in conflicts)
        for plan in plans:
            if plan.outcome is _O.PLANNED:
                plan.reason = f"not written: the batch has conflicts ({names})"
    elif not dry_run and write_many is not None:
        _write_in_one_step(root, [p for p in plans if p.outcome is _O.PLANNED], write_many)
    elif not dry_run:
        assert write is not None
        _write_each(root, [p for p in plans if p.outcome is _O.PLANNED], write, progress)
    return [
        TransferItem(
            source=p.page.provenance.get("id") or p.page.path,
            target=p.target,
            outcome=p.outcome,
            reason=p.reason,
            receipt=p.receipt,
            sha256=p.page.sha256,
        )
        for p in plans
    ]


def _settle(plan: ImportPlan, receipt: Receipt) -> None:
    """Record on ``plan`` the outcome its write's ``receipt`` reports."""
    plan.outcome = _O(receipt.status.value)
    plan.reason = receipt.reason
    plan.receipt = receipt


def _write_in_one_step(
    root: Any, todo: list[ImportPlan], write_many: Callable[[list[ImportPlan]], list[Receipt]]
) -> None:
    """Write every planned page of ``todo`` with one ``write_many`` call.

    :raises StoreUnwritable: a fault stopped the step (:func:`_stopped_step`).
    :raises GoatError: an other ``OSError`` stopped it.
    """
    if not todo:
        return
    try:
        receipts = write_many(todo)
    except (OSError, StoreUnwritable) as exc:
        raise _stopped_step(root, todo, exc) from exc
    for plan, receipt in zip(todo, receipts, strict=True):
        _settle(plan, receipt)


def _write_each(
    root: Any,
    todo: list[ImportPlan],
    write: Callable[[ImportPlan], Receipt],
    progress: Callable[[int, int], None] | None,
) -> None:
    """Write the planned pages of ``todo`` one by one; a page another writer won meanwhile
    is a conflict, and a fault undoes the batch (:func:`_stopped`).

    :raises StoreUnwritable: a full or read-only store stopped the batch.
    :raises GoatError: an other ``OSError`` stopped it.
    """
    fresh = _missing_folders(root, todo)
    written: list[ImportPlan] = []
    for done, plan in enumerate(todo, start=1):
        try:
            receipt = write(plan)
        except Conflict as exc:
            plan.outcome, plan.reason = _O.CONFLICT, str(exc)
        except (OSError, StoreUnwritable) as exc:
            raise _stopped(root, plan, written, fresh, exc) from exc
        else:
            _settle(plan, receipt)
            written.append(plan)
        if progress is not None:
            progress(done, len(todo))


def _missing_folders(root: Any, plans: Sequence[ImportPlan]) -> list[Path]:
    """The folders the pages of ``plans`` need that do not exist yet, deepest first."""
    base = Path(root)
    missing: set[Path] = set()
    for plan in plans:
        assert plan.target is not None
        folder = (base / plan.target).parent
        while folder != base and base in folder.parents and not folder.exists():
            missing.add(folder)
            folder = folder.parent
    return sorted(missing, key=lambda f: len(f.parts), reverse=True)


def _stopped(
    root: Any,
    failed: ImportPlan,
    written: Sequence[ImportPlan],
    fresh: Sequence[Path],
    exc: BaseException,
) -> GoatError:
    """Undo a batch a fault stopped, and the typed error that says what is left.

    A file store plans the whole batch under its lock, so nothing partial should stay
    (docs/design.md, Copy, export and import): each page this batch wrote is removed again
    if it still holds exactly what was written (a page someone changed since stays), then
    the folders the batch made, if empty. What cannot be removed (a store turned read-only)
    is named in the error; importing again finds those pages as duplicates."""
    from goat_core.fileio import current_etag, etag

    left: list[str] = []
    for plan in reversed(written):
        assert plan.target is not None and plan.text is not None
        path = Path(root) / plan.target
        try:
            if current_etag(path) == etag(plan.text.encode("utf-8")):
                path.unlink()
            else:
                left.append(plan.target)
        except OSError:
            left.append(plan.target)
    for folder in fresh:
        try:
            folder.rmdir()
        except OSError:
            pass  # not empty (a page left, or another writer's file), or not removable
    if left:
        kept = (
            f"{len(left)} page(s) written before it could not be removed and stay: "
            f"{', '.join(sorted(left))} (importing again finds them as duplicates)"
        )
    else:
        kept = f"the {len(written)} page(s) written before it were removed: nothing was written"
    return _typed(root, exc, f"the import stopped at {failed.target!r}; {kept}")


def _stopped_step(root: Any, todo: Sequence[ImportPlan], exc: BaseException) -> GoatError:
    """The typed error for a fault under a one-step batch (``write_many``): the pages
    planned at free paths that now exist landed before it, and are named."""
    landed = [p.target for p in todo if p.target is not None and (Path(root) / p.target).exists()]
    if landed:
        kept = (
            f"{len(landed)} page(s) were written before it and stay: {', '.join(landed)} "
            "(importing again finds them as duplicates)"
        )
    else:
        kept = "nothing was written"
    return _typed(root, exc, f"the import stopped; {kept}")


def _typed(root: Any, exc: BaseException, what: str) -> GoatError:
    """``exc`` as ``StoreUnwritable`` (a full or read-only store) with ``what`` appended,
    else a :class:`GoatError` naming it."""
    typed = exc if isinstance(exc, StoreUnwritable) else None
    if typed is None and isinstance(exc, OSError):
        typed = StoreUnwritable.from_os_error(exc, getattr(exc, "filename", None) or root)
    if typed is None:
        return GoatError(f"{what}: {exc}")
    cause = typed.message.removesuffix("; nothing was stored")
    return StoreUnwritable(f"{cause}; {what}", path=typed.path, reason=typed.reason)


#: ``do_import(provider, gate, pages, dry_run, rename, progress) -> items``, run on the
#: store's worker thread by :func:`folder_import_operation`.
FolderImport = Callable[
    [Any, PolicyGate, Sequence[TransferPage], bool, bool, "Callable[[int, int], None] | None"],
    list[TransferItem],
]


def folder_import_operation(provider: Any, do_import: FolderImport) -> ProviderOperation:
    """The ``import_pages`` operation of a folder store (write access): ``await
    import_pages(gate, pages, *, dry_run=False, rename=False, resend_unknown=False,
    progress=None)`` runs ``do_import`` on ``provider``'s store worker. ``resend_unknown``
    means nothing to a folder store (its writes are never ``unknown``).

    :param provider: a :class:`~goat_core.filestore.FolderStoreProvider`.
    """

    async def import_pages(
        gate: PolicyGate,
        pages: Sequence[TransferPage],
        *,
        dry_run: bool = False,
        rename: bool = False,
        resend_unknown: bool = False,
        progress: Callable[[int, int], None] | None = None,
        **_: Any,
    ) -> list[TransferItem]:
        args = (do_import, provider, gate, list(pages), dry_run, rename, progress)
        try:
            if dry_run:  # writes nothing: works on a read-only GOAT home too
                return await provider._worker.run(*args)
            # the GOAT home's index must take the batch: checked before the first page
            return await provider._worker.run(provider._strictly, *args)
        except OSError as exc:  # before any page (a layout folder): typed, nothing written
            raise _typed(provider.root, exc, "the import wrote nothing") from exc

    return ProviderOperation(IMPORT_OPERATION, Access.WRITE, import_pages)


def import_into_store(
    provider: Any,
    gate: PolicyGate,
    pages: Sequence[TransferPage],
    *,
    notes: Iterable[Any],
    walk: Any,
    dry_run: bool,
    rename: bool,
    progress: Callable[[int, int], None] | None,
    **how: Any,
) -> list[TransferItem]:
    """:func:`import_into_folder` for a folder store's current walk and notes: every file
    and attachment path is taken, each body passes ``gate.inspect``, and the provider's
    ``max_input_chars`` applies. ``how`` carries ``write`` or ``write_many`` (and
    ``reserved``)."""
    return import_into_folder(
        provider.root,
        pages,
        notes=notes,
        taken=[f.path for f in walk.files] + list(walk.attachments),
        inspect=gate.inspect,
        dry_run=dry_run,
        rename=rename,
        progress=progress,
        max_chars=provider.spec.max_input_chars,
        **how,
    )
