"""The skeleton every folder-of-Markdown provider shares (markdown, wiki).

- :class:`FolderStoreSettings` and :data:`StoreRoot`: the ``root`` setting, made absolute and
  refused where the store would refuse it (:func:`goat_core.filestore.validate_store_root`).
- :class:`FolderStoreProvider`: opening the store (the Pen id check, the root, lock, search
  index path and worker), the search index's life, the note helpers every such store needs
  (load, index, resolve, page, health) and the async facade that runs each operation on the
  store's :class:`~goat_core.filestore.StoreWorker`.

A subclass implements the operations (``_write``, ``_forget``, ``_recall``, ``_list_pages``,
``_get_page``, ``_link_map``, ``_connections``, ``_reindex``) and ``_load``, all called on the
worker thread, and sets the class attributes that name what differs (``noun``,
``index_name``, ``healthy``, ``description_keys``, ``page_keys``...).

Cheap to import (a plugin's settings import it): the page helpers, YAML and the SQLite index
load only when a store is opened and used.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Generic, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from goat_core.contract import (
    Connections,
    Health,
    LinkMap,
    MemoryWrite,
    Page,
    PageList,
    Provider,
    ProviderContext,
    ProviderSpec,
    RecallResult,
    Receipt,
    ReceiptStatus,
    normalize_pen_id,
)
from goat_core.errors import (
    Conflict,
    NotFound,
    PathError,
    ProviderUnavailable,
    ScopeError,
    StoreUnwritable,
)
from goat_core.fileio import StoreLock
from goat_core.filestore._files import (
    WalkResult,
    sweep_temp_files,
    validate_store_root,
    walk_notes,
)
from goat_core.filestore._worker import StoreWorker
from goat_core.logs import get_logger, redact_all

if TYPE_CHECKING:
    from goat_core.contract import Reranker
    from goat_core.filestore._embedding import BackgroundEmbedding
    from goat_core.filestore._pages import PageRef, StoredNote
    from goat_core.filestore.search import IndexedDoc, SearchIndex, SearchResults, VectorIndex


class EmbeddingElsewhere(Conflict):
    """Another process is embedding this store's notes for the same embedder (it holds the
    store's embedding lock): this one embeds nothing meanwhile. A recall ranks with the
    vectors stored so far and says so in ``degraded``; a reindex raises it (exit 5)."""


def absolute_store_root(value: Path | None) -> Path | None:
    """Make ``root`` absolute (``~`` expanded, relative to the current directory at bind time)
    so a Pen never splits across folders, and refuse what the store would refuse: ``/``, a
    home directory itself, a missing folder (``goat_core.filestore`` rules).

    :raises ValueError: naming the rule, for pydantic to report.
    """
    if value is None:
        return None
    absolute = Path(os.path.abspath(value.expanduser()))
    try:
        validate_store_root(absolute)
    except PathError as exc:
        raise ValueError(f"{exc} (rule {exc.rule})") from exc
    return absolute


def _no_empty_root(value: Any) -> Any:
    """``root=`` (empty, as from an unset variable) is refused: it would bind the current
    folder. :raises ValueError: naming the fix."""
    if isinstance(value, str) and not value.strip():
        raise ValueError(
            "root is empty: give the folder (or leave root out for the scope's own store)"
        )
    return value


#: The type of a folder store's ``root`` setting (``None``: the scope's default store).
StoreRoot = Annotated[
    Path | None, BeforeValidator(_no_empty_root), AfterValidator(absolute_store_root)
]


def _blank_is_none(value: Any) -> Any:
    """``embedder=`` or ``reranker=`` (empty, as a user clears it) means none."""
    return None if isinstance(value, str) and not value.strip() else value


class FolderStoreSettings(BaseModel):
    """Settings of a folder store: frozen, unknown keys refused, and ``root``. A subclass
    re-declares ``root`` (``root: StoreRoot = Field(default=None, description=...)``) only
    to describe it in its own words."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    root: StoreRoot = Field(
        default=None,
        description=(
            "Folder of the store, e.g. an existing Obsidian vault; it must exist. Default: "
            "the scope's store under the GOAT home data folder, created on first use."
        ),
    )
    embedder: Annotated[str | None, BeforeValidator(_blank_is_none)] = Field(
        default=None,
        pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$",
        description=(
            "Embedder for semantic recall (`goat embedders` lists the installed ones): recall "
            "fuses keyword and vector rankings. Default (or empty, `embedder=`): keyword "
            "recall only."
        ),
    )
    reranker: Annotated[str | None, BeforeValidator(_blank_is_none)] = Field(
        default=None,
        pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$",
        description=(
            "Reranker a plugin declares: recall reorders its first 20 notes by the reranker's "
            "scores. Default (or empty, `reranker=`): no reranking."
        ),
    )


#: How many notes a recall's hits keep parsed between calls (:meth:`FolderStoreProvider.
#: _hit_note`), each re-read when its ``(mtime_ns, size)`` changes.
HIT_NOTES_KEPT = 256

#: The note type a store reads (``goat_core.filestore.StoredNote`` or a subclass).
NoteT = TypeVar("NoteT", bound="StoredNote")
T = TypeVar("T")


def _made(folder: Path) -> StoreUnwritable | None:
    """Create the default store ``folder`` (``0700``); the typed error when its disk is full
    or read-only (other faults raise)."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        typed = StoreUnwritable.from_os_error(exc, folder)
        if typed is None:
            raise
        return typed
    return None


def _chunk_head(text: str, width: int = 160) -> str:
    """The start of a chunk, flattened, cut at a word (for a snippet with no keyword)."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    flat = " ".join(" ".join(lines).split())
    if len(flat) <= width:
        return flat
    cut = flat.rfind(" ", 0, width)
    return flat[: cut if cut > width // 2 else width] + "…"


class FolderStoreProvider(Provider, Generic[NoteT]):
    """A provider keeping one folder of Markdown files per scope.

    Opening: a forged, non-canonical Pen id is refused; ``root`` comes from the settings
    (``None``: the scope's default store under the GOAT home, created ``0700``); the store
    gets a cross-process :class:`~goat_core.filestore.StoreLock`, a search index file
    (``GoatHome.index_path(root, index_name)``, opened on first use) and a worker thread.

    :param context: the scope, binding, validated settings and GOAT home.
    :param spec: the provider's declaration.
    :raises PathError: the root is ``/``, a home directory itself, or (when given
        explicitly) not an existing folder.
    :raises ScopeError: a forged, non-canonical Pen id.
    """

    #: How messages name the store (``store``, ``wiki``).
    noun: ClassVar[str] = "store"
    #: The search index's name under the GOAT home (``<store key>-<index_name>.sqlite``).
    index_name: ClassVar[str] = "search"
    #: What :meth:`check` says of a healthy store (``{root}`` is the store folder).
    healthy: ClassVar[str] = "notes in {root}"
    #: Frontmatter keys whose value is a note's indexed description.
    description_keys: ClassVar[tuple[str, ...]] = ("description",)
    #: Frontmatter keys a :class:`~goat_core.contract.Page` carries as provenance.
    page_keys: ClassVar[tuple[str, ...]] = ()
    #: Characters dropped from untitled text before it is titled (``None``: Markdown's).
    title_markup: ClassVar[str | None] = None
    #: Whether several notes sharing a frontmatter ``id`` make a reference ambiguous
    #: (``False``: resolution falls through to titles and names).
    shared_ids_ambiguous: ClassVar[bool] = True

    def __init__(self, context: ProviderContext, *, spec: ProviderSpec) -> None:
        super().__init__(context)
        self.spec = spec
        pen_id = context.scope.pen_id
        if pen_id is not None and normalize_pen_id(pen_id) != pen_id:
            raise ScopeError(f"Pen id {pen_id!r} is not canonical; no {self.noun} was opened")
        configured = getattr(self._store_settings(context), "root", None)
        #: why the default store folder could not be created (full or read-only home)
        self._absent: StoreUnwritable | None = None
        if configured is None:
            default = context.home.default_store_dir(context.scope)
            self._absent = _made(default)
            # a folder that cannot be made yet is an empty store (see :meth:`_missing`)
            self.root: Path = (
                Path(os.path.realpath(default))
                if self._absent is not None
                else validate_store_root(default)
            )
        else:
            self.root = validate_store_root(Path(configured).expanduser())
        home = context.home
        self._lock = StoreLock(home.lock_path(self.root))
        self._index_path = home.index_path(self.root, self.index_name)
        self._worker = StoreWorker(home.store_key(self.root))
        self._index: SearchIndex | None = None
        self._embedder: str | None = getattr(self._store_settings(context), "embedder", None)
        self._vectors: VectorIndex | None = None
        self._reranker: str | None = getattr(self._store_settings(context), "reranker", None)
        #: the reranker's loaded model, once a recall loaded it
        self._reranker_model: Reranker | None = None
        self._rerank_pool: Any = None  # a one-thread pool, made at the first rerank
        self._rerank_running: Any = None  # the last rerank's future
        #: the thread embedding this store's notes, in a host that embeds in the background
        self._background: BackgroundEmbedding | None = None
        # the vector index last synced completely, and the keyword index's token then
        self._vectors_synced: tuple[VectorIndex, object] | None = None
        self._cache: dict[str, NoteT] = {}
        self._hit_notes: dict[str, NoteT] = {}
        self._closed = False

    def _store_settings(self, context: ProviderContext) -> Any:
        """The settings the root is read from (default: ``context.settings`` as given)."""
        return context.settings

    # -- notes and the search index (worker thread) ------------------------------------------
    def _walk(self) -> WalkResult:
        """:func:`~goat_core.filestore.walk_notes` of the root, swept (:meth:`_swept`)."""
        return self._swept(walk_notes(self.root))

    def _swept(self, walk: WalkResult) -> WalkResult:
        """Remove the temp files of dead writers that a walk of the root saw
        (:func:`~goat_core.filestore.sweep_temp_files`), under the store lock: taken here
        unless another process holds it (then a later walk sweeps). Returns ``walk``."""
        if walk.temp_files and self._lock.try_acquire():
            try:
                removed = sweep_temp_files(self.root, walk.temp_files)
            finally:
                self._lock.release()
            if removed:
                get_logger("goat_core.filestore").info(
                    "store.temp_files_removed", root=str(self.root), count=len(removed)
                )
                walk.temp_files = [t for t in walk.temp_files if t not in set(removed)]
        return walk

    def _load(self, rel: str, mtime_ns: int = 0, size: int = 0) -> NoteT | None:
        """Read and parse one note, or ``None`` if it vanished or is unreadable."""
        raise NotImplementedError

    def _hit_note(self, rel: str) -> NoteT | None:
        """A note a recall returns: read and parsed again only when its ``(mtime_ns, size)``
        differs from what this object last read for a recall (the test the index's change
        scan uses; one ``stat`` per hit otherwise), else the note kept from then. At most
        :data:`HIT_NOTES_KEPT` notes are kept (the oldest read is dropped first). ``None``
        when it vanished or is unreadable."""
        kept = self._hit_notes
        try:
            st = os.stat(os.path.join(self.root, rel))  # rel is the index's: no pathlib needed
        except OSError:
            kept.pop(rel, None)
            return None
        note = kept.get(rel)
        if note is not None and note.mtime_ns == st.st_mtime_ns and note.size == st.st_size:
            return note
        # stat first, then read: a change in between is read now and stat-checked next time
        note = self._load(rel, st.st_mtime_ns, st.st_size)
        kept.pop(rel, None)
        if note is not None:
            if len(kept) >= HIT_NOTES_KEPT:
                del kept[next(iter(kept))]
            kept[rel] = note
        return note

    def _must_load(self, rel: str) -> NoteT:
        """Read a note the index named; :class:`NotFound` when it vanished meanwhile."""
        from goat_core.errors import NotFound

        note = self._load(rel)
        if note is None:
            raise NotFound(f"page {rel!r} in {self.label()} vanished or is not readable")
        return note

    def _index_open(self) -> SearchIndex:
        """The store's search index; on a GOAT home that cannot hold one yet (full or
        read-only before the file was made), one in memory that reads sync from the notes
        and say so, and that refuses writes (:class:`~goat_core.filestore.search.MemoryIndex`)."""
        if self._index is None:
            from goat_core.filestore._pages import open_search_index
            from goat_core.filestore.search import MemoryIndex

            try:
                self._index = open_search_index(self._index_path)
            except (OSError, ProviderUnavailable) as exc:
                fault = MemoryIndex.fault_of(exc, self._index_path)
                if fault is None:
                    raise
                self._index = MemoryIndex(self._index_path, fault)
        return self._index

    def _whole_read(self, read: Callable[[], T]) -> T:
        """Run ``read`` (a read that syncs the index, then answers from it); if the index was
        found damaged and rebuilt meanwhile, the answer came from an index missing notes: run
        it again, so its sync re-indexes every note (reporting through the progress sink)
        before it answers. A read never answers from a damaged index as if it were complete.

        :raises ProviderUnavailable: the index was found damaged again on every try.
        """
        index = self._index_open()
        for _attempt in range(3):
            before = index.rebuilds
            result = read()
            if index.rebuilds == before:
                return result
            get_logger("goat_core.filestore").warning(
                "store.index_rebuilt", root=str(self.root), index=str(index.db_path)
            )
        from goat_core.errors import ProviderUnavailable

        raise ProviderUnavailable(
            f"the search index of {self.label()} ({index.db_path}) was found damaged on "
            "every try, even after rebuilding it; nothing was answered"
        )

    def _indexed_doc(self, note: NoteT) -> IndexedDoc:
        from goat_core.filestore._pages import indexed_doc

        return indexed_doc(note, description_keys=self.description_keys)

    def _index_note(self, rel: str) -> NoteT | None:
        """Re-read one note the store just wrote and update its index entry; the note, or
        ``None`` when it is not readable."""
        from goat_core.filestore._pages import index_note

        self._hit_notes.pop(rel, None)  # written by this store: never answered from before
        note = self._load(rel)
        if note is not None:
            index_note(self._index_open(), note, self._indexed_doc(note))
        return note

    def _refs(self) -> list[PageRef]:
        """``(path, title, frontmatter id)`` of every indexed note, and of every note the
        index could not hold but that reads (``SearchIndex.unsearched``: a file name that is
        not UTF-8), so a page the listing shows opens; call after a sync. When the index
        could not take the latest changes (its disk is full or read-only), of every note as
        the files are now (:meth:`_note_files`, each read), so no reference resolves to a
        stale title or misses a new note."""
        index = self._index_open()
        if index.behind is not None:
            notes = (self._load(f.path, f.mtime_ns, f.size) for f in self._note_files())
            return [(n.path, n.title, n.fm_id) for n in notes if n is not None]
        refs = [(d.path, d.title, d.ident) for d in index.documents()]
        refs += [(n.path, n.title, n.fm_id) for n in self._unheld_notes()]
        return refs

    def _unheld_notes(self) -> list[NoteT]:
        """The notes the index could not hold but that read (``SearchIndex.unsearched``: a
        file name that is not UTF-8), each read now, in path order."""
        notes = (self._load(path) for path in sorted(self._index_open().unsearched))
        return [n for n in notes if n is not None]

    def _problems(self) -> list[tuple[str, str]]:
        """``(path, problem)`` of every note read with a problem (bad frontmatter, not
        UTF-8 text): the index's (``SearchIndex.problems``), then those of the notes it could
        not hold (``SearchIndex.unsearched``: a file name that is not UTF-8), each read now,
        since no index row keeps theirs. Call after a sync."""
        problems = self._index_open().problems()
        problems += [(n.path, n.error) for n in self._unheld_notes() if n.error]
        return problems

    def _note_files(self) -> list[Any]:
        """The files of the notes a reference may name (default: every note of a walk)."""
        return list(self._walk().files)

    def _behind(self) -> list[str]:
        """The ``degraded`` line of a read while the index misses changes (else none)."""
        from goat_core.filestore.search._faults import behind_reason

        reason = behind_reason(self._index_open())
        return [reason] if reason else []

    def _resolve(self, ref: str, refs: Iterable[PageRef], *, exact_paths: bool = False) -> str:
        """The path of the one note ``ref`` names: its path (with or without ``.md``),
        frontmatter ``id``, a unique title or file name ignoring case (NFC), then a unique
        frontmatter alias (:func:`goat_core.filestore.resolve_page_ref`, which says why a
        title wins over an alias).

        :param refs: ``(path, title, frontmatter id)`` of every note.
        :raises NotFound: nothing matches. :raises Ambiguous: several do.
        :raises PathError: an unsafe path (traversal, absolute...).
        """
        from goat_core.filestore._pages import resolve_page_ref

        return resolve_page_ref(
            ref,
            refs,
            root=self.root,
            where=self.label(),
            shared_ids_ambiguous=self.shared_ids_ambiguous,
            exact_paths=exact_paths,
            aliases=self._aliases,
        )

    def _aliases(self) -> dict[str, list[str]]:
        """``path -> frontmatter aliases`` of the notes (``aliases``, else ``alias``; a list
        or a single string), from the index, or from the files while it misses changes."""
        index = self._index_open()
        if index.behind is None:
            return index.aliases()
        from goat_core.filestore._pages import str_list

        notes = (self._load(f.path, f.mtime_ns, f.size) for f in self._note_files())
        return {
            n.path: str_list(n.data.get("aliases") or n.data.get("alias"))
            for n in notes
            if n is not None
        }

    def _page(self, note: NoteT) -> Page:
        from goat_core.filestore._pages import to_page

        return to_page(note, self.page_keys)

    def _check_text(self, write: MemoryWrite) -> str:
        from goat_core.filestore._pages import checked_text

        return checked_text(write.text, self.spec.max_input_chars, noun=self.noun)

    def _generated_title(self, text: str) -> str:
        from goat_core.filestore._pages import MARKUP_CHARS, generated_title

        markup = MARKUP_CHARS if self.title_markup is None else self.title_markup
        return generated_title(text, markup=markup)

    def _receipt(self, rel: str, removed: tuple[str, ...] = ()) -> Receipt:
        return Receipt(
            status=ReceiptStatus.STORED, id=rel, path=rel, scope=self.scope.key, removed=removed
        )

    def _check(self) -> Health:
        from goat_core.filestore._pages import folder_health

        healthy = self.healthy.format(root=self.root)
        if self._embedder is not None:
            healthy += f"; semantic recall with embedder {self._embedder!r}"
        if self._reranker is not None:
            healthy += f"; reranked by reranker {self._reranker!r}"
        return folder_health(
            self.root, noun=self.noun, healthy=healthy, index_path=self._index_path
        )

    def _close(self) -> None:
        if self._background is not None:  # after its current batch (each commits whole)
            self._background.stop()
            self._background = None
        if self._index is not None:
            self._index.close()
            self._index = None
        if self._vectors is not None:
            self._vectors.close()
            self._vectors = None
        self._vectors_synced = None
        self._reranker_model = None
        if self._rerank_pool is not None:  # a hung reranker's thread is not waited for
            self._rerank_pool.shutdown(wait=False, cancel_futures=True)
            self._rerank_pool = None

    # -- hybrid recall (worker thread) --------------------------------------------------------
    def _vector_open(self) -> VectorIndex:
        """The store's vector index for its embedder, opened (and loaded) on first use.

        :raises GoatError: the embedder is not installed or its weights are missing or do not
            match their recorded sha256; any other exception of the embedder's factory is a
            ``ProviderUnavailable`` naming it.
        """
        if self._vectors is not None:  # deleted or rebuilt under it: open it again
            from goat_core.filestore._embedding import reopened

            fresh = reopened(self._vectors)
            if fresh is not None:
                self._vectors, self._vectors_synced = fresh, None
        if self._vectors is None:
            from goat_core.contract import embedder_cache_dir
            from goat_core.filestore.search import VectorIndex

            name = self._embedder
            assert name is not None
            spec, embedder = self._load_model(
                "embedder", name, self.context.embedders, embedder_cache_dir
            )
            # one file per embedder name: switching a binding's embedder back and forth does
            # not re-embed; a new model under the same name (identity) rebuilds it
            path = self.context.home.index_path(self.root, f"{self.index_name}-vectors-{name}")
            self._vectors = VectorIndex(path, embedder, spec.semantic_floor)
            if self._vectors.rebuilt:
                get_logger(__name__).info("vectors.rebuilt", reason=self._vectors.rebuilt)
        return self._vectors

    def _sync_vectors(self, vectors: VectorIndex, background: bool = False) -> dict[str, int]:
        """Embed what changed since the last sync, reporting through the host's embedding
        progress sink (:attr:`ProviderContext.embed_progress`). Skipped (``embedded`` 0) while
        the keyword index is unchanged (:meth:`~goat_core.filestore.search.SearchIndex.
        change_token`) since the last sync of the same vector index completed, or when no
        note needs embedding.

        One process embeds a store at a time: the sync holds a lock under the GOAT home
        (``lock_path(root, "<index>-embed-<embedder>")``), taken without waiting
        (``goat_core/filestore/_embedding.py``). With ``background`` (a recall in a host that
        set :attr:`ProviderContext.embed_in_background`), the notes are embedded on the
        store's own thread instead, and this raises at once.

        :raises EmbeddingElsewhere: another process holds the lock, or (``background``) the
            store's thread is embedding; nothing was embedded here.
        :raises GoatError: (``background``) the last embedding on the thread failed: its
            error, once (the next call starts it again).
        """
        from goat_core.filestore._embedding import take_embedding_lock

        index = self._index_open()
        token = index.change_token()
        synced = self._vectors_synced
        if synced is not None and synced[0] is vectors and synced[1] == token:
            return {"embedded": 0}

        def load(rel: str) -> tuple[str, str, str] | None:
            note = self._load(rel)
            if note is None:
                return None
            doc = self._indexed_doc(note)
            return doc.title, doc.body, doc.description

        listing = [(d.path, d.mtime_ns, d.size) for d in index.documents()]
        pending = vectors.changes(listing)
        if not pending:  # nothing to embed: no lock, no one kept waiting
            self._vectors_synced = (vectors, token)
            return {"embedded": 0}
        name = self._embedder
        path = self.context.home.lock_path(self.root, f"{self.index_name}-embed-{name}")
        if background:
            return self._embed_in_background(vectors, path, listing, load, pending)
        lock = take_embedding_lock(path)
        if lock is False:
            raise EmbeddingElsewhere(
                f"another process is embedding notes of {self.label()} with embedder "
                f"{name!r} (a first embedding takes minutes); until it is done, semantic "
                "ranking uses the vectors it has stored so far"
            )
        try:
            stats = vectors.sync(listing, load, self.context.embed_progress)
        finally:
            if lock is not None:
                lock.release()
        self._vectors_synced = (vectors, token)
        return stats

    def _embed_in_background(
        self,
        vectors: VectorIndex,
        lock_path: Path,
        listing: list[tuple[str, int, int]],
        load: Callable[[str], tuple[str, str, str] | None],
        pending: int,
    ) -> dict[str, int]:
        """:meth:`_sync_vectors` with ``background``: start (or find) the store's embedding
        thread, and raise what the recall reports meanwhile."""
        from goat_core.errors import GoatError
        from goat_core.filestore._embedding import BackgroundEmbedding
        from goat_core.filestore.search import VectorIndex

        bg = self._background
        if bg is None:
            bg = self._background = BackgroundEmbedding()
        if not bg.running():
            error = bg.failure()  # kept for a while, then tried again
            if error is not None:
                if isinstance(error, GoatError):
                    raise error
                raise ProviderUnavailable(
                    f"embedding the notes of {self.label()} failed "
                    f"({type(error).__name__}: {error})"
                ) from error
            bg.start(
                lambda: VectorIndex(vectors.path, vectors.embedder, vectors.floor),
                lock_path,
                listing,
                load,
                self.context.embed_progress,
                pending,
            )
        done, total = bg.progress()
        raise EmbeddingElsewhere(
            f"{self.label()} is being embedded for semantic recall with embedder "
            f"{self._embedder!r} ({done} of {total} notes done, here or by another process); "
            "until it is done, semantic ranking uses the vectors stored so far"
        )

    def _reindex_all(self, progress: Callable[[int, int], None] | None) -> dict[str, int]:
        """:meth:`_reindex`, then, with an embedder, the vector index (count ``embedded``).

        :raises ProviderUnavailable: the embedder cannot be loaded (the keyword index is up
            to date all the same; the message says so).
        :raises EmbeddingElsewhere: another process is embedding the store (the same).
        """
        counts = self._reindex(progress)
        if self._embedder is None:
            return counts
        import sqlite3

        from goat_core.errors import GoatError, ProviderUnavailable

        try:
            stats = self._sync_vectors(self._vector_open())
        except EmbeddingElsewhere as exc:
            raise EmbeddingElsewhere(
                f"the keyword index of {self.label()} is up to date, but {exc}; run reindex "
                "again when it is done"
            ) from exc
        except (GoatError, OSError, sqlite3.Error) as exc:
            raise ProviderUnavailable(
                f"the keyword index of {self.label()} is up to date, but semantic recall with "
                f"embedder {self._embedder!r} is unavailable ({redact_all(str(exc))}); recall "
                "answers keyword results only, degraded"
            ) from exc
        return {**counts, "embedded": stats["embedded"]}

    def _ranked(self, query: str, limit: int) -> SearchResults:
        """The ranked hits of a recall (:meth:`_ranking`); with a reranker, the first
        :data:`~goat_core.filestore.search.RERANK_DEPTH` of them reordered by its scores
        (:meth:`_reranked`), then cut at ``limit``. ``complete`` keeps its meaning: every
        matching note is among the hits."""
        if self._reranker is None:
            return self._ranking(query, limit)
        import dataclasses

        from goat_core.filestore.search import RERANK_DEPTH

        results = self._reranked(query, self._ranking(query, max(limit, RERANK_DEPTH)))
        hits = results.hits[:limit]
        complete = results.complete and results.total <= len(hits)
        return dataclasses.replace(results, hits=hits, complete=complete)

    def _rerank_within(self, query: str, texts: list[str]) -> Any:
        """The reranker's scores, on a thread of its own, within
        :data:`~goat_core.filestore.search.RERANK_SECONDS`.

        :raises TimeoutError: no answer in time, or an earlier call still runs (a thread
            cannot be stopped: a hung reranker is asked again only once it returned).
        """
        import concurrent.futures

        from goat_core.filestore.search import RERANK_SECONDS

        running = self._rerank_running
        if running is not None and not running.done():
            raise TimeoutError(
                f"an earlier call has not returned after more than {RERANK_SECONDS:g} s"
            )
        model = self._reranker_open()
        if self._rerank_pool is None:
            self._rerank_pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="goat-rerank"
            )
        future = self._rerank_pool.submit(model.rerank, query, texts)
        self._rerank_running = future
        try:
            return future.result(timeout=RERANK_SECONDS)
        except concurrent.futures.TimeoutError:
            raise TimeoutError(f"no answer within {RERANK_SECONDS:g} s") from None

    def _load_model(
        self,
        kind: str,
        name: str,
        lookup: Callable[[str], Any] | None,
        cache_dir: Callable[[Path, str], Path],
    ) -> tuple[Any, Any]:
        """``(spec, model)`` of the embedder or reranker ``name`` (``kind``): the model built
        by the spec's factory from ``cache_dir(data_dir, name)``.

        :raises GoatError: not installed, or the factory's own typed error (weights missing
            or not matching). :raises ProviderUnavailable: no lookup in the context, or any
            other exception of the factory, naming the model.
        """
        from goat_core.errors import GoatError

        if lookup is None:  # the host hands its registry's lookup over; filestore loads none
            raise ProviderUnavailable(
                f"{kind} {name!r} cannot be looked up: this store's context has no "
                f"{kind}s (ProviderContext.{kind}s)"
            )
        spec = lookup(name)
        try:
            return spec, spec.factory(cache_dir(self.context.home.data_dir, name))
        except GoatError:
            raise
        except Exception as exc:  # a plugin's bug or its runtime's: typed, named
            raise ProviderUnavailable(
                f"{kind} {name!r} failed to load ({type(exc).__name__}: {exc})"
            ) from exc

    def _reranker_open(self) -> Reranker:
        """The store's reranker, loaded on first use (a failed load is tried again at the next
        recall).

        :raises GoatError: the reranker is not installed, or its weights are missing or do not
            match their sha256; any other exception of its factory is a
            ``ProviderUnavailable`` naming it.
        """
        if self._reranker_model is not None:
            return self._reranker_model
        from goat_core.contract import Reranker, reranker_cache_dir

        name = self._reranker
        assert name is not None
        _, model = self._load_model("reranker", name, self.context.rerankers, reranker_cache_dir)
        if not isinstance(model, Reranker):
            raise ProviderUnavailable(
                f"reranker {name!r} loaded a {type(model).__name__}, which has no rerank()"
            )
        self._reranker_model = model
        return model

    def _reranked(self, query: str, results: SearchResults) -> SearchResults:
        """``results`` with their first :data:`~goat_core.filestore.search.RERANK_DEPTH` hits
        reordered by the reranker's scores of each note's title and body
        (:func:`~goat_core.filestore.search.rerank_text`). When the reranker cannot be
        loaded, raises or answers something else than one finite score per note, the hits
        come back in their order, with the reason in ``degraded``; ``complete`` is unchanged
        (the same notes are shown)."""
        import dataclasses

        from goat_core.filestore.search import (
            RERANK_DEPTH,
            checked_scores,
            rerank_text,
            reranked,
        )

        top = results.hits[:RERANK_DEPTH]
        if len(top) < 2:  # nothing to reorder: no model loaded, nothing degraded
            return results
        texts = []
        for hit in top:
            note = self._hit_note(hit.path)
            texts.append(rerank_text(hit.title, note.body if note is not None else hit.snippet))
        try:
            scores = checked_scores(self._rerank_within(query, texts), len(texts))
        except Exception as exc:  # typed or not, it never loses the recall
            reason = (
                f"reranking with reranker {self._reranker!r} failed ({type(exc).__name__}: "
                f"{redact_all(str(exc))}); these are in their unreranked order"
            )
            return dataclasses.replace(results, degraded=(*results.degraded, reason))
        return dataclasses.replace(results, hits=reranked(results.hits, scores))

    def _ranking(self, query: str, limit: int) -> SearchResults:
        """The ranked hits of a recall before any reranking: keyword only (exactly the search
        index's answer) without an embedder; else keyword and vector rankings fused
        (:func:`goat_core.filestore.search.fuse`), each hit's snippet cut from its best
        matching chunk. A vector index found damaged by the search is re-embedded where it
        was damaged and searched again. When the embedder cannot be loaded or that repair
        fails, the keyword hits come back ``complete=False`` with the reason in
        ``degraded``."""
        index = self._index_open()
        if self._embedder is None:
            return index.search(query, limit=limit)
        import dataclasses
        import sqlite3

        from goat_core.errors import GoatError, IndexDamaged, StoreUnwritable
        from goat_core.filestore.search import FUSION, SearchHit, SearchResults, Snippet, fuse

        # the keyword side is read as deep as the limit asks (at least FUSION.depth), so each
        # keyword match is shown at a large enough limit; the vector side stays FUSION.depth.
        # Keyword scores are scaled by the best one alone (goat_core/filestore/search/
        # _hybrid.py), so a deeper read leaves the fused scores of the first FUSION.depth as
        # they were. Read first and outside the vector side's faults: its own errors are its.
        depth = max(FUSION.depth, limit)
        keyword = index.search(query, limit=depth, snippets=False)
        behind: tuple[str, ...] = ()
        try:
            vectors = self._vector_open()
            background = self.context.embed_in_background
            try:
                try:
                    self._sync_vectors(vectors, background)
                except IndexDamaged:
                    # found damaged while synced, and rebuilt: embed the notes again
                    self._vectors_synced = None
                    self._sync_vectors(vectors, background)
            except (sqlite3.OperationalError, StoreUnwritable) as exc:
                # a full or read-only GOAT home: rank with the vectors it holds, and say so
                behind = (
                    f"the vector index could not take the notes' latest changes ({exc}); "
                    "semantic ranking used the vectors it held before",
                )
            except EmbeddingElsewhere as exc:
                # a server (say) is embedding the store: never twice, never waiting minutes
                behind = (str(exc),)
            try:
                vhits = vectors.search(query, FUSION.depth)
            except IndexDamaged:
                # the damaged rows' notes were dropped: embed them again, then rank once more
                self._vectors_synced = None
                try:
                    self._sync_vectors(vectors, background)
                except EmbeddingElsewhere as exc:  # on the store's thread, or elsewhere
                    behind = (str(exc),)
                vhits = vectors.search(query, FUSION.depth)
            # a keyword hit with no vectors yet counts its keyword side on both (_hybrid.py)
            unembedded = {h.path for h in keyword.hits} - vectors.embedded(
                h.path for h in keyword.hits
            )
        except (GoatError, OSError, sqlite3.Error) as exc:
            results = index.search(query, limit=limit)
            return dataclasses.replace(
                results,
                complete=False,
                degraded=(
                    *results.degraded,
                    f"semantic recall with embedder {self._embedder!r} is unavailable "
                    f"({redact_all(str(exc))}); these are keyword results only",
                ),
            )
        by_kw = {h.path: h for h in keyword.hits}
        by_vec = {h.path: h for h in vhits}
        fused = fuse(
            [(h.path, h.score) for h in keyword.hits],
            [(h.path, h.score) for h in vhits],
            dataclasses.replace(FUSION, depth=depth),
            unembedded,
        )
        titles = index.titles(p for p, _ in fused[:limit] if p not in by_kw)
        hits: list[SearchHit] = []
        for path, score in fused[:limit]:
            note = self._hit_note(path)
            body = note.body if note is not None else ""
            cut: Snippet | None = None
            chunk = by_vec.get(path)
            if chunk is not None and chunk.end > chunk.start:
                text = body[chunk.start : chunk.end]
                cut = index.snippet(text, query) or Snippet(_chunk_head(text))
            if cut is None or not cut.text:
                cut = index.snippet(body, query) or Snippet(_chunk_head(body))
            title = by_kw[path].title if path in by_kw else titles.get(path, path)
            hits.append(SearchHit(path, title, score, cut.text, cut.spans))
        total = max(keyword.total, len(fused))
        degraded = (*keyword.degraded, *behind)
        # Complete means every keyword match and every note by meaning (up to FUSION.depth,
        # above the embedder's floor) is shown; keyword matches past the depth never reached
        # the fusion: not complete.
        complete = total <= len(hits) and keyword.total <= len(keyword.hits) and not degraded
        return SearchResults(hits=hits, total=total, complete=complete, degraded=degraded)

    # -- the operations a subclass implements (worker thread) ---------------------------------
    def _write(self, write: MemoryWrite, kind: str) -> Receipt:
        """A remember (``kind`` ``remember``) or feedback (``feedback``)."""
        raise NotImplementedError

    def _forget(self, ref: str) -> Receipt:
        raise NotImplementedError

    def _recall(self, query: str, limit: int) -> RecallResult:
        raise NotImplementedError

    def _list_pages(self, limit: int, cursor: str | None) -> PageList:
        raise NotImplementedError

    def _get_page(self, ref: str) -> Page:
        raise NotImplementedError

    def _link_map(self) -> LinkMap:
        raise NotImplementedError

    def _connections(self, ref: str) -> Connections:
        raise NotImplementedError

    def _reindex(self, progress: Callable[[int, int], None] | None) -> dict[str, int]:
        raise NotImplementedError

    # -- the async API --------------------------------------------------------------------------
    def _missing(self) -> str | None:
        """Why this store has no folder yet (its default folder could not be created on a full
        or read-only GOAT home; docs/design.md, Writes and outcomes), trying again first;
        ``None`` once the folder exists. Reads then answer as an empty store, ``degraded``
        with this reason; writes raise :class:`StoreUnwritable`."""
        if self._absent is not None:
            self._absent = _made(self.root)
        if self._absent is None:
            return None
        what = "the disk is full" if self._absent.reason == "full" else "it is read-only"
        return f"{self.noun} folder {self.root} could not be created ({what}); it holds no notes"

    def _no_folder(self) -> None:
        """:raises StoreUnwritable: for a write while :meth:`_missing`."""
        if self._missing() is not None and self._absent is not None:
            raise self._absent

    async def remember(self, write: MemoryWrite) -> Receipt:
        """Store a note, or append a dated entry to the note titled ``write.title`` (the
        subclass's docstring says where and how).

        :raises TooLarge: text over ``spec.max_input_chars``. :raises BadInput: empty text.
        :raises Conflict: a title differing only in case from an existing note, a note
            changed during the write, the store lock timing out.
        :raises Ambiguous: several notes carry the title.
        """
        return await self._writing(self._write, write, "remember")

    async def feedback(self, write: MemoryWrite) -> Receipt:
        """Append feedback to the page ``write.on`` (resolved like :meth:`get_page`), or store
        a new note of kind ``feedback``. Errors as :meth:`remember`, plus :class:`NotFound`."""
        return await self._writing(self._write, write, "feedback")

    async def forget(self, ref: str) -> Receipt:
        """Remove the note ``ref`` resolves to (like :meth:`get_page`); ``removed`` lists its
        path."""
        return await self._writing(self._forget, ref)

    def _strictly(self, fn: Callable[..., T], *args: Any, check: bool = True) -> T:
        """Run ``fn`` (on the worker) with the index syncing strictly: a full or read-only
        GOAT home raises :class:`StoreUnwritable` rather than leaving the index behind.
        ``check``: first commit a write to the index, so a write fails before it changes a
        note (a note written while the index then fails stays written; the index catches up
        at a later sync and reads say ``degraded`` until then)."""
        if getattr(self._index, "in_memory", False):  # the disk may have room now: try again
            self._close()
        index = self._index_open()
        if check:
            index.check_writable()
        index.strict = True
        try:
            return fn(*args)
        finally:
            index.strict = False

    async def _writing(self, fn: Callable[..., Receipt], *args: Any) -> Receipt:
        """Run a write on the worker; a full or read-only disk (the store's, or the GOAT
        home's under its index or lock) is :class:`StoreUnwritable`, raised before any note
        changes."""
        self._no_folder()
        try:
            return await self._worker.run(self._strictly, fn, *args)
        except OSError as exc:
            typed = StoreUnwritable.from_os_error(exc, getattr(exc, "filename", None) or self.root)
            if typed is None:
                raise
            raise typed from exc

    async def refresh(self, receipt: Receipt) -> Receipt:
        """A folder store writes at once and never queues, so it knows no operation id:
        refreshing one is :class:`NotFound` (docs/design.md, Writes and outcomes); a receipt
        without an operation id comes back unchanged."""
        if receipt.operation_id is not None:
            raise NotFound(
                f"no queued operation {receipt.operation_id!r} in {self.label()}: it writes at "
                "once and never queues"
            )
        return receipt

    async def recall(self, query: str, *, limit: int = 10) -> RecallResult:
        """Ranked full-text search (user text, never query syntax). ``complete`` is ``False``
        when more notes matched than ``limit``; ``degraded`` names unparsable notes (searched
        as body) and skipped entries.

        :raises BadInput: ``limit`` outside 1..100 or an empty query.
        """
        from goat_core.filestore._pages import check_recall_args

        check_recall_args(query, limit)
        if why := self._missing():
            return RecallResult(scope=self.scope.key, complete=False, degraded=(why,))
        return await self._worker.run(self._recall, query, limit)

    async def list_pages(self, *, limit: int = 50, cursor: str | None = None) -> PageList:
        """Notes ordered by path case-insensitively; ``next_cursor`` continues the listing.

        :raises BadInput: ``limit`` outside 1..1000 or a cursor this store did not issue.
        """
        from goat_core.filestore._pages import check_list_limit

        check_list_limit(limit)
        if why := self._missing():
            return PageList(complete=False, degraded=(why,))
        return await self._worker.run(self._list_pages, limit, cursor)

    async def get_page(self, ref: str) -> Page:
        if why := self._missing():
            raise NotFound(f"no page {ref!r} in {self.label()}: {why}")
        return await self._worker.run(self._get_page, ref)

    async def link_map(self) -> LinkMap:
        if why := self._missing():
            return LinkMap(degraded=(why,))
        return await self._worker.run(self._link_map)

    async def connections(self, ref: str) -> Connections:
        if why := self._missing():
            raise NotFound(f"no page {ref!r} in {self.label()}: {why}")
        return await self._worker.run(self._connections, ref)

    async def reindex(self, progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        """Bring the index in line with the folder; returns counts (``notes``, ``skipped``,
        ``unparsable``, what the subclass adds, and ``embedded`` with an embedder)."""
        self._no_folder()
        return await self._worker.run(self._strictly, self._reindex_all, progress, check=False)

    async def check(self) -> Health:
        if why := self._missing():
            from goat_core.contract import Tone

            return Health(ok=True, tone=Tone.WARN, reason=f"{why} (reads work, writes fail)")
        return await self._worker.run(self._check)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self._worker.run(self._close)
        finally:
            self._worker.close()
