"""Deprecated: ``goat_core.home`` is an old path; import from :mod:`goat_core.host` instead.

This module was part of the host before goat_core was laid out in packages (see
docs/architecture.md). It re-exports its old names unchanged and warns
(``DeprecationWarning``) when imported.
"""

import warnings

from goat_core.host._home import (
    APP_NAME,
    GoatHome,
)

__all__ = [
    "APP_NAME",
    "GoatHome",
]

__deprecated__ = "goat_core.host"

warnings.warn(
    "goat_core.home is deprecated; import from goat_core.host instead",
    DeprecationWarning,
    stacklevel=2,
)
