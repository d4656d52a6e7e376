"""``goat serve``'s embedding lines (goat_core/serve/_progress.py): when a store starts
embedding, at each quarter, and when done, on the stream given; per thread; never raising."""

from __future__ import annotations

import io
import sys
import threading

import pytest

from goat_core.serve._progress import MIN_NOTES, ServeEmbedProgress


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_start_quarters_and_done_with_the_time_taken() -> None:
    out, clock = io.StringIO(), _Clock()
    progress = ServeEmbedProgress(out, clock)
    progress(0, 100)
    for done in (10, 25, 30, 60, 99):
        progress(done, 100)
    clock.now += 42.4
    progress(100, 100)
    assert out.getvalue().splitlines() == [
        "goat serve: embedding 100 notes for semantic recall (recalls answer meanwhile, "
        "with the vectors embedded so far)…",
        "goat serve: embedding: 25/100 notes",
        "goat serve: embedding: 60/100 notes",
        "goat serve: embedding: 99/100 notes",
        "goat serve: embedded 100 notes in 42 s",
    ]


def test_a_jump_past_several_quarters_is_one_line_and_small_stores_are_quiet() -> None:
    out = io.StringIO()
    progress = ServeEmbedProgress(out, _Clock())
    progress(0, MIN_NOTES - 1)
    progress(MIN_NOTES - 1, MIN_NOTES - 1)
    assert out.getvalue() == ""
    progress(0, 40)
    progress(35, 40)
    progress(40, 40)
    lines = out.getvalue().splitlines()
    assert lines[1:] == [
        "goat serve: embedding: 35/40 notes",
        "goat serve: embedded 40 notes in 0 s",
    ]


def test_a_sync_seen_only_midway_still_starts_with_its_total() -> None:
    """A sink first called past 0 (another sync's total) says what it embeds first."""
    out = io.StringIO()
    progress = ServeEmbedProgress(out, _Clock())
    progress(0, 30)
    progress(10, 50)
    assert out.getvalue().splitlines()[1].startswith("goat serve: embedding 50 notes")


def test_each_worker_thread_keeps_its_own_count() -> None:
    out = io.StringIO()
    progress = ServeEmbedProgress(out, _Clock())
    progress(0, 100)
    other = threading.Thread(target=lambda: (progress(0, 40), progress(40, 40)))
    other.start()
    other.join()
    progress(100, 100)
    lines = out.getvalue().splitlines()
    assert "goat serve: embedded 40 notes in 0 s" in lines
    assert lines[-1] == "goat serve: embedded 100 notes in 0 s"


def test_a_closed_stderr_never_fails_the_recall() -> None:
    out = io.StringIO()
    out.close()
    progress = ServeEmbedProgress(out, _Clock())
    progress(0, 100)
    progress(100, 100)


def test_no_stderr_at_all_never_fails_the_recall(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server started with fd 2 closed has ``sys.stderr = None``."""
    monkeypatch.setattr(sys, "stderr", None)
    progress = ServeEmbedProgress()
    progress(0, 100)
    progress(50, 100)
    progress(100, 100)
