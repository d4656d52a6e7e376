"""Deprecated: ``goat_core.files`` is an old path; import from :mod:`goat_core.filestore`
instead.

This module was the file helpers of file-based stores, before goat_core was laid out in
packages. It re-exports its old names unchanged and warns (``DeprecationWarning``) when
imported.
"""

import warnings

from goat_core.filestore import (
    MISSING_ETAG,
    RESERVED_NAMES,
    NoteFile,
    StoreLock,
    WalkResult,
    atomic_write,
    contain,
    current_etag,
    etag,
    fsync_dir,
    is_reserved_name,
    safe_title_filename,
    validate_store_root,
    walk_notes,
)

__all__ = [
    "MISSING_ETAG",
    "RESERVED_NAMES",
    "NoteFile",
    "StoreLock",
    "WalkResult",
    "atomic_write",
    "contain",
    "current_etag",
    "etag",
    "fsync_dir",
    "is_reserved_name",
    "safe_title_filename",
    "validate_store_root",
    "walk_notes",
]

__deprecated__ = "goat_core.filestore"

warnings.warn(
    "goat_core.files is deprecated; import from goat_core.filestore instead",
    DeprecationWarning,
    stacklevel=2,
)
