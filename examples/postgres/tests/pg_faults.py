"""The fault fixture: break the real connection on cue, or make the real server refuse writes.

It sets the transport's fault hook (``Transport.fault``), which the transport awaits before
every request it sends. The hook works on the real libpq socket and the real server:

- ``WRITE_BEFORE_SEND``: the socket is shut before the statement that changes the store is
  sent (the transaction it opened rolls back), once;
- ``WRITE_AFTER_SEND``: the socket's reading side is shut, so ``COMMIT`` is sent whole and
  its answer is lost, once;
- ``DROP_CONNECTION``: the statement that changes the store is sent in part (its extended
  protocol messages, cut half-way), then the socket is shut; every later request meets a
  shut socket too;
- ``READ_ONLY``: the write's transaction is made read-only, so the server refuses the change
  (SQLSTATE 25006);
- ``DISK_FULL``: a trigger, made in the write's own transaction, has the server answer the
  change with ``disk_full`` (SQLSTATE 53100).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from goat_core.testing import Fault, FaultInjector

# DISK_FULL: inside the write's own transaction, a trigger makes the server answer the change
# as a full disk does (SQLSTATE 53100, disk_full). The failed write rolls the trigger back with
# it; the trigger also fires only where this transaction set goat_test.disk_full.
_DISK_FULL = (
    "SET LOCAL goat_test.disk_full = 'on'",
    """CREATE OR REPLACE FUNCTION goat_test_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF current_setting('goat_test.disk_full', true) = 'on' THEN
            RAISE EXCEPTION 'could not extend file: No space left on device'
                USING ERRCODE = 'disk_full';
        END IF;
        RETURN NULL;
    END $$""",
    """CREATE OR REPLACE TRIGGER goat_test_disk_full
        BEFORE INSERT OR UPDATE OR DELETE ON goat_notes
        FOR EACH ROW EXECUTE FUNCTION goat_test_disk_full()""",
)


def _message(kind: bytes, payload: bytes) -> bytes:
    return kind + struct.pack("!I", len(payload) + 4) + payload


def _text(value: Any) -> bytes:
    if isinstance(value, list):
        quoted = (str(v).replace("\\", "\\\\").replace('"', '\\"') for v in value)
        return ("{" + ",".join(f'"{v}"' for v in quoted) + "}").encode("utf-8")
    return str(value).encode("utf-8")


def extended_query(sql: str, params: Sequence[Any]) -> bytes:
    """Parse, Bind, Execute and Sync for one statement with its parameters bound as text."""
    numbered = sql
    for i in range(len(params)):
        numbered = numbered.replace("%s", f"${i + 1}", 1)
    parse = _message(b"P", b"\0" + numbered.encode("utf-8") + b"\0" + struct.pack("!H", 0))
    values = b"".join(struct.pack("!i", len(_text(p))) + _text(p) for p in params)
    bind = _message(
        b"B", b"\0\0" + struct.pack("!H", 0) + struct.pack("!H", len(params)) + values + b"\0\0"
    )
    return parse + bind + _message(b"E", b"\0" + struct.pack("!i", 0)) + _message(b"S", b"")


def _shut(connection: Any, how: int = socket.SHUT_RDWR, partial: bytes = b"") -> None:
    """Send ``partial`` raw on the connection's socket, then shut the socket (``how``)."""
    with socket.socket(fileno=socket.dup(connection.pgconn.socket)) as sock:
        if partial:
            sock.send(partial)
        sock.shutdown(how)


class _Hook:
    """Awaited by the transport before each request; it breaks the real socket on cue, and
    the transport then meets the break as it would a real one."""

    def __init__(self, fault: Fault, faults: PgFaults) -> None:
        self.fault, self.faults = fault, faults
        self.done = False  # a one-shot fault already fired
        self.dropped = False  # DROP_CONNECTION cut the write: every later request drops
        self.changed = False  # the current write sent its change (AFTER_SEND waits for it)

    async def __call__(self, connection: Any, what: str, sql: str, params: Sequence[Any]) -> None:
        fault = self.fault
        if fault is Fault.DROP_CONNECTION:
            if what == "change" and not self.dropped:
                self.dropped = True
                self.faults.dropped_writes += 1
                whole = extended_query(sql, params)
                _shut(connection, partial=whole[: len(whole) // 2])  # cut part-way
            elif self.dropped:
                _shut(connection)
        elif fault is Fault.READ_ONLY:
            if what == "change":  # the server itself refuses the change (SQLSTATE 25006)
                await connection.execute("SET TRANSACTION READ ONLY")
        elif fault is Fault.DISK_FULL:
            if what == "change":  # the server answers the change with SQLSTATE 53100
                for statement in _DISK_FULL:
                    await connection.execute(statement)
        elif self.done:
            return
        elif fault is Fault.WRITE_BEFORE_SEND and what == "change":
            self.done = True
            _shut(connection)  # not a byte of the change leaves; the open transaction dies
        elif fault is Fault.WRITE_AFTER_SEND:
            if what == "change":
                self.changed = True
            elif what == "commit" and self.changed:
                self.done = True
                _shut(connection, socket.SHUT_RD)  # COMMIT goes out whole; its answer is lost


class PgFaults(FaultInjector):
    kinds = frozenset(Fault)

    @contextmanager
    def inject(self, fault: Fault, provider: Any) -> Iterator[None]:
        transport = provider.transport
        transport.fault = _Hook(fault, self)
        try:
            yield
        finally:
            transport.fault = None
