"""The change scan of a sync: the files grouped by folder and a digest of each folder's
listing, so only folders whose listing changed are compared file by file
(see :meth:`~goat_core.filestore.search.SearchIndex.sync`)."""

from __future__ import annotations

import hashlib
import operator
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from goat_core.filestore.search._records import FileStatLike, IndexedDoc


def _folder_of(path: str) -> str:
    """``a/b/c.md`` -> ``a/b``; a file at the store root is in folder ``""``."""
    return path.rpartition("/")[0]


def _by_folder(files: Iterable[FileStatLike]) -> dict[str, list[FileStatLike]]:
    """The files per folder, each folder's in the order given (one pass, no copies)."""
    groups: dict[str, list[FileStatLike]] = {}
    get = groups.get
    for st in files:
        folder = st.path.rpartition("/")[0]
        group = get(folder)
        if group is None:
            groups[folder] = [st]
        else:
            group.append(st)
    return groups


def _checked_groups(
    groups: Mapping[str, Sequence[FileStatLike]],
) -> dict[str, Sequence[FileStatLike]]:
    """``groups`` as a dict, after checking every path sits under its key (~20 ms at 100k
    files): a wrong key would keep the folder's digest from ever holding.

    :raises ValueError: a path grouped under another folder (a caller's bug)."""
    out = dict(groups)
    for folder, entries in out.items():
        for path in map(_PATH, entries):
            if path.rpartition("/")[0] != folder:
                raise ValueError(f"sync: {path!r} is grouped under folder {folder!r}")
    return out


_STAT = operator.attrgetter("path", "mtime_ns", "size")
_PATH = operator.attrgetter("path")
_MTIME = operator.attrgetter("mtime_ns")
_SIZE = operator.attrgetter("size")


def _digest(entries: Sequence[FileStatLike]) -> bytes:
    """16-byte BLAKE2b of a folder's listing, in the order given: the paths joined by NUL,
    then the mtimes and the sizes as 64-bit integers (a walk lists a folder in one order, so
    an unchanged folder gives the same digest; another order only costs a compare)."""
    # attribute lists only: no object per file (allocating one per file wakes the cyclic
    # garbage collector, which then rescans the caller's heap)
    mtimes = list(map(_MTIME, entries))
    sizes = list(map(_SIZE, entries))
    h = hashlib.blake2b(digest_size=16)
    h.update("\0".join(map(_PATH, entries)).encode("utf-8", "surrogatepass"))
    try:
        h.update(array("q", mtimes).tobytes())
        h.update(array("q", sizes).tobytes())
    except OverflowError:  # beyond 64 bits: as text
        h.update(b"\1" + "\0".join(f"{m}:{z}" for m, z in zip(mtimes, sizes, strict=True)).encode())
    return h.digest()


@dataclass
class _Plan:
    """What a sync compares: ``changed`` listed folders (digest differs, new or cleared),
    ``rows`` the stored ``path -> (mtime_ns, size)`` of those and of the ``gone`` folders
    (stored, no longer listed)."""

    changed: list[str]
    rows: dict[str, tuple[int, int]]
    gone: list[str]


@dataclass
class _Pending:
    stat: FileStatLike
    doc: IndexedDoc | None
