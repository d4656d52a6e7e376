"""Helpers shared by goat-wiki tests (a uniquely named module, importable from every test)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from goat_core.contract import MemoryWrite, SyncProvider

from goat_wiki.provider import LintReport, PageWrite, WikiProvider

MakeWiki = Callable[..., Any]


class SyncWiki(SyncProvider):
    """The blocking facade of a wiki: the provider's methods, and the wiki's own."""

    @property
    def wiki(self) -> WikiProvider:
        assert isinstance(self.provider, WikiProvider)
        return self.provider

    @property
    def root(self) -> Path:
        return self.wiki.root

    def write_page(self, write: PageWrite, **kwargs: Any) -> dict[str, Any]:
        return self.call(self.wiki.write_page, write, **kwargs)

    def ingest(
        self,
        source: Path,
        progress: Callable[[int, int], None] | None = None,
        *,
        inspect: Callable[[MemoryWrite], MemoryWrite] | None = None,
    ) -> dict[str, Any]:
        return self.call(self.wiki.ingest, source, progress, inspect=inspect)

    def sources(self) -> dict[str, Any]:
        return self.call(self.wiki.sources)

    def read(self, ref: str) -> dict[str, Any]:
        return self.call(self.wiki.read, ref)

    def lint(
        self, *, fix: bool = False, inspect: Callable[[MemoryWrite], MemoryWrite] | None = None
    ) -> LintReport:
        return self.call(self.wiki.lint, fix=fix, inspect=inspect)


def write_tree(base: Path, files: dict[str, str]) -> Path:
    """Create ``files`` (relative path -> text) under ``base``; returns ``base``."""
    for rel, text in files.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return base
