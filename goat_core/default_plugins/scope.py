"""Built-in scope resolution; moved to :mod:`goat_core.plugins.builtin._scope`."""

from __future__ import annotations

from goat_core.plugins.builtin._scope import goat_resolve_scope

__all__ = ["goat_resolve_scope"]
