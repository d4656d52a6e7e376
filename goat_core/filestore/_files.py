"""Safe file handling shared by every file-based provider (markdown, wiki).

Five rules, each enforced here once (see ``docs/design.md``):

- **Store roots**: :func:`validate_store_root` refuses ``/``, a home directory itself and
  anything that is not a directory.
- **Containment**: :func:`contain` turns a user reference (``"Folder/Note.md"``) into a path
  inside the store after resolving symlinks, or raises :class:`~goat_core.errors.PathError`
  whose ``rule`` names what was broken (``parent-traversal``, ``absolute-path``,
  ``backslash`` (Windows), ``nul-byte``, ``reserved-name``, ``empty-segment``,
  ``dot-segment``, ``empty-path``, ``symlink-escape``).
- **Walking**: :func:`walk_notes` lists notes and attachments, skipping dot-folders
  (``.obsidian``, ``.git``, ``.trash``) and dot-files as Obsidian does, following symlinks only
  when they stay inside the root, reporting those that leave it, never looping on cycles.
- **Atomic writes**: :func:`atomic_write` writes a dot-prefixed temp file in the same folder,
  keeps the note's permissions, fsyncs file and folder, re-checks the current content hash
  just before the rename (editors take no lock) and renames; nothing partial is ever left.
- **Litter**: :func:`sweep_temp_files` removes the temp files of writers that died
  (``kill -9``) before their rename; a store calls it under its lock when a walk saw any.
- **Locking**: :class:`StoreLock`, a cross-process lock on a file under the GOAT home
  (:meth:`goat_core.home.GoatHome.lock_path`), never on a note or the index.

:func:`safe_title_filename` maps a title to one file name (never a folder).
"""

from __future__ import annotations

import contextlib
import errno
import gc
import hashlib
import os
import re
import secrets
import stat
import sys
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, NamedTuple

from goat_core.errors import Conflict, PathError

if TYPE_CHECKING:
    import filelock

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
#: Characters forbidden in file names on common filesystems (Windows, exFAT, SMB shares).
_FORBIDDEN = re.compile(r'[:*?"<>|\x00-\x1f\x7f]')
_MAX_NAME_BYTES = 200
_TEMP_SUFFIX = ".goat-tmp"


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


def _home_dirs() -> set[str]:
    homes = {"/root"}
    try:
        homes.add(os.path.realpath(Path.home()))
    except RuntimeError:  # no home directory known
        pass
    return homes


def validate_store_root(root: Path) -> Path:
    """Return the real path of a store root, or raise :class:`PathError` naming the rule.

    :param root: the folder a store lives in (a Global or Pen store, or an Obsidian vault).
    :returns: ``root`` with every symlink resolved.
    :raises PathError: ``rule="root-is-filesystem-root"`` for ``/`` (or a drive root),
        ``rule="root-is-home"`` for a home directory itself (``Path.home()``, ``/root`` or
        ``/home/<user>``; a folder *inside* a home is fine), ``rule="root-not-directory"`` when
        it is missing or not a folder.
    """
    real = Path(os.path.realpath(Path(root).expanduser()))
    if real.parent == real:
        raise PathError(
            f"refusing store root {str(root)!r}: a store may not be rooted at the filesystem root",
            rule="root-is-filesystem-root",
        )
    parts = real.parts
    if str(real) in _home_dirs() or (len(parts) == 3 and parts[1] == "home"):
        raise PathError(
            f"refusing store root {str(root)!r}: a store may not be a home directory itself; "
            "use a folder inside it",
            rule="root-is-home",
        )
    if not real.is_dir():
        raise PathError(
            f"store root {str(root)!r} is not an existing directory", rule="root-not-directory"
        )
    return real


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

    :param root: the store root (validated with :func:`validate_store_root` by the caller).
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


class NoteFile(NamedTuple):
    """One note found by :func:`walk_notes` (an immutable named tuple, cheap to build).

    :param path: POSIX path relative to the store root, as the link or symlink is named.
    :param mtime_ns: modification time in nanoseconds (of the target, for a symlink).
    :param size: size in bytes.
    """

    path: str
    mtime_ns: int
    size: int


class WalkResult:
    """What :func:`walk_notes` found.

    :param folders: the notes per folder, keyed by the folder's path relative to the root
        without a trailing ``/`` (``""`` for the root itself), each list sorted by path;
        only folders holding at least one note are keys. This is the shape
        :meth:`goat_core.filestore.search.SearchIndex.sync` compares, so a change scan never needs
        the whole store sorted.
    :param attachments: relative paths of other files (any other extension), in page order.
    :param skipped: ``(relative path, reason)`` for symlinks leaving the store, broken
        symlinks, cycles and unreadable folders.
    :param symlinks: relative paths of the symlinks that were followed (they stay inside the
        store), same order; a file watcher cannot map changes behind them to these paths.
    :param temp_files: relative paths of GOAT's own temp files (``.*.goat-tmp``) seen on the
        way, for :func:`sweep_temp_files`; never notes.
    """

    __slots__ = ("_files", "attachments", "folders", "skipped", "symlinks", "temp_files")

    def __init__(
        self,
        folders: dict[str, list[NoteFile]] | None = None,
        attachments: list[str] | None = None,
        skipped: list[tuple[str, str]] | None = None,
        symlinks: list[str] | None = None,
        temp_files: list[str] | None = None,
    ) -> None:
        self.folders = folders if folders is not None else {}
        self.temp_files = temp_files if temp_files is not None else []
        self.attachments = attachments if attachments is not None else []
        self.skipped = skipped if skipped is not None else []
        self.symlinks = symlinks if symlinks is not None else []
        self._files: list[NoteFile] | None = None

    @property
    def files(self) -> list[NoteFile]:
        """Every note, sorted by path case-insensitively (ties by exact path): page order.

        Sorted on first use and kept (about 50 ms at 100k notes), so a walk that only feeds
        a change scan never pays for it.
        """
        if self._files is None:
            keyed = [(f.path.casefold(), f) for group in self.folders.values() for f in group]
            keyed.sort(key=_first)  # one key per note, compared as plain strings
            if len({k for k, _ in keyed}) != len(keyed):  # case-only twins: by exact path too
                keyed.sort(key=lambda n: (n[0], n[1].path))
            self._files = [f for _, f in keyed]
        return self._files

    def __repr__(self) -> str:
        notes = sum(map(len, self.folders.values()))
        return (
            f"WalkResult(notes={notes}, folders={len(self.folders)}, "
            f"attachments={len(self.attachments)}, skipped={len(self.skipped)}, "
            f"symlinks={len(self.symlinks)})"
        )


def _sort_key(path: str) -> tuple[str, str]:
    return (path.casefold(), path)


def walk_notes(root: Path | str, *, exts: tuple[str, ...] = (".md",)) -> WalkResult:
    """List a store's notes (files ending in one of ``exts``, case-insensitively).

    Follows Obsidian: dot-folders and dot-files are not part of the vault (this also hides
    GOAT's own temp files). A symlink is followed only when its real target is inside the
    real root; otherwise it is reported in ``skipped``. Each real folder is entered once, so
    symlink cycles end.

    Cost: one ``scandir`` per folder and one ``lstat`` per note (plus a ``realpath`` and a
    ``stat`` per symlink); folders and attachments are typed from the directory entry alone.

    :param root: the store root.
    :param exts: note extensions, lowercase with the dot.
    """
    # the walk allocates a few objects per note, none in a cycle: collecting meanwhile only
    # rescans the heap (tens of ms at 100k notes)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _walk(root, exts)
    finally:
        if gc_was_enabled:
            gc.enable()


def _first(item: tuple[str, NoteFile]) -> str:
    return item[0]


def _path(note: NoteFile) -> str:
    return note.path


def _walk(root: Path | str, exts: tuple[str, ...]) -> WalkResult:
    return _Walker(root, exts).run()


class _Walker:
    """One walk of a store (:func:`walk_notes`): the folders still to list, and what the
    listing has found so far.

    Folders are kept as (real path, path relative to the root with a trailing "/" or "");
    real folders are walked before any symlinked one, so a folder is listed under its own
    path and a link to it is reported for what it is: an alias, or the link that closes a
    cycle.
    """

    def __init__(self, root: Path | str, exts: tuple[str, ...]) -> None:
        self.real_root = real_root = os.path.realpath(root)
        self.root_prefix = real_root.rstrip(os.sep) + os.sep
        self.visited: set[str] = {real_root}
        self.lowered = tuple(e.lower() for e in exts)
        self.folders: dict[str, list[NoteFile]] = {}
        self.attachments: list[str] = []
        self.skipped: list[tuple[str, str]] = []
        self.symlinks: list[str] = []
        self.temps: list[str] = []
        self.stack: list[tuple[str, str]] = [(real_root, "")]
        # symlinked folders: (relative path, real target, real folder holding the link)
        self.linked: list[tuple[str, str, str]] = []

    def run(self) -> WalkResult:
        """List every folder, then return what was found, each list in path order."""
        while self.stack or self.linked:
            if not self.stack:
                self._enter_linked()
                continue
            folder, prefix = self.stack.pop()
            self._list(folder, prefix)
        self.attachments.sort(key=_sort_key)
        self.skipped.sort(key=lambda s: _sort_key(s[0]))
        self.symlinks.sort(key=_sort_key)
        return WalkResult(
            folders=self.folders,
            attachments=self.attachments,
            skipped=self.skipped,
            symlinks=self.symlinks,
            temp_files=self.temps,
        )

    def _enter_linked(self) -> None:
        """Queue the first symlinked folder in path order, unless the link closes a cycle
        or its target is already listed (then it is skipped, with the reason)."""
        linked, real_root = self.linked, self.real_root
        linked.sort(key=lambda item: _sort_key(item[0]), reverse=True)
        rel, target, holder = linked.pop()
        if target == holder or holder.startswith(target.rstrip(os.sep) + os.sep):
            where = os.path.relpath(target, real_root).replace(os.sep, "/")
            self.skipped.append(
                (rel, f"symlink cycle: it points back to {where!r}, a folder holding it")
            )
            return
        if target in self.visited:
            where = os.path.relpath(target, real_root).replace(os.sep, "/")
            self.skipped.append((rel, f"symlink to folder {where!r}, already listed there"))
            return
        self.visited.add(target)
        self.symlinks.append(rel)
        self.stack.append((target, rel + "/"))

    def _list(self, folder: str, prefix: str) -> None:
        """List one folder: its notes, its attachments, its sub-folders (queued), its
        temp files; symlinks go through :meth:`_follow`."""
        skipped = self.skipped
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError as exc:
            skipped.append((prefix[:-1] or ".", f"folder not readable: {exc.strerror}"))
            return
        group: list[NoteFile] = []
        add = group.append
        new = tuple.__new__
        s_isreg = stat.S_ISREG
        lowered, visited, stack = self.lowered, self.visited, self.stack
        attachments, temps = self.attachments, self.temps
        for entry in entries:
            name = entry.name
            if name[0] == ".":
                if name.endswith(_TEMP_SUFFIX):
                    temps.append(prefix + name)
                continue
            rel = prefix + name
            is_note = name.lower().endswith(lowered)
            try:
                if entry.is_symlink():
                    self._follow(entry.path, rel, folder, is_note, group)
                elif entry.is_dir(follow_symlinks=False):
                    path = entry.path  # real: its folder is real and it is no symlink
                    if path in visited:
                        skipped.append((rel, "symlink cycle: folder already visited"))
                        continue
                    visited.add(path)
                    stack.append((path, rel + "/"))
                elif is_note:
                    st = entry.stat(follow_symlinks=False)
                    if s_isreg(st.st_mode):
                        add(new(NoteFile, (rel, st.st_mtime_ns, st.st_size)))
                elif entry.is_file(follow_symlinks=False):
                    attachments.append(rel)
            except OSError as exc:
                skipped.append((rel, f"not readable: {exc.strerror}"))
                continue
        if group:
            group.sort(key=_path)  # a folder's listing in a stable order (scandir's is not)
            self.folders[prefix[:-1]] = group

    def _follow(
        self, path: str, rel: str, folder: str, is_note: bool, group: list[NoteFile]
    ) -> None:
        """The symlink at ``path`` (``rel`` in the store, in real ``folder``): a note or
        attachment when it names a file inside the store, a folder queued for later, else
        skipped with the reason.

        :raises OSError: the link cannot be read.
        """
        target = os.path.realpath(path)
        if target != self.real_root and not target.startswith(self.root_prefix):
            self.skipped.append((rel, "symlink points outside the store"))
            return
        try:
            st = os.stat(target)
        except OSError:
            self.skipped.append((rel, "broken symlink"))
            return
        if stat.S_ISDIR(st.st_mode):
            self.linked.append((rel, target, folder))
        elif stat.S_ISREG(st.st_mode):
            self.symlinks.append(rel)
            if is_note:
                group.append(tuple.__new__(NoteFile, (rel, st.st_mtime_ns, st.st_size)))
            else:
                self.attachments.append(rel)


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
    a = Path(folder) / f".goat-xchg-{secrets.token_hex(4)}{_TEMP_SUFFIX}"
    b = Path(folder) / f".goat-xchg-{secrets.token_hex(4)}{_TEMP_SUFFIX}"
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
    tmp = folder / f".{target.name[:80]}.{os.getpid()}-{secrets.token_hex(6)}{_TEMP_SUFFIX}"
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


#: A GOAT temp file whose name carries its writer's process id (``.<name>.<pid>-<hex>``).
_TEMP_PID = re.compile(r"\.(\d+)-[0-9a-f]{12}" + re.escape(_TEMP_SUFFIX) + "$")
#: A GOAT temp file of a writer that is still alive is removed once it is this old (seconds):
#: a write takes milliseconds, so the process id was reused.
STALE_TEMP_S = 3600.0
#: A GOAT temp file without a process id in its name (written by an older version) is removed
#: once it is this old (seconds).
STALE_LEGACY_TEMP_S = 600.0


def _process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (a zombie counts as dead). Where this
    cannot be told without side effects (Windows, whose ``os.kill`` terminates), ``True``."""
    if os.name != "posix":
        return True
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    except OSError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
        return state not in (b"Z", b"X")
    except (OSError, IndexError):
        return True


def sweep_temp_files(root: Path | str, temp_files: list[str]) -> list[str]:
    """Remove the GOAT temp files (``.*.goat-tmp``) of writers that are gone; returns the
    store-relative paths removed. Call under the store's :class:`StoreLock`, with the
    ``temp_files`` a :func:`walk_notes` of ``root`` just found.

    A writer killed between creating its temp file and renaming it (``kill -9``, a power cut)
    leaves the file behind. One is stale when the process id in its name
    (:func:`atomic_write` puts it there) is not a live process on this machine, or the file
    is older than :data:`STALE_TEMP_S` (the id was reused); a temp file without a process id
    (an older version's) when it is older than :data:`STALE_LEGACY_TEMP_S`. The temp file of a
    live writer is never touched: a write takes milliseconds. Only names matching GOAT's
    pattern are considered, so an editor's or a sync client's files stay. A writer on another
    machine sharing the folder (a network mount) is not known here: only the age rule holds
    for its temp files' ids, which may name a dead local process; its write then fails with an
    error rather than landing partially.
    """
    removed: list[str] = []
    now = time.time()
    for rel in temp_files:
        name = rel.rsplit("/", 1)[-1]
        if not (name.startswith(".") and name.endswith(_TEMP_SUFFIX)):
            continue
        path = os.path.join(root, rel)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        age = now - st.st_mtime
        match = _TEMP_PID.search(name)
        if match is not None:
            stale = age > STALE_TEMP_S or not _process_alive(int(match.group(1)))
        else:
            stale = age > STALE_LEGACY_TEMP_S
        if not stale:
            continue
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue
        except OSError:  # a read-only store: left for a later sweep
            continue
        removed.append(rel)
    for folder in {os.path.dirname(os.path.join(root, rel)) for rel in removed}:
        fsync_dir(Path(folder))
    return removed


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


def safe_title_filename(title: str) -> str:
    """Map a note title to one file name stem (no extension), never a folder path.

    Rules (Obsidian refuses ``* " \\ / < > : | ?`` in file names; Windows also forbids
    control characters, trailing dots and spaces, and device names):

    - NFC normalisation (macOS may hand NFD; one title, one file name);
    - ``/`` and ``\\`` become ``-``, so ``"A/B testing"`` is the single file
      ``A-B testing`` (the exact title stays in the frontmatter ``title``);
    - ``: * ? " < > |`` and control characters (tabs, newlines) become spaces, and runs of
      whitespace become one space (``"Plan: Q3"`` -> ``Plan Q3``);
    - leading dots are removed (a dot-file would be hidden), leading and trailing spaces and
      trailing dots are removed;
    - the result is cut to at most 200 bytes of UTF-8 on a character boundary.

    :raises PathError: ``rule="empty-title"`` when nothing remains, ``rule="reserved-name"``
        for a Windows device name (``CON``, ``nul``, ``LPT1``).
    """
    name = unicodedata.normalize("NFC", title)
    name = name.replace("/", "-").replace("\\", "-")
    name = _FORBIDDEN.sub(" ", name)
    name = re.sub(r"\s+", " ", name).strip(" ").lstrip(".").strip(" ").rstrip(". ")
    encoded = name.encode("utf-8")
    if len(encoded) > _MAX_NAME_BYTES:
        name = encoded[:_MAX_NAME_BYTES].decode("utf-8", "ignore").rstrip(". ")
    if not name:
        raise PathError(f"title {title!r} leaves no usable file name", rule="empty-title")
    if is_reserved_name(name):
        raise PathError(
            f"title {title!r} is the reserved device name {name!r}", rule="reserved-name"
        )
    return name
