"""Store roots, walking a store, its temp-file litter and file names for titles.

Four rules for every file-based provider (markdown, wiki), each enforced here once (see
``docs/design.md``); containment, atomic writes and the store lock are
:mod:`goat_core.fileio`'s, which every layer shares:

- **Store roots**: :func:`validate_store_root` refuses ``/``, a home directory itself and
  anything that is not a directory.
- **Walking**: :func:`walk_notes` lists notes and attachments, skipping dot-folders
  (``.obsidian``, ``.git``, ``.trash``) and dot-files as Obsidian does, following symlinks only
  when they stay inside the root, reporting those that leave it, never looping on cycles.
- **Litter**: :func:`sweep_temp_files` removes the temp files of writers that died
  (``kill -9``) before their rename; a store calls it under its lock when a walk saw any.
- **File names**: :func:`safe_title_filename` maps a title to one file name (never a folder).
"""

from __future__ import annotations

import gc
import os
import re
import stat
import time
import unicodedata
from pathlib import Path
from typing import NamedTuple

from goat_core.errors import PathError
from goat_core.fileio import TEMP_SUFFIX, fsync_dir, is_reserved_name

#: Characters forbidden in file names on common filesystems (Windows, exFAT, SMB shares).
_FORBIDDEN = re.compile(r'[:*?"<>|\x00-\x1f\x7f]')
_MAX_NAME_BYTES = 200


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
                if name.endswith(TEMP_SUFFIX):
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


#: A GOAT temp file whose name carries its writer's process id (``.<name>.<pid>-<hex>``).
_TEMP_PID = re.compile(r"\.(\d+)-[0-9a-f]{12}" + re.escape(TEMP_SUFFIX) + "$")
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
    store-relative paths removed. Call under the store's
    :class:`~goat_core.fileio.StoreLock`, with the ``temp_files`` a :func:`walk_notes` of
    ``root`` just found.

    A writer killed between creating its temp file and renaming it (``kill -9``, a power cut)
    leaves the file behind. One is stale when the process id in its name
    (:func:`~goat_core.fileio.atomic_write` puts it there) is not a live process on this
    machine, or the file is older than :data:`STALE_TEMP_S` (the id was reused); a temp file
    without a process id (an older version's) when it is older than
    :data:`STALE_LEGACY_TEMP_S`. The temp file of a live writer is never touched: a write
    takes milliseconds. Only names matching GOAT's pattern are considered, so an editor's or a
    sync client's files stay. A writer on another machine sharing the folder (a network mount)
    is not known here: only the age rule holds for its temp files' ids, which may name a dead
    local process; its write then fails with an error rather than landing partially.
    """
    removed: list[str] = []
    now = time.time()
    for rel in temp_files:
        name = rel.rsplit("/", 1)[-1]
        if not (name.startswith(".") and name.endswith(TEMP_SUFFIX)):
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
