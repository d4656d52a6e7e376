"""Helpers shared by goat-wiki tests (a uniquely named module, importable from every test)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from goat_core.home import GoatHome
from goat_core.models import Binding, Scope
from goat_core.provider import ProviderContext

from goat_wiki.plugin import WikiSettings

MakeWiki = Callable[..., Any]


def make_context(
    home: GoatHome, root: Path | None = None, scope: Scope | None = None, **settings: Any
) -> ProviderContext:
    validated = WikiSettings(root=root, **settings)
    return ProviderContext(
        scope=scope or Scope.global_(),
        binding=Binding(
            id="default",
            provider="wiki",
            settings=validated.model_dump(mode="json", exclude_none=True),
        ),
        settings=validated,
        home=home,
    )


def write_tree(base: Path, files: dict[str, str]) -> Path:
    """Create ``files`` (relative path -> text) under ``base``; returns ``base``."""
    for rel, text in files.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return base
