"""Helpers shared by goat-wiki tests (a uniquely named module, importable from every test)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

MakeWiki = Callable[..., Any]
"""``wiki(root=None, scope=None, **settings) -> WikiProvider`` (the ``wiki`` fixture)."""


def write_tree(base: Path, files: dict[str, str]) -> Path:
    """Create ``files`` (relative path -> text) under ``base``; returns ``base``."""
    for rel, text in files.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return base
