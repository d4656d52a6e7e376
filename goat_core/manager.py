"""Plugin loading; moved to :mod:`goat_core.plugins` (this module re-exports it)."""

from __future__ import annotations

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
