"""What each host session was already given, so a prompt hook never injects a note twice.

A server keeps, per ``session_id``, the :func:`~goat_core.host.turn_item_key` of every item
its hook tool put into context. Both levels are bounded and least-recently-used: at most
:data:`MAX_SESSIONS` sessions, each with at most :data:`MAX_ITEMS` keys, and a session
unused for :data:`SESSION_TTL_SECONDS` is dropped. The state lives only in the server's
memory; nothing is written to disk.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable

#: Sessions remembered at once; the least recently used goes first.
MAX_SESSIONS = 256
#: Item keys remembered per session; the least recently given goes first.
MAX_ITEMS = 1024
#: A session not seen for this long is forgotten (its notes may be given again).
SESSION_TTL_SECONDS = 12 * 3600.0


class SessionLedger:
    """Per session, the keys of the items already given.

    :param max_sessions: sessions kept. :param max_items: keys kept per session.
    :param ttl: seconds of disuse after which a session is forgotten.
    :param clock: seconds, monotonic (``time.monotonic``).
    """

    def __init__(
        self,
        *,
        max_sessions: int = MAX_SESSIONS,
        max_items: int = MAX_ITEMS,
        ttl: float = SESSION_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._max_sessions = max_sessions
        self._max_items = max_items
        self._ttl = ttl
        self._clock = clock
        self._sessions: OrderedDict[str, tuple[float, OrderedDict[str, None]]] = OrderedDict()

    def __len__(self) -> int:
        self._expire()
        return len(self._sessions)

    def _expire(self) -> None:
        now = self._clock()
        while self._sessions:
            oldest, (seen, _) = next(iter(self._sessions.items()))
            if now - seen < self._ttl:
                break
            del self._sessions[oldest]

    def given(self, session_id: str) -> frozenset[str]:
        """The keys already given in ``session_id`` (empty for a new or expired one)."""
        self._expire()
        entry = self._sessions.get(session_id)
        return frozenset(entry[1]) if entry is not None else frozenset()

    def add(self, session_id: str, keys: Iterable[str]) -> None:
        """Record ``keys`` as given in ``session_id`` (which becomes the most recent)."""
        self._expire()
        _, items = self._sessions.pop(session_id, (0.0, OrderedDict()))
        for key in keys:
            items.pop(key, None)
            items[key] = None
        while len(items) > self._max_items:
            items.popitem(last=False)
        self._sessions[session_id] = (self._clock(), items)
        while len(self._sessions) > self._max_sessions:
            self._sessions.popitem(last=False)
