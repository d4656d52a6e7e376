"""What a running server says on stderr while a store embeds notes for semantic recall, and
the host it runs (:func:`server_host`).

A store's first semantic recall embeds every note (minutes for a large vault, and recalls of
that scope wait meanwhile; docs/design.md, Known gaps). The CLI draws a bar for it
(``goat_core/cli/_memory.py``); a server has no terminal of its own (stdio: the MCP host
keeps its stderr as a log), so it writes lines instead: when embedding starts, at each
quarter, and when it is done, with the time taken. Never on stdout (in stdio mode the
protocol's stream).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from goat_core.host import GoatHome, MemoryHost
    from goat_core.plugins import Registry

#: Fewer notes to embed than this and nothing is said (a few notes take well under a
#: second), as in the CLI.
MIN_NOTES = 20


class ServeEmbedProgress:
    """``embed_progress(done, total)`` in notes for :class:`~goat_core.host.MemoryHost` in
    ``goat serve``. Called from each store's worker thread; the state is kept per thread, so
    two scopes of one HTTP server embedding at once each get their own lines.

    :param stream: where lines go; default the current ``sys.stderr``.
    :param clock: seconds, for the time taken (``time.monotonic``).
    """

    def __init__(
        self, stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._stream = stream
        self._clock = clock
        self._state = threading.local()

    def _say(self, line: str) -> None:
        out = self._stream if self._stream is not None else sys.stderr
        if out is None:  # started with stderr closed: Python has no sys.stderr
            return
        try:
            out.write(f"goat serve: {line}\n")
            out.flush()
        except (OSError, ValueError, AttributeError):  # a closed or broken stderr never
            pass  # fails a recall

    def __call__(self, done: int, total: int) -> None:
        if total < MIN_NOTES:
            return
        state = self._state
        if done <= 0 or getattr(state, "total", None) != total:
            state.total, state.start, state.quarter = total, self._clock(), 1
            self._say(
                f"embedding {total} notes for semantic recall (recalls answer meanwhile, "
                "with the vectors embedded so far)…"
            )
            if done <= 0:
                return
        if done >= total:
            took = self._clock() - state.start
            self._say(f"embedded {total} notes in {took:.0f} s")
            state.total = None
            return
        passed = state.quarter
        while state.quarter < 4 and done * 4 >= total * state.quarter:
            state.quarter += 1
        if state.quarter > passed:
            self._say(f"embedding: {done}/{total} notes")


def server_host(home: GoatHome | None, registry: Registry) -> MemoryHost:
    """The host a ``goat serve`` (stdio or HTTP) runs: a store embeds on a thread of its own
    while recalls answer (``embed_in_background``), and says so on stderr
    (:class:`ServeEmbedProgress`)."""
    from goat_core.host import MemoryHost

    return MemoryHost(
        home=home,
        registry=registry,
        embed_progress=ServeEmbedProgress(),
        embed_in_background=True,
    )
