"""The HTML link map of ``goat map --html``; moved to :mod:`goat_core.cli._maphtml` (this
module re-exports it)."""

from __future__ import annotations

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
