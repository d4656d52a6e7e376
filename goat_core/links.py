"""Former home of the links helpers, now in :mod:`goat_core.filestore`: re-exports the names
this module had (import them from :mod:`goat_core.filestore`)."""

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
