"""Former home of the files helpers, now in :mod:`goat_core.filestore`: re-exports the names
this module had (import them from :mod:`goat_core.filestore`)."""

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
