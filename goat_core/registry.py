"""The typed facade over the plugin manager; moved to :mod:`goat_core.plugins` (this
module re-exports it)."""

from __future__ import annotations

from goat_core.plugins._registry import Registry

__all__ = ["Registry"]
