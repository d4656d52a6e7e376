"""Deprecated: ``goat_core.maphtml`` is an old path with no public replacement.

This module was the HTML link map of ``goat map --html``, before goat_core was laid out in
packages. The map is now internal to the command line (``goat_core.cli._maphtml``); this module
re-exports its old names unchanged and warns (``DeprecationWarning``) when imported.
"""

from __future__ import annotations

import warnings

from goat_core.cli._maphtml import (
    ATTACHMENTS_SHOWN_UP_TO,
    map_data,
    missing_link_kind,
    missing_link_target,
    missing_target,
    render_map_html,
)

__all__ = [
    "ATTACHMENTS_SHOWN_UP_TO",
    "map_data",
    "missing_link_kind",
    "missing_link_target",
    "missing_target",
    "render_map_html",
]

__deprecated__ = "goat_core.cli._maphtml"

warnings.warn(
    "goat_core.maphtml is deprecated: the HTML map is internal to 'goat map --html' "
    "(goat_core.cli._maphtml)",
    DeprecationWarning,
    stacklevel=2,
)
