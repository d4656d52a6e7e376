"""Deprecated: ``goat_core.manager`` is an old path; import from :mod:`goat_core.plugins`
instead.

This module was plugin loading, before goat_core was laid out in packages. It re-exports its old
names unchanged and warns (``DeprecationWarning``) when imported.
"""

from __future__ import annotations

import warnings

from goat_core.plugins._manager import (
    DEFAULT_PLUGINS,
    ENTRY_POINT_GROUP,
    GoatPluginManager,
    PluginSettings,
    make_plugin_manager,
)
from goat_core.plugins._manager import load_entry_points as load_entry_points
from goat_core.plugins._manager import register_plugin as register_plugin

__all__ = [
    "DEFAULT_PLUGINS",
    "ENTRY_POINT_GROUP",
    "GoatPluginManager",
    "PluginSettings",
    "make_plugin_manager",
]

__deprecated__ = "goat_core.plugins"

warnings.warn(
    "goat_core.manager is deprecated; import from goat_core.plugins instead",
    DeprecationWarning,
    stacklevel=2,
)
