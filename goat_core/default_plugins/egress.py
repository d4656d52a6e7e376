"""Built-in egress rule; moved to :mod:`goat_core.plugins.builtin._egress`."""

from __future__ import annotations

from goat_core.plugins.builtin._egress import goat_authorize_egress

__all__ = ["goat_authorize_egress"]
