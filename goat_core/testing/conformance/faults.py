"""The fault-injection protocol of the conformance suite (docs/authors.md, Fault injection).

A provider's test class opts in by overriding the ``goat_faults`` fixture to return a
:class:`FaultInjector`: an object that says which :class:`Fault` kinds its store can have and
arms one of them around a block::

    class MyFaults(FaultInjector):
        kinds = frozenset({Fault.READ_ONLY, Fault.DISK_FULL})

        def inject(self, fault, provider):
            return filesystem_fault(provider.root, fault)   # a context manager

    @pytest.fixture
    def goat_faults(self):
        return MyFaults()

``inject`` is called on the event loop's thread, inside the test body, and must return a
synchronous context manager (``@contextmanager``; not async). Keep it quick and without
blocking I/O: the runtime guards watch it as they watch the provider. To change anything
asynchronously, set a flag that the provider's transport reads on its next request.

While the block runs, the suite remembers a text and reads one it stored before. It then
asserts that the write's receipt is ``unknown`` or the error is typed (a ``GoatError``;
``StoreUnwritable`` for a full or read-only store), never ``stored`` for a write that did not
land, and never a typed error (or a ``rejected``/``failed`` receipt) for a write that did
land; and that the read reports ``degraded`` or ``complete=False`` or raises a typed error,
never a silent empty. Kinds a provider does not list, and every kind of a provider without
the fixture, are skipped with the reason.

:attr:`Fault.DROP_CONNECTION` must hit the write's own request, so the suite proves the
half-sent path (``unknown``) rather than an earlier read failing: the fixture answers every
request before the write's own one, cuts that one part-way, and adds one to
:attr:`FaultInjector.dropped_writes` (by the time the block ends).

:func:`filesystem_fault` implements ``READ_ONLY`` and ``DISK_FULL`` for any store kept in a
folder (it works as root too, where ``chmod`` would not stop a write): every write-like file
operation under that folder fails with ``EROFS`` or ``ENOSPC`` while armed.
"""

from __future__ import annotations

import errno
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar

from goat_core.contract import Provider

__all__ = ["Fault", "FaultInjector", "FolderFaults", "filesystem_fault"]


class Fault(StrEnum):
    """What can go wrong under a write or read."""

    #: The next write fails before anything reaches the store (connection refused, EIO).
    #: One-shot: the first write request inside the block, not the ones after it.
    WRITE_BEFORE_SEND = "write_before_send"
    #: The next write reaches the store, then the answer is lost (a timeout after sending).
    #: One-shot, like :attr:`WRITE_BEFORE_SEND`.
    WRITE_AFTER_SEND = "write_after_send"
    #: The connection drops in the middle of the write's own request (the request that
    #: carries the write: part of it was sent, no answer comes back). Every request before
    #: it is answered (a connect, a handshake, a read the write path makes first); from the
    #: drop until the block ends, every request drops mid-way (the connection stays broken).
    #: The fixture counts each write request it cut in :attr:`FaultInjector.dropped_writes`.
    DROP_CONNECTION = "drop_connection"
    #: The store cannot be written: read-only.
    READ_ONLY = "read_only"
    #: The store cannot be written: the disk is full.
    DISK_FULL = "disk_full"


class FaultInjector:
    """Base of a provider's fault fixture. Set :attr:`kinds`; implement :meth:`inject`."""

    #: The faults this store can have (the others are skipped, with the reason).
    kinds: ClassVar[frozenset[Fault]] = frozenset()
    #: How many write requests :attr:`Fault.DROP_CONNECTION` cut part-way (add one per cut,
    #: at the latest when the block ends). The suite compares it before and after the
    #: block: a write test under the drop whose write request was never cut proves nothing
    #: and fails, naming the fixture.
    dropped_writes: int = 0

    def inject(self, fault: Fault, provider: Provider) -> AbstractContextManager[Any]:
        """A synchronous context manager arming ``fault`` for ``provider``'s store while it
        is entered. Called on the event loop's thread, in the test body; not async.

        ``WRITE_BEFORE_SEND`` and ``WRITE_AFTER_SEND`` fail the first write made inside the
        block (once); ``DROP_CONNECTION`` answers every request up to the write's own one,
        cuts that one part-way and every request after it; ``READ_ONLY`` and ``DISK_FULL``
        hold until the block ends. Leaving the block restores the store.
        """
        raise NotImplementedError


# -- filesystem faults through an audit hook -----------------------------------------------
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_armed: dict[str, int] = {}  # real folder -> errno
_lock = threading.Lock()
_installed = False


def _under(path: object) -> int | None:
    if not _armed or not isinstance(path, str | bytes | os.PathLike):
        return None
    try:
        real = os.path.realpath(os.fsdecode(path))
    except (TypeError, ValueError):
        return None
    for root, code in _armed.items():
        if real == root or real.startswith(root + os.sep):
            return code
    return None


def _writes(event: str, args: tuple[Any, ...]) -> list[object]:
    """The paths an audited operation would change (none for a read)."""
    if event == "open":
        path, mode, flags = [*args, None, None, 0][:3]
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or bool(
            isinstance(flags, int) and flags & _WRITE_FLAGS
        )
        return [path] if writing else []
    if event in {"os.rename", "os.link", "os.symlink"}:
        return [args[0], args[1]]
    if event in {"os.remove", "os.rmdir", "os.mkdir", "os.truncate", "os.chmod", "os.utime"}:
        return [args[0]]
    return []


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if not _armed:
        return
    for path in _writes(event, args):
        code = _under(path)
        if code is not None:
            raise OSError(code, os.strerror(code), os.fsdecode(path))  # type: ignore[arg-type]


@contextmanager
def filesystem_fault(root: Path | str, fault: Fault) -> Iterator[None]:
    """Make every write under ``root`` fail while the block runs: ``EROFS`` for
    :attr:`Fault.READ_ONLY`, ``ENOSPC`` for :attr:`Fault.DISK_FULL`. Reads keep working.

    :raises ValueError: another kind of fault (a folder store has no connection).
    """
    global _installed
    codes = {Fault.READ_ONLY: errno.EROFS, Fault.DISK_FULL: errno.ENOSPC}
    if fault not in codes:
        raise ValueError(f"a folder store cannot have the fault {fault.value!r}")
    real = os.path.realpath(os.fspath(root))
    with _lock:
        if not _installed:
            sys.addaudithook(_hook)
            _installed = True
        _armed[real] = codes[fault]
    try:
        yield
    finally:
        with _lock:
            _armed.pop(real, None)


class FolderFaults(FaultInjector):
    """The fault fixture of a store kept in one folder (``provider.root``, as
    :class:`~goat_core.filestore.FolderStoreProvider` has): read-only and full disks."""

    kinds: ClassVar[frozenset[Fault]] = frozenset({Fault.READ_ONLY, Fault.DISK_FULL})

    def inject(self, fault: Fault, provider: Provider) -> AbstractContextManager[Any]:
        root = getattr(provider, "root", None)
        if root is None:
            raise TypeError(f"{type(provider).__name__} has no root folder to make unwritable")
        return filesystem_fault(root, fault)
