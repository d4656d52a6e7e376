"""Deprecated: ``goat_core.links`` is an old path; import from :mod:`goat_core.filestore`
instead.

This module was the link parser and resolver, before goat_core was laid out in packages. It re-
exports its old names unchanged and warns (``DeprecationWarning``) when imported.
"""

import warnings

from goat_core.filestore import (
    LinkIndex,
    LinkResolver,
    ParsedLink,
    build_link_map,
    connections,
    parse_links,
)

__all__ = [
    "LinkIndex",
    "LinkResolver",
    "ParsedLink",
    "build_link_map",
    "connections",
    "parse_links",
]

__deprecated__ = "goat_core.filestore"

warnings.warn(
    "goat_core.links is deprecated; import from goat_core.filestore instead",
    DeprecationWarning,
    stacklevel=2,
)
