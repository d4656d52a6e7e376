"""Crash-safe writes, containment and cross-process locks for files.

The file primitives every layer shares: the folder store and its providers, the host's
``memory.json`` and credential file, the CLI's map, a remote provider's local state.

- **Containment**: :func:`contain` turns a user reference (``"Folder/Note.md"``) into a path
  inside a root after resolving symlinks, or raises :class:`~goat_core.errors.PathError`
  whose ``rule`` names what was broken (``parent-traversal``, ``absolute-path``,
  ``backslash`` (Windows), ``nul-byte``, ``reserved-name``, ``empty-segment``,
  ``dot-segment``, ``empty-path``, ``symlink-escape``).
- **Atomic writes**: :func:`atomic_write` writes a dot-prefixed temp file in the same folder,
  keeps the file's permissions, fsyncs file and folder, re-checks the current content hash
  just before the rename (editors take no lock) and renames; nothing partial is ever left.
  :func:`write_owner_only` is the same for a file only its owner may read (``0600``).
- **Locking**: :class:`StoreLock`, a cross-process lock on a file under the GOAT home
  (:meth:`goat_core.contract.GoatHome.lock_path`), never on a note or the index.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from goat_core.errors import Conflict, PathError

if TYPE_CHECKING:
    import filelock

__all__ = [
    "MISSING_ETAG",
    "RESERVED_NAMES",
    "TEMP_SUFFIX",
    "StoreLock",
    "atomic_write",
    "contain",
    "current_etag",
    "etag",
    "fsync_dir",
    "is_reserved_name",
    "is_utf8",
    "rename_exchange_supported",
    "shown_name",
    "write_owner_only",
]

#: Windows device names, reserved with any extension (``con.md``, ``LPT1.txt``).
RESERVED_NAMES = frozenset(
    {"CON", "PRN", "AUX", "NUL"}
    | {f"COM{i}" for i in range(1, 10)}
    | {f"LPT{i}" for i in range(1, 10)}
)

#: The etag of a file that does not exist; pass it as ``expected_etag`` to create only.
MISSING_ETAG = "missing"

#: On POSIX a name may hold ``:``, ``\\`` and ``%`` (``x:y.md``, ``a\\b.md``, ``50%2e.md``
#: are ordinary files, never a drive, a separator or an encoding); on Windows the first two
#: are not names.
_WINDOWS = os.name == "nt"
_DRIVE = re.compile(r"^[A-Za-z]:")
#: The suffix of :func:`atomic_write`'s temp files (``.<name>.<pid>-<hex>.goat-tmp``).
TEMP_SUFFIX = ".goat-tmp"


def etag(data: bytes) -> str:
    """The content hash used as an etag: the first 32 hex digits of SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()[:32]


def current_etag(path: Path) -> str:
    """The etag of the file at ``path`` now, or :data:`MISSING_ETAG` when it does not exist."""
    try:
        return etag(Path(path).read_bytes())
    except FileNotFoundError:
        return MISSING_ETAG


def is_reserved_name(name: str) -> bool:
    """Whether ``name`` is a Windows device name, with any extension (``NUL.md``, ``com1``)."""
    stem = name.split(".", 1)[0].rstrip(" ").upper()
    return stem in RESERVED_NAMES


def _inside(real_root: str, candidate: str) -> bool:
    return candidate == real_root or candidate.startswith(real_root.rstrip(os.sep) + os.sep)


def contain(root: Path, ref: str) -> Path:
    """Resolve a store-relative reference to a path inside ``root``, or refuse it.

    Checks, in order, each raising :class:`PathError` with ``rule`` set:
    ``empty-path`` (``""``), ``nul-byte`` (``"a\\x00b"``), ``backslash`` (``"a\\\\b"``, on
    Windows only), ``absolute-path`` (``/etc/passwd``; ``C:x`` on Windows only: elsewhere
    ``x:y.md`` is a file name), ``empty-segment`` (``a//b``, a trailing ``/``),
    ``dot-segment`` (``./a``), ``parent-traversal`` (``..`` segments), ``reserved-name``
    (``CON``, ``nul.md``, ``LPT1.txt``: Windows device names with any extension). Then the
    path is resolved with every symlink followed and must stay inside the real root
    (``symlink-escape``). The file need not exist.

    :param root: the store root (validated with
        :func:`~goat_core.filestore.validate_store_root` by the caller).
    :param ref: a POSIX-style relative path as a user or a link wrote it.
    :returns: the resolved absolute path.
    """
    if ref == "":
        raise PathError("empty path", rule="empty-path")
    if "\x00" in ref:
        raise PathError(f"path {ref!r} contains a NUL byte", rule="nul-byte")
    if _WINDOWS and "\\" in ref:
        raise PathError(
            f"path {ref!r} contains a backslash; use '/' between folders", rule="backslash"
        )
    if ref.startswith("/") or (_WINDOWS and _DRIVE.match(ref)):
        raise PathError(
            f"path {ref!r} is absolute; paths are relative to the store", rule="absolute-path"
        )
    segments = ref.split("/")
    for seg in segments:
        if seg == "":
            raise PathError(f"path {ref!r} has an empty segment", rule="empty-segment")
        if seg == ".":
            raise PathError(f"path {ref!r} has a '.' segment", rule="dot-segment")
        if seg == "..":
            raise PathError(f"path {ref!r} climbs out with '..'", rule="parent-traversal")
        if is_reserved_name(seg):
            raise PathError(
                f"path {ref!r} uses the reserved device name {seg!r}", rule="reserved-name"
            )
    real_root = os.path.realpath(root)
    resolved = os.path.realpath(os.path.join(real_root, *segments))
    if not _inside(real_root, resolved):
        raise PathError(
            f"path {ref!r} resolves outside the store through a symlink", rule="symlink-escape"
        )
    return Path(resolved)


def fsync_dir(folder: Path) -> None:
    """fsync a folder so a rename or unlink in it is durable (a no-op where unsupported)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # platforms without directory handles
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


#: ``renameat2`` flags (``linux/fs.h``).
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
#: ``renameat2`` system call numbers, for a libc without the wrapper (glibc < 2.28).
_SYS_RENAMEAT2 = {"x86_64": 316, "aarch64": 276, "armv7l": 382, "ppc64le": 357, "s390x": 347}
_AT_FDCWD = -100
_renameat2_fn: object = None  # None: not looked up yet; False: unavailable


def _renameat2_call() -> Callable[[bytes, bytes, int], int] | None:
    """A callable ``(old, new, flags) -> 0 | -1`` for Linux ``renameat2``, or ``None``.

    Python 3.11 has no binding (``os.rename``/``os.replace`` are plain ``rename``), so this
    goes through :mod:`ctypes`: glibc's ``renameat2`` wrapper (2.28+), else the raw system
    call by number on the architectures listed in :data:`_SYS_RENAMEAT2`.
    """
    global _renameat2_fn
    if _renameat2_fn is None:
        _renameat2_fn = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes
                import platform

                libc = ctypes.CDLL(None, use_errno=True)
                wrapper = getattr(libc, "renameat2", None)
                if wrapper is not None:
                    wrapper.argtypes = [
                        ctypes.c_int,
                        ctypes.c_char_p,
                        ctypes.c_int,
                        ctypes.c_char_p,
                        ctypes.c_uint,
                    ]
                    wrapper.restype = ctypes.c_int

                    def call(old: bytes, new: bytes, flags: int) -> int:
                        return int(wrapper(_AT_FDCWD, old, _AT_FDCWD, new, flags))

                    _renameat2_fn = call
                else:
                    number = _SYS_RENAMEAT2.get(platform.machine())
                    if number is not None:
                        syscall = libc.syscall
                        syscall.restype = ctypes.c_long

                        def call(old: bytes, new: bytes, flags: int) -> int:
                            return int(
                                syscall(
                                    ctypes.c_long(number),
                                    ctypes.c_int(_AT_FDCWD),
                                    ctypes.c_char_p(old),
                                    ctypes.c_int(_AT_FDCWD),
                                    ctypes.c_char_p(new),
                                    ctypes.c_uint(flags),
                                )
                            )

                        _renameat2_fn = call
            except (OSError, AttributeError):  # no libc to load
                _renameat2_fn = False
    return _renameat2_fn or None  # type: ignore[return-value]


def _renameat2(old: Path, new: Path, flags: int) -> bool:
    """``renameat2(old, new, flags)``; ``False`` when this system or file system cannot
    (no such call, ``EINVAL``/``ENOSYS``/``ENOTSUP``), :class:`OSError` for a real failure
    (``EEXIST`` for ``RENAME_NOREPLACE`` onto an existing file)."""
    import ctypes

    call = _renameat2_call()
    if call is None:
        return False
    if call(os.fsencode(old), os.fsencode(new), flags) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(new))


def rename_exchange_supported(folder: Path) -> bool:
    """Whether :func:`atomic_write` verifies by ``RENAME_EXCHANGE`` in ``folder`` (Linux, on a
    file system that implements it: ext4, xfs, btrfs, tmpfs...; not some FUSE or network
    mounts). Creates and removes two dot-files there."""
    a = Path(folder) / f".goat-xchg-{secrets.token_hex(4)}{TEMP_SUFFIX}"
    b = Path(folder) / f".goat-xchg-{secrets.token_hex(4)}{TEMP_SUFFIX}"
    try:
        a.write_bytes(b"a")
        b.write_bytes(b"b")
        return _renameat2(a, b, _RENAME_EXCHANGE)
    finally:
        for p in (a, b):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()


def _conflict(target: Path, expected: str, now: str) -> Conflict:
    what = (
        "was created"
        if expected == MISSING_ETAG
        else ("was deleted" if now == MISSING_ETAG else "changed")
    )
    return Conflict(
        f"{target.name} {what} since it was read (etag {expected} -> {now}); nothing was written",
        path=str(target),
    )


def _exchange_verified(tmp: Path, target: Path, expected_etag: str, new_etag: str) -> bool:
    """Swap ``tmp`` (the new content) and ``target`` with ``RENAME_EXCHANGE``, then check the
    file swapped out: it must be the one read (``expected_etag``). If it is not, an external
    writer (an editor's temp file and rename) replaced the note since it was read: swap back,
    so the editor's bytes are in the note again, and raise :class:`Conflict`.

    Returns ``False`` (nothing done) where the exchange is unsupported. On return ``True``,
    ``tmp`` holds the old content and the caller removes it.
    """
    try:
        if not _renameat2(tmp, target, _RENAME_EXCHANGE):
            return False
    except FileNotFoundError:  # the note is gone: nothing to swap with
        raise _conflict(target, expected_etag, MISSING_ETAG) from None
    swapped_out = current_etag(tmp)
    if swapped_out == expected_etag:
        return True
    # Someone else's bytes were in the note: put them back. What comes out must be ours;
    # if a third write replaced ours within these microseconds, it is newer than the bytes
    # we took out, so it goes back in place and the older external version, which that
    # write superseded as it would have without GOAT, is dropped.
    _renameat2(tmp, target, _RENAME_EXCHANGE)
    if current_etag(tmp) != new_etag:
        _renameat2(tmp, target, _RENAME_EXCHANGE)
    raise _conflict(target, expected_etag, swapped_out)


def atomic_write(
    path: Path, data: bytes, *, expected_etag: str | None = None, mode: int | None = None
) -> str:
    """Replace (or create) ``path`` with ``data`` atomically; returns the new etag.

    Steps: a dot-prefixed temp file (``.<name>.<pid>-<random>.goat-tmp``, the writer's process
    id in its name so :func:`sweep_temp_files` can tell a dead writer's) in the same folder is
    created with the note's current permissions (a new file gets ``0644`` minus the umask, or
    ``mode``), written and fsynced; then it is put in place and the folder is fsynced. A
    symlinked note is written through to its target. On any failure the temp file is removed
    and the note is untouched.

    How the note is put in place, and what holds against an external writer that takes no
    lock (an editor writing its own temp file and renaming it over the note):

    - ``expected_etag`` an etag, on Linux where the file system supports it (ext4, xfs,
      btrfs, tmpfs): ``renameat2(RENAME_EXCHANGE)`` swaps the temp file and the note in one
      step, then the file swapped out is hashed. If it is not the content that was read, an
      editor's rename landed after the read: the two are swapped back, so the editor's bytes
      are the note again, and :class:`Conflict` is raised. An external edit is never
      destroyed: either it landed before the swap (Conflict, its bytes in place) or after it
      (it replaces this write, as any later save does). Verified by
      ``benchmarks/bench_edit_race.py``.
    - Every write is read back after its rename: a file that no longer holds it (a save
      that landed right after) raises :class:`Conflict`, so no receipt says ``stored`` for
      bytes already replaced.
    - ``expected_etag`` :data:`MISSING_ETAG` (create only): ``renameat2(RENAME_NOREPLACE)``
      on Linux, else a hard link, which fail if the name exists: a note an editor created
      meanwhile is never replaced.
    - Elsewhere (macOS, Windows, BSD; or a Linux file system without ``RENAME_EXCHANGE``,
      such as some FUSE and network mounts): the current content hash is compared just before
      :func:`os.replace`. An editor's rename landing in the microseconds between that check
      and the rename is overwritten; that window is what remains there.
    - ``expected_etag`` ``None``: a plain :func:`os.replace`, no check.

    An editor that rewrites the note in place (no temp file) is only caught if its bytes are
    in the file when it is hashed.

    :param path: the note (already contained by :func:`contain`).
    :param data: the complete new content.
    :param expected_etag: ``None`` to skip the check; an etag from :func:`etag` that the file
        must still have; :data:`MISSING_ETAG` to require that the file does not exist.
    :param mode: permission bits for a new file (an existing file keeps its own).
    :raises Conflict: the file changed (or appeared) since ``expected_etag`` was read.
    """
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    folder = target.parent
    try:
        existing_mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        existing_mode = None
    tmp = folder / f".{target.name[:80]}.{os.getpid()}-{secrets.token_hex(6)}{TEMP_SUFFIX}"
    create_mode = 0o644 if mode is None else mode
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, create_mode)
    new_etag = etag(data)
    try:
        try:
            if existing_mode is not None:
                os.fchmod(fd, existing_mode)
            elif mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        if expected_etag is None:
            os.replace(tmp, target)
        elif expected_etag == MISSING_ETAG:
            _create_only(tmp, target)
        elif _exchange_verified(tmp, target, expected_etag, new_etag):
            os.unlink(tmp)  # the content that was read, swapped out
        else:
            now = current_etag(target)
            if now != expected_etag:
                raise _conflict(target, expected_etag, now)
            os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(folder)
    now = current_etag(target)
    if now != new_etag:  # replaced (an editor's save) between the rename and this answer
        raise Conflict(
            f"{target.name} changed right after this write (etag {new_etag} -> {now}): it no "
            "longer holds what was written; read it and write again",
            path=str(target),
        )
    return new_etag


def _create_only(tmp: Path, target: Path) -> None:
    """Move ``tmp`` to ``target`` only if ``target`` does not exist (atomically where the
    system allows); :class:`Conflict` if it does."""
    try:
        if _renameat2(tmp, target, _RENAME_NOREPLACE):
            return
    except FileExistsError:
        raise _conflict(target, MISSING_ETAG, current_etag(target)) from None
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise _conflict(target, MISSING_ETAG, current_etag(target)) from None
    except OSError:  # no hard links here (FAT, some FUSE mounts): check, then rename
        now = current_etag(target)
        if now != MISSING_ETAG:
            raise _conflict(target, MISSING_ETAG, now) from None
        os.replace(tmp, target)
        return
    os.unlink(tmp)


def write_owner_only(path: Path, data: bytes) -> None:
    """Atomically replace ``path`` with ``data``, owner-only (``0600``, whatever the umask).

    Uses :func:`atomic_write` (same-folder dot-temp file, fsync, rename, folder fsync; on
    any failure the temp file is removed and ``path`` is unchanged). A folder this creates
    is ``0700``. An existing ``path`` with wider permissions is made
    ``0600`` first, so neither the temp file nor the result is ever group/world-readable.

    :raises OSError: the folder or file could not be written.
    """
    _make_private_dirs(path.parent)
    try:
        if stat.S_IMODE(os.stat(path).st_mode) != 0o600:
            os.chmod(path, 0o600)
    except FileNotFoundError:
        pass
    atomic_write(path, data, mode=0o600)


def _make_private_dirs(folder: Path) -> None:
    missing = []
    current = folder
    while not current.exists():
        missing.append(current)
        current = current.parent
    for item in reversed(missing):
        item.mkdir(mode=0o700, exist_ok=True)
        os.chmod(item, 0o700)  # mkdir's mode is filtered by the umask


class StoreLock:
    """A cross-process lock guarding a store's read-modify-write cycles.

    Wraps :class:`filelock.FileLock` on a lock file under the GOAT home
    (``GoatHome.lock_path(root)``), never on a note or the index, so a read-only or synced
    vault is never touched. Re-entrant within one instance. Use as a context manager.

    :param lock_path: the lock file; its folder is created with mode ``0700``.
    :param timeout_s: how long to wait for another process, in seconds.
    :raises Conflict: on entry, when the lock was not obtained within ``timeout_s``.
    """

    def __init__(self, lock_path: Path, timeout_s: float = 10.0) -> None:
        self.lock_path = Path(lock_path)
        self.timeout_s = timeout_s
        self._lock: filelock.FileLock | None = None

    def _get(self) -> filelock.FileLock:
        if self._lock is None:
            import filelock

            self.lock_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._lock = filelock.FileLock(
                str(self.lock_path), timeout=self.timeout_s, preserve_lock_file=True
            )
        return self._lock

    def acquire(self) -> None:
        import filelock

        try:
            self._get().acquire()
        except filelock.Timeout as exc:
            raise Conflict(
                f"the store is busy: another process held its lock for more than "
                f"{self.timeout_s:g} s ({self.lock_path}); nothing was written, try again",
                lock=str(self.lock_path),
            ) from exc

    def try_acquire(self) -> bool:
        """Take the lock only if it is free now (re-entrant); ``True`` if taken: then
        :meth:`release` it."""
        import filelock

        try:
            self._get().acquire(timeout=0)
        except filelock.Timeout:
            return False
        return True

    def release(self) -> None:
        if self._lock is not None:
            self._lock.release()

    def __enter__(self) -> StoreLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def is_utf8(name: str) -> bool:
    """Whether ``name`` encodes as UTF-8: a file name that is not UTF-8 decodes
    (:func:`os.fsdecode`, ``os.walk``) to lone surrogates, which no note, index, YAML or
    JSON text can hold."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_name(path: str) -> str:
    """``path`` as a line of text names it: a name that is not UTF-8 (:func:`is_utf8`) with
    its bytes escaped (``bad\\xffname.md``), so the line encodes as text and as JSON."""
    if is_utf8(path):
        return path
    try:
        return os.fsencode(path).decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no file name decodes to
        return path.encode("utf-8", "backslashreplace").decode("utf-8")
