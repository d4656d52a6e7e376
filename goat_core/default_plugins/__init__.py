"""Deprecated: ``goat_core.default_plugins`` is an old path; import from
:mod:`goat_core.plugins.builtin` instead.

This module was the package of the built-in plugins, before goat_core was laid out in packages.
It re-exports its old names unchanged and warns (``DeprecationWarning``) when imported.
"""

import warnings

__all__: list[str] = []

__deprecated__ = "goat_core.plugins.builtin"

warnings.warn(
    "goat_core.default_plugins is deprecated; import from goat_core.plugins.builtin instead",
    DeprecationWarning,
    stacklevel=2,
)
