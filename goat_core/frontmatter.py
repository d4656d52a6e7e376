"""Deprecated: ``goat_core.frontmatter`` is an old path; import from :mod:`goat_core.filestore`
instead.

This module was the frontmatter helpers, before goat_core was laid out in packages. It re-
exports its old names unchanged and warns (``DeprecationWarning``) when imported.
"""

import warnings

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

__deprecated__ = "goat_core.filestore"

warnings.warn(
    "goat_core.frontmatter is deprecated; import from goat_core.filestore instead",
    DeprecationWarning,
    stacklevel=2,
)
