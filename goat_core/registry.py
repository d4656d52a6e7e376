"""Deprecated: ``goat_core.registry`` is an old path; import from :mod:`goat_core.plugins`
instead.

This module was the typed facade over the plugin manager, before goat_core was laid out in
packages. It re-exports its old names unchanged and warns (``DeprecationWarning``) when
imported.
"""

from __future__ import annotations

import warnings

from goat_core.plugins._registry import Registry

__all__ = ["Registry"]

__deprecated__ = "goat_core.plugins"

warnings.warn(
    "goat_core.registry is deprecated; import from goat_core.plugins instead",
    DeprecationWarning,
    stacklevel=2,
)
