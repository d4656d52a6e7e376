"""The built-in plugins, registered by :func:`goat_core.plugins.make_plugin_manager` before
any entry point (their hooks are ``trylast``, so a third-party plugin's answer comes first):

- ``goat.scope`` (:mod:`goat_core.plugins.builtin._scope`): scope resolution;
- ``goat.egress`` (:mod:`goat_core.plugins.builtin._egress`): allow only URLs a binding
  was bound to.

Each module is a plugin object in itself; nothing is imported here, so importing the package
loads no plugin.
"""

from __future__ import annotations

__all__: list[str] = []
