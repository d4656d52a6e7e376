"""Plugins: loading them (the manager) and calling their hooks (the registry).

:func:`make_plugin_manager` builds a fault-isolated pluggy manager: the hook specs, the
built-in plugins of :mod:`goat_core.plugins.builtin` (``goat.scope``, ``goat.egress``), then
every allowed entry point of group :data:`ENTRY_POINT_GROUP`, each in isolation.
:class:`Registry` is the typed facade the host calls hooks through. Importing this package
loads no plugin.
"""

from __future__ import annotations

from goat_core.plugins._manager import (
    DEFAULT_PLUGINS,
    ENTRY_POINT_GROUP,
    GoatPluginManager,
    PluginSettings,
    load_entry_points,
    make_plugin_manager,
    register_plugin,
)
from goat_core.plugins._registry import Registry

__all__ = [
    "DEFAULT_PLUGINS",
    "ENTRY_POINT_GROUP",
    "GoatPluginManager",
    "PluginSettings",
    "Registry",
    "load_entry_points",
    "make_plugin_manager",
    "register_plugin",
]
