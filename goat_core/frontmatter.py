"""Former home of the frontmatter helpers, now in :mod:`goat_core.filestore`: re-exports the names
this module had (import them from :mod:`goat_core.filestore`)."""

from goat_core.filestore import (
    FrontmatterError,
    ParsedNote,
    append_entry,
    format_scalar,
    jsonable,
    parse_note,
    render_note,
    set_keys,
)

__all__ = [
    "FrontmatterError",
    "ParsedNote",
    "append_entry",
    "format_scalar",
    "jsonable",
    "parse_note",
    "render_note",
    "set_keys",
]
