"""The wiki provider: the LLM Wiki pattern on a folder of Markdown pages.

Layout (names configurable, see :class:`~goat_wiki.settings.WikiSettings`)::

    raw/                 immutable sources, each stored once, with .goat-wiki-manifest.json
    sources/ entities/ concepts/ syntheses/    page folders named by the schema
    schema.md  index.md  log.md                the provider's own files (frontmatter marker)

:class:`WikiProvider` is the operations only; each job lives in its own module, built on the
folder store skeleton of :class:`~goat_core.filestore.FolderStoreProvider`:

- :mod:`goat_wiki.layout`: the provider's own files, the raw folder, the schema, pages as read;
- :mod:`goat_wiki.journal`: ``index.md`` and ``log.md`` kept true through an intent journal;
- :mod:`goat_wiki.ingest`: raw sources (ingest, the manifest, reading a source);
- :mod:`goat_wiki.lint`: findings and deterministic fixes;
- :mod:`goat_wiki.pages`: page writes (write_page, remember, feedback, forget) and reads.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from goat_core.contract import MemoryWrite, ModelTool, PageSummary, ProviderOperation
from goat_core.errors import StoreUnwritable
from goat_wiki.layout import MARKER_KEY
from goat_wiki.lint import Finding, LintReport
from goat_wiki.pages import PageWrite, WikiPages

if TYPE_CHECKING:
    from goat_wiki.transfer import ImportTarget

__all__ = ["MARKER_KEY", "Finding", "LintReport", "PageWrite", "WikiProvider"]

T = TypeVar("T")


class WikiProvider(WikiPages):
    """One wiki for one scope.

    Besides the folder store operations (:class:`~goat_core.filestore.FolderStoreProvider`):
    :meth:`write_page`, :meth:`ingest`, :meth:`sources`, :meth:`read`, :meth:`lint`, the
    model tools and the operations of ``goat wiki``. Every write keeps the index line and a
    log entry true.

    :meth:`remember` with a title appends a dated entry (``## <YYYY-MM-DD HH:MM> UTC remember
    (<source>)``) to the page of that title, else creates it in the default folder; without
    one, a new page titled by the text's first words (``-2``... for a taken name). A title
    reserved for the provider's files is :class:`~goat_core.errors.BadInput`.
    :meth:`feedback` appends to page ``write.on`` or creates a page of type ``feedback``;
    :meth:`forget` removes a page (its index line goes, the log says so). :meth:`list_pages`
    lists pages only, never the provider's files or sources.

    :param context: scope, binding, validated :class:`~goat_wiki.settings.WikiSettings`, home.
    :param spec: the provider's declaration.
    :raises PathError: the root is ``/``, a home directory itself, or not a folder.
    :raises ScopeError: a forged, non-canonical Pen id.
    """

    async def write_page(
        self, write: PageWrite, *, visible: Callable[[PageSummary], bool] | None = None
    ) -> dict[str, Any]:
        """Write a new page or update one (etag-checked); index line and log entry follow.

        :returns: ``{"status": "stored", "op": "write"|"update", "page", "etag",
            "findings"}`` (the lint findings of that page, e.g. ``no-sources``).
        :raises BadInput: a folder the schema does not define (allowed ones named), the raw
            folder, a title reserved for the provider's files, an unknown source id, bad
            frontmatter, an empty body. :raises Conflict: a missing or outdated etag on
            update. :raises PathError: an unsafe title or folder.
        :raises Rejected: ``visible`` (a browse-policy check) hides the existing page of
            that title: nothing is written and nothing of that page is told.
        :raises StoreUnwritable: the GOAT home's search index is on a full or read-only disk
            (checked before any page changes; ``ingest`` too), or the wiki folder is (the
            path named, nothing written; ``ingest`` and ``lint --fix`` too).
        """
        return await self._typed(self._write_page, write, visible)

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
        return await self._typed(self._ingest, source, progress, inspect)

    async def _typed(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a wiki write on the worker, strictly: a full or read-only disk (the wiki
        folder, or the GOAT home) is :class:`~goat_core.errors.StoreUnwritable` naming the
        path, as for remember (docs/design.md, Writes and outcomes)."""
        try:
            return await self._worker.run(self._strictly, fn, *args)
        except OSError as exc:
            where = Path(os.fsdecode(exc.filename)) if exc.filename else self.root
            if where.name.endswith(".goat-tmp"):  # a write's temp file: name its folder
                where = where.parent
            typed = StoreUnwritable.from_os_error(exc, where)
            if typed is None:
                raise
            raise typed from exc

    async def sources(self) -> dict[str, Any]:
        """The manifest with the pages citing each source, and the uncited ones."""
        return await self._worker.run(self._source_status)

    async def read(self, ref: str) -> dict[str, Any]:
        """A page (``Page.to_json()``), a provider file by name (read-only), or a source."""
        return await self._worker.run(self._read_any, ref)

    async def lint(
        self,
        *,
        fix: bool = False,
        inspect: Callable[[MemoryWrite], MemoryWrite] | None = None,
        hidden: Collection[str] = (),
    ) -> LintReport:
        """Check the wiki; with ``fix`` apply the deterministic fixes (rebuild the index,
        qualify bare links, unescape alias pipes outside tables) and report the rest.

        :param inspect: the policy gate's ``inspect``: a page a fix rewrites passes
            ``goat_inspect_remember`` with its new text first (refused: left unfixed and
            reported). The index and log are the provider's record of pages already stored
            and are kept true without it.
        :param hidden: paths of pages a browse policy hides: a fix never rewrites one, nor
            qualifies a link into one's path; the report's ``degraded`` counts the fixes
            withheld.
        :raises StoreUnwritable: with ``fix``, the GOAT home's index cannot be written (checked
            before any page changes)."""
        if fix:
            return await self._typed(self._lint, fix, inspect, hidden)
        return await self._worker.run(self._lint, fix, inspect, hidden)

    def import_target(self) -> ImportTarget:
        """What an import needs of this wiki (:mod:`goat_wiki.transfer`)."""
        from goat_wiki.transfer import ImportTarget

        return ImportTarget(
            root=self.root,
            settings=self.settings,
            lock=self._lock,
            sync=self._sync,
            scan=self._scan,
            ensure_files=self._ensure_files,
            ensure_raw=self._ensure_raw,
            commit=self._commit,
            index_note=self._index_note,
            receipt=self._receipt,
        )

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
