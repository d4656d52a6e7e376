"""Telling a full or read-only disk apart from other failures of the index's file: the
typed :class:`~goat_core.errors.StoreUnwritable` for an error SQLite or the OS raised while
writing it (:func:`write_fault`), and why a folder cannot be written now
(:func:`unwritable_reason`, which ``goat check`` reports)."""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from goat_core.errors import StoreUnwritable


def _is_corrupt(exc: BaseException) -> bool:
    """Only SQLite's own corruption verdicts count; busy, locked or I/O errors never do."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    msg = str(exc).lower()
    # FTS5 reports a damaged structure record as its constructor failing
    return "malformed" in msg or "not a database" in msg or "vtable constructor failed" in msg


def _is_busy(exc: BaseException) -> bool:
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    msg = str(exc).lower()
    return "locked" in msg or "busy" in msg


_FULL = "the disk is full"
_READ_ONLY = "it is read-only"


def unwritable_reason(path: Path) -> str | None:
    """``"full"`` or ``"read-only"`` when nothing can be written under ``path`` now (its
    nearest existing folder: on a file system mounted read-only, without write permission,
    or with no space left for this user), else ``None``."""
    probe = Path(path)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        vfs = os.statvfs(probe)
    except OSError:
        return None
    if vfs.f_flag & os.ST_RDONLY or not os.access(probe, os.W_OK):
        return "read-only"
    if vfs.f_bavail == 0:
        return "full"
    return None


def write_fault(exc: BaseException, path: Path, what: str) -> StoreUnwritable | None:
    """The :class:`StoreUnwritable` for ``exc`` raised while writing ``path`` (``what``
    names it, e.g. ``"the search index"``), or ``None`` when ``exc`` is not a full or
    read-only disk.

    SQLite says ``database or disk is full`` or ``attempt to write a readonly database``;
    on a full disk it may only say ``disk I/O error`` or ``unable to open database file``
    (creating its shared-memory file failed), so for those the folder is looked at
    (:func:`unwritable_reason`)."""
    reason: str | None = None
    detail = str(exc)
    if isinstance(exc, OSError):
        if exc.errno in StoreUnwritable.FULL_ERRNOS:
            reason = "full"
        elif exc.errno in StoreUnwritable.READ_ONLY_ERRNOS or isinstance(exc, PermissionError):
            reason = "read-only"
        detail = exc.strerror or errno.errorcode.get(exc.errno or 0, type(exc).__name__)
    elif isinstance(exc, sqlite3.OperationalError):
        msg = detail.lower()
        if "disk is full" in msg:
            reason = "full"
        elif "readonly" in msg or "read-only" in msg:
            reason = "read-only"
        elif "disk i/o error" in msg or "unable to open database file" in msg:
            reason = unwritable_reason(path.parent)
    if reason is None:
        return None
    return StoreUnwritable(
        f"cannot write {what} {path}: {_FULL if reason == 'full' else _READ_ONLY} ({detail});"
        " nothing was stored",
        path=str(path),
        reason=reason,
    )


def open_read_only(
    db_path: Path, timeout_s: float, schema_version: str, fault: StoreUnwritable
) -> sqlite3.Connection:
    """A connection reading the index at ``db_path`` as it is, for a disk that cannot be
    written (``fault``): through SQLite's locks where its shared-memory file can be used,
    else as an immutable file (no writer can work on that disk either).

    :raises StoreUnwritable: ``fault``, when the file cannot be read so or holds another
        schema than ``schema_version`` (it cannot be rebuilt there).
    """
    uri = Path(os.path.abspath(db_path)).as_uri()
    for mode in ("mode=ro", "immutable=1"):
        conn = sqlite3.connect(
            f"{uri}?{mode}",
            uri=True,
            timeout=timeout_s,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            got = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.Error:
            conn.close()
            continue
        if got is None or got[0] != schema_version:
            conn.close()
            raise fault
        return conn
    raise fault


def behind_reason(index: Any) -> str:
    """The ``degraded`` line of a read while ``index.behind`` (a
    :class:`~goat_core.filestore.search.SearchIndex`) is set; ``""`` when it is not."""
    fault = index.behind
    if fault is None:
        return ""
    what = "is full" if fault.reason == "full" else "is read-only"
    if getattr(index, "in_memory", False):
        return (
            f"the search index {index.db_path} could not be created (its disk {what}); "
            "answered from a scan of the notes, indexed in memory for this read"
        )
    return (
        f"the search index {index.db_path} could not take the notes' latest changes (its disk"
        f" {what}); answered from what it held before, which may miss or misrank changed notes"
    )


@contextlib.contextmanager
def write_faults(db: sqlite3.Connection, path: Path) -> Iterator[None]:
    """Around a write transaction on ``db`` (the index at ``path``): an error saying its disk
    is full or read-only rolls back and becomes :class:`StoreUnwritable`."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        fault = write_fault(exc, path, "the search index")
        if fault is None:
            raise
        with contextlib.suppress(sqlite3.Error):
            if db.in_transaction:
                db.rollback()
        raise fault from exc
