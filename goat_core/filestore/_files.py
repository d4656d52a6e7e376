"""Safe file handling shared by every file-based provider (markdown, wiki).

Five rules, each enforced here once (see ``docs/design.md``):

- **Store roots**: :func:`validate_store_root` refuses ``/``, a home directory itself and
  anything that is not a directory.
- **Containment**: :func:`contain` turns a user reference (``"Folder/Note.md"``) into a path
  inside the store after resolving symlinks, or raises :class:`~goat_core.errors.PathError`
  whose ``rule`` names what was broken (``parent-traversal``, ``absolute-path``,
  ``percent-encoded``, ``backslash``, ``nul-byte``, ``reserved-name``, ``empty-segment``,
  ``dot-segment``, ``empty-path``, ``symlink-escape``).
- **Walking**: :func:`walk_notes` lists notes and attachments, skipping dot-folders
  (``.obsidian``, ``.git``, ``.trash``) and dot-files as Obsidian does, following symlinks only
  when they stay inside the root, reporting those that leave it, never looping on cycles.
- **Atomic writes**: :func:`atomic_write` writes a dot-prefixed temp file in the same folder,
  keeps the note's permissions, fsyncs file and folder, re-checks the current content hash
  just before the rename (editors take no lock) and renames; nothing partial is ever left.
- **Locking**: :class:`StoreLock`, a cross-process lock on a file under the GOAT home
  (:meth:`goat_core.home.GoatHome.lock_path`), never on a note or the index.

:func:`safe_title_filename` maps a title to one file name (never a folder).
"""

from __future__ import annotations

import gc
import hashlib
import os
import re
import secrets
import stat
import unicodedata
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

_PERCENT_ENCODED = re.compile(r"%(2e|2f|5c|00)", re.IGNORECASE)
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
    ``empty-path`` (``""``), ``nul-byte`` (``"a\\x00b"``), ``backslash`` (``"a\\\\b"``),
    ``percent-encoded`` (``%2e``, ``%2f``, ``%5c``, ``%00`` in any case), ``absolute-path``
    (``/etc/passwd``, ``C:x``), ``empty-segment`` (``a//b``, a trailing ``/``),
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
    if "\\" in ref:
        raise PathError(
            f"path {ref!r} contains a backslash; use '/' between folders", rule="backslash"
        )
    if _PERCENT_ENCODED.search(ref):
        raise PathError(
            f"path {ref!r} contains a percent-encoded dot, slash or NUL", rule="percent-encoded"
        )
    if ref.startswith("/") or _DRIVE.match(ref):
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
    """

    __slots__ = ("_files", "attachments", "folders", "skipped", "symlinks")

    def __init__(
        self,
        folders: dict[str, list[NoteFile]] | None = None,
        attachments: list[str] | None = None,
        skipped: list[tuple[str, str]] | None = None,
        symlinks: list[str] | None = None,
    ) -> None:
        self.folders = folders if folders is not None else {}
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
    real_root = os.path.realpath(root)
    root_prefix = real_root.rstrip(os.sep) + os.sep
    visited: set[str] = {real_root}
    lowered = tuple(e.lower() for e in exts)
    folders: dict[str, list[NoteFile]] = {}
    new = tuple.__new__
    attachments: list[str] = []
    skipped: list[tuple[str, str]] = []
    symlinks: list[str] = []
    # folders as (real path, path relative to the root with a trailing "/" or ""); real
    # folders are walked before any symlinked one, so a folder is listed under its own path
    # and a link to it is reported for what it is: an alias, or the link that closes a cycle
    stack: list[tuple[str, str]] = [(real_root, "")]
    # symlinked folders: (relative path, real target, real folder holding the link)
    linked: list[tuple[str, str, str]] = []
    s_isdir, s_isreg = stat.S_ISDIR, stat.S_ISREG
    realpath, os_stat = os.path.realpath, os.stat
    while stack or linked:
        if not stack:
            linked.sort(key=lambda item: _sort_key(item[0]), reverse=True)
            rel, target, holder = linked.pop()
            if target == holder or holder.startswith(target.rstrip(os.sep) + os.sep):
                where = os.path.relpath(target, real_root).replace(os.sep, "/")
                skipped.append(
                    (rel, f"symlink cycle: it points back to {where!r}, a folder holding it")
                )
                continue
            if target in visited:
                where = os.path.relpath(target, real_root).replace(os.sep, "/")
                skipped.append((rel, f"symlink to folder {where!r}, already listed there"))
                continue
            visited.add(target)
            symlinks.append(rel)
            stack.append((target, rel + "/"))
            continue
        folder, prefix = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError as exc:
            skipped.append((prefix[:-1] or ".", f"folder not readable: {exc.strerror}"))
            continue
        group: list[NoteFile] = []
        add = group.append
        for entry in entries:
            name = entry.name
            if name[0] == ".":
                continue
            rel = prefix + name
            is_note = name.lower().endswith(lowered)
            try:
                if entry.is_symlink():
                    target = realpath(entry.path)
                    if target != real_root and not target.startswith(root_prefix):
                        skipped.append((rel, "symlink points outside the store"))
                        continue
                    try:
                        st = os_stat(target)
                    except OSError:
                        skipped.append((rel, "broken symlink"))
                        continue
                    if s_isdir(st.st_mode):
                        linked.append((rel, target, folder))
                    elif s_isreg(st.st_mode):
                        symlinks.append(rel)
                        if is_note:
                            add(new(NoteFile, (rel, st.st_mtime_ns, st.st_size)))
                        else:
                            attachments.append(rel)
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
            folders[prefix[:-1]] = group
    attachments.sort(key=_sort_key)
    skipped.sort(key=lambda s: _sort_key(s[0]))
    symlinks.sort(key=_sort_key)
    return WalkResult(folders=folders, attachments=attachments, skipped=skipped, symlinks=symlinks)


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


def atomic_write(
    path: Path, data: bytes, *, expected_etag: str | None = None, mode: int | None = None
) -> str:
    """Replace (or create) ``path`` with ``data`` atomically; returns the new etag.

    Steps: a dot-prefixed temp file (``.<name>.<random>.goat-tmp``) in the same folder is
    created with the note's current permissions (a new file gets ``0644`` minus the umask,
    or ``mode``), written and fsynced; the current file's content hash is compared with
    ``expected_etag`` immediately before :func:`os.replace` (editors take no lock, so this is
    the last moment a change can be seen); then the folder is fsynced. A symlinked note is
    written through to its target. On any failure the temp file is removed and the note is
    untouched.

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
    tmp = folder / f".{target.name[:80]}.{secrets.token_hex(6)}{_TEMP_SUFFIX}"
    create_mode = 0o644 if mode is None else mode
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, create_mode)
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
        if expected_etag is not None:
            now = current_etag(target)
            if now != expected_etag:
                what = (
                    "was created"
                    if expected_etag == MISSING_ETAG
                    else ("was deleted" if now == MISSING_ETAG else "changed")
                )
                raise Conflict(
                    f"{target.name} {what} since it was read (etag {expected_etag} -> {now}); "
                    "nothing was written",
                    path=str(target),
                )
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(folder)
    return etag(data)


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
