"""The vectors of a vector index: one flat file of int8 rows beside its SQLite file.

Row ``slot`` is the ``dimensions`` bytes at offset ``slot * dimensions``; which slot holds what
(note, chunk, scale, checksum) is kept in SQLite (``goat_core/filestore/search/_vectors.py``).
Rows are only ever appended; a row whose chunk was re-embedded or deleted stays in the file,
dead, until the file is compacted into a new one.

A search maps the file read-only and reads it in blocks of :data:`READ_BLOCK` rows: each
block is converted to float32 in one reused buffer and multiplied by the query and by the
checksum weights (:func:`check_weights`); every :data:`RESIDENT_BYTES` read are dropped from
the mapping (``MADV_DONTNEED``; they stay in the page cache, which the process's resident
memory does not count), so the peak memory stays flat with the number of rows. The second
product is the row's checksum (an integer under 2**24, so float32 holds it exactly whatever
the order of the sums), compared with the one recorded when the row was written: a damaged
row is found by the very search that reads it. (Reading with ``os.preadv`` into a buffer
instead costs a copy that took as long as the products themselves.)

A file truncated by someone else *during* a search's read would make the mapped read fault
(``SIGBUS``); the search checks the file's size before it maps and reads, and the index
itself never shrinks a row file (a compaction writes a new one).
"""

from __future__ import annotations

import errno
import mmap
import os
from typing import Any

_PAGE = mmap.PAGESIZE
#: Bytes of the mapped row file a search may leave resident in the process (a multiple of
#: the page size): a smaller file (up to about 87k rows of 384) stays mapped between
#: searches; a larger one is dropped from the mapping this much at a time. Dropping every
#: block instead made a search of 50k rows half again as slow (its pages fault back in).
RESIDENT_BYTES = 32 << 20

#: Rows read and multiplied at once: 1024 x 384 x 4 bytes = 1.5 MB of float32, which stays
#: in the CPU's cache (8192 rows, 12 MB, made a scan of 22k rows three times slower).
READ_BLOCK = 1024


def check_weights(dimensions: int) -> Any:
    """The checksum's weights: integers from 1 to at most 251, small enough that
    ``|checksum| <= 128 * max weight * dimensions < 2**24`` (exact in float32)."""
    import numpy as np

    top = max(1, min(251, (2**24 - 1) // (128 * dimensions)))
    return 1 + (np.arange(dimensions, dtype=np.int64) * 97) % top


def checksums(rows: Any) -> Any:
    """The checksum of each int8 row of ``rows`` (int64, exact)."""
    import numpy as np

    return np.asarray(rows, dtype=np.int64) @ check_weights(rows.shape[1])


class ShortRead(Exception):
    """The row file ends before the rows the index refers to (``rows``: how many it holds)."""

    def __init__(self, rows: int) -> None:
        super().__init__(rows)
        self.rows = rows


class RowFile:
    """One generation of the row file, opened for reading and (where the home allows) for
    appending. Use from one thread at a time."""

    def __init__(self, path: str, dimensions: int) -> None:
        self.path = path
        self.dimensions = dimensions
        self.writable = True
        try:  # never through a symbolic link: the rows are the index's own file
            self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise
            self.fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)  # a read-only home: search only
            self.writable = False
        self._map: mmap.mmap | None = None
        self._floats: Any = None

    def close(self) -> None:
        self._unmap()
        os.close(self.fd)

    def replaced(self) -> bool:
        """Whether the open file is no longer the one at :attr:`path` (deleted, or another
        file put in its place)."""
        st = os.fstat(self.fd)
        if st.st_nlink == 0:
            return True
        try:
            at = os.stat(self.path, follow_symlinks=False)
        except OSError:
            return True
        return (at.st_dev, at.st_ino) != (st.st_dev, st.st_ino)

    def rows(self) -> int:
        """Whole rows in the file."""
        return os.fstat(self.fd).st_size // self.dimensions

    def append(self, rows: Any, after: int = 0) -> int:
        """Write ``rows`` (int8, ``(n, dimensions)``) after the file's last whole or partial
        row and at slot ``after`` or later; returns the slot of the first. Call under the
        index's write lock, so that two processes never take the same slots.

        :raises OSError: the write failed (nothing refers to the rows yet); a file opened
            read-only raises ``PermissionError`` (EROFS)."""
        if not self.writable:
            raise PermissionError(errno.EROFS, "the row file could only be opened read-only")
        size = os.fstat(self.fd).st_size
        first = max(after, -(-size // self.dimensions))  # a torn row from a crash stays dead
        data = memoryview(rows.tobytes())
        offset = first * self.dimensions
        while data:
            n = os.pwrite(self.fd, data, offset)
            data, offset = data[n:], offset + n
        return first

    def sync(self) -> None:
        os.fsync(self.fd)

    def scan(self, query: Any, count: int) -> tuple[Any, Any]:
        """Each of the first ``count`` rows' dot product with ``query`` (unscaled) and its
        checksum, as two float32 arrays.

        The file is mapped read-only and read block by block; once :data:`RESIDENT_BYTES` of
        it have been read, those pages are dropped from the mapping (``MADV_DONTNEED``: they
        stay in the page cache), so the process never holds more than that of the file.

        :raises ShortRead: the file holds fewer than ``count`` rows."""
        import numpy as np

        dim = self.dimensions
        sims = np.empty(count, dtype=np.float32)
        checks = np.empty(count, dtype=np.float32)
        if not count:
            return sims, checks
        size = os.fstat(self.fd).st_size
        if size < count * dim:
            raise ShortRead(size // dim)
        if self._map is None or len(self._map) < count * dim:
            self._unmap()
            self._map = mmap.mmap(self.fd, size, prot=mmap.PROT_READ)
        if self._floats is None:
            self._floats = np.empty((READ_BLOCK, dim), dtype=np.float32)
        floats = self._floats
        weights = check_weights(dim).astype(np.float32)
        rows = np.frombuffer(self._map, dtype=np.int8, count=count * dim).reshape(count, dim)
        held = 0  # the first byte of the mapping that may still be resident
        try:
            for lo in range(0, count, READ_BLOCK):
                n = min(READ_BLOCK, count - lo)
                np.copyto(floats[:n], rows[lo : lo + n], casting="unsafe")
                np.matmul(floats[:n], query, out=sims[lo : lo + n])
                np.matmul(floats[:n], weights, out=checks[lo : lo + n])
                end = (lo + n) * dim
                if end - held >= RESIDENT_BYTES:
                    self._map.madvise(mmap.MADV_DONTNEED, held, end - held)
                    held = end // _PAGE * _PAGE
            if held:  # a file over the budget: leave none of it resident between searches
                self._map.madvise(mmap.MADV_DONTNEED, held, count * dim - held)
        finally:
            del rows  # the mapping can be closed only once no array refers to it
        return sims, checks

    def _unmap(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None

    def copy_rows(self, slots: Any, target: RowFile) -> None:
        """Append the rows at ``slots`` (ascending) to ``target``, in that order.

        :raises ShortRead: a slot lies past the end of this file."""
        import numpy as np

        dim = self.dimensions
        if not len(slots):
            return
        total = int(slots[-1]) + 1
        raw = bytearray(READ_BLOCK * dim)
        ints = np.frombuffer(raw, dtype=np.int8).reshape(READ_BLOCK, dim)
        view = memoryview(raw)
        for lo in range(0, total, READ_BLOCK):
            n = min(READ_BLOCK, total - lo)
            a, b = np.searchsorted(slots, [lo, lo + n])
            if a == b:
                continue
            got = os.preadv(self.fd, [view[: n * dim]], lo * dim)
            if got < n * dim:
                raise ShortRead(self.rows())
            target.append(ints[slots[a:b] - lo])
