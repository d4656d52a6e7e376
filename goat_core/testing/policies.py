"""Policy plugins for testing that every surface of a provider keeps the one policy path
(docs/design.md, Policy path): register one next to your provider and drive each of its
tools and commands.

- :class:`RefuseWrites` refuses every write (``goat_inspect_remember`` raises
  :class:`~goat_core.errors.Rejected`) and records the exact texts it was shown in
  :attr:`RefuseWrites.seen`.
- :class:`HideReads` empties every recall (``goat_filter_recall``) and hides every page
  (``goat_filter_browse``).
- :class:`HidePages` hides the pages it names, from browsing and from recall, and lets
  every other page through.
- :class:`HideByName` hides from browsing the pages with one title or file name, never by
  id (for testing that a decoy ``id`` is no way onto a hidden page).

Register them with ``goat_core.plugins.register_plugin(registry.pm, RefuseWrites(), "policy")``.
"""

from __future__ import annotations

from collections.abc import Sequence

from goat_core.contract import MemoryWrite, PageSummary, RecallResult, Scope
from goat_core.errors import Rejected
from goat_core.hookspecs import hookimpl

#: The reason :class:`RefuseWrites` gives.
REFUSED = "writes are off"


class RefuseWrites:
    """Refuses every write; :attr:`seen` holds each text it was asked about, in order."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl
    def goat_inspect_remember(self, scope: Scope, write: MemoryWrite) -> MemoryWrite | None:
        self.seen.append(write.text)
        raise Rejected(REFUSED)


class HideReads:
    """Empties every recall and hides every page."""

    @hookimpl
    def goat_filter_recall(
        self, scope: Scope, query: str, result: RecallResult
    ) -> RecallResult | None:
        return result.model_copy(update={"items": ()})

    @hookimpl
    def goat_filter_browse(
        self, scope: Scope, items: Sequence[PageSummary]
    ) -> Sequence[PageSummary] | None:
        return []


class HidePages:
    """Hides the pages whose id, path or title is one of ``names`` (case-insensitive; a path
    with or without ``.md``): browsing leaves them out and recall drops their items."""

    def __init__(self, *names: str) -> None:
        self.names = {n.casefold().removesuffix(".md") for n in names}

    def hides(self, *keys: str | None) -> bool:
        """Whether a page known by ``keys`` (id, path, title) is hidden."""
        return any(k is not None and k.casefold().removesuffix(".md") in self.names for k in keys)

    @hookimpl
    def goat_filter_recall(
        self, scope: Scope, query: str, result: RecallResult
    ) -> RecallResult | None:
        kept = tuple(i for i in result.items if not self.hides(i.id, i.path, i.title))
        return result.model_copy(update={"items": kept})

    @hookimpl
    def goat_filter_browse(
        self, scope: Scope, items: Sequence[PageSummary]
    ) -> Sequence[PageSummary] | None:
        return [p for p in items if not self.hides(p.id, p.path, p.title)]


class HideByName:
    """Hides from browsing the pages whose title or file name (without ``.md``) is ``name``,
    case-insensitively, and never by id: a page whose frontmatter ``id`` equals the name
    stays visible, so a test can check that such a decoy is no way onto the hidden page."""

    def __init__(self, name: str) -> None:
        self.name = name.casefold()

    @hookimpl
    def goat_filter_browse(
        self, scope: Scope, items: Sequence[PageSummary]
    ) -> Sequence[PageSummary] | None:
        def stem(p: PageSummary) -> str:
            return (p.path or "").rsplit("/", 1)[-1].removesuffix(".md").casefold()

        return [p for p in items if self.name not in {p.title.casefold(), stem(p)}]
