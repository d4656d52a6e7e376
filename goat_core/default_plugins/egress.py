"""Deprecated: ``goat_core.default_plugins.egress`` is an old path; the built-in egress rule
is now ``goat_core.plugins.builtin._egress``.

The built-in plugins are registered by :func:`goat_core.plugins.make_plugin_manager` and are
not meant to be imported. This module re-exports its old names unchanged and warns
(``DeprecationWarning``) when imported.
"""

from __future__ import annotations

import warnings

from goat_core.plugins.builtin._egress import goat_authorize_egress

__all__ = ["goat_authorize_egress"]

__deprecated__ = "goat_core.plugins.builtin._egress"

warnings.warn(
    "goat_core.default_plugins.egress is deprecated: the built-in egress rule is "
    "goat_core.plugins.builtin._egress, registered by goat_core.plugins.make_plugin_manager",
    DeprecationWarning,
    stacklevel=2,
)
