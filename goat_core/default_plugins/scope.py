"""Deprecated: ``goat_core.default_plugins.scope`` is an old path; the built-in scope resolution
is now ``goat_core.plugins.builtin._scope``.

The built-in plugins are registered by :func:`goat_core.plugins.make_plugin_manager` and are
not meant to be imported. This module re-exports its old names unchanged and warns
(``DeprecationWarning``) when imported.
"""

from __future__ import annotations

import warnings

from goat_core.plugins.builtin._scope import goat_resolve_scope

__all__ = ["goat_resolve_scope"]

__deprecated__ = "goat_core.plugins.builtin._scope"

warnings.warn(
    "goat_core.default_plugins.scope is deprecated: the built-in scope resolution is "
    "goat_core.plugins.builtin._scope, registered by goat_core.plugins.make_plugin_manager",
    DeprecationWarning,
    stacklevel=2,
)
