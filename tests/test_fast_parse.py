"""The plain ``goat recall`` form a running server may answer (goat_core/cli/_fast.py): each
form it takes is one click parses to the same values, and anything else is left to the full
run. The real server's answers are tested in tests/serve/test_fast_recall.py."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goat_core.cli._fast import _parse, _Recall
from goat_core.cli._memory import recall_cmd

TAKEN = [
    (["recall", "q"], _Recall("q", 10, None, None, False)),
    (["recall", "q", "--json"], _Recall("q", 10, None, None, True)),
    (["recall", "--pen", "Docs", "q"], _Recall("q", 10, "Docs", None, False)),
    (["recall", "q", "--pen=docs", "--limit=100"], _Recall("q", 100, "docs", None, False)),
    (["recall", "q", "--limit", "1", "--home", "h"], _Recall("q", 1, None, "h", False)),
    (["recall", "--", "-q"], _Recall("-q", 10, None, None, False)),
    (["recall", "two words"], _Recall("two words", 10, None, None, False)),
    (["recall", ""], _Recall("", 10, None, None, False)),  # the server refuses it: full run
]

LEFT = [
    [],
    ["recall"],
    ["pages"],
    ["--home", "h", "recall", "q"],
    ["recall", "q", "--help"],
    ["recall", "q", "r"],
    ["recall", "q", "--limit", "0"],
    ["recall", "q", "--limit", "101"],
    ["recall", "q", "--limit", "-1"],
    ["recall", "q", "--limit", "1_0"],
    ["recall", "q", "--limit", "٣"],  # a digit, not an ASCII one
    ["recall", "q", "--limit"],
    ["recall", "q", "--pen", ""],
    ["recall", "q", "--pen", "a", "--pen", "b"],
    ["recall", "q", "--home", " "],
    ["recall", "q", "--json", "--json"],
    ["recall", "q", "--json=1"],
    ["recall", "q", "-j"],
    ["recall", "\udcff"],  # a byte of argv that is not UTF-8
]


@pytest.mark.parametrize("args, want", TAKEN, ids=[" ".join(a) for a, _ in TAKEN])
def test_the_plain_forms_are_taken(args: list[str], want: _Recall) -> None:
    assert _parse(args) == want


@pytest.mark.parametrize("args", LEFT, ids=[repr(a) for a in LEFT])
def test_every_other_form_is_left_to_the_full_run(args: list[str]) -> None:
    assert _parse(args) is None


WORDS = st.sampled_from(
    ["--limit", "--pen", "--home", "--json", "--", "--help", "-x", "--limit=5", "--pen=a",
     "5", "0", "100", "101", "007", "docs", "Docs", "-1", "", " ", "q", "two words", "=", "-"]
)  # fmt: skip


def _click_values(args: list[str]) -> dict[str, object] | None:
    try:
        ctx = recall_cmd.make_context("recall", list(args))
    except click.exceptions.Exit:
        return None
    except click.UsageError:
        return None
    return dict(ctx.params)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(WORDS, st.text(max_size=4)), max_size=6))
def test_a_taken_form_is_what_click_parses(args: list[str]) -> None:
    got = _parse(["recall", *args])
    if got is None:
        return
    assert _click_values(args) == {
        "query": got.query,
        "limit": got.limit,
        "pen": got.pen,
        "as_json": got.as_json,
        "home": Path(got.home) if got.home is not None else None,
    }


def test_a_closed_pipe_exits_1_as_the_full_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The exact input: stdout's reader gone (``| head -c 1``) while the answer is written."""
    import io

    from goat_core.cli import _fast
    from goat_core.serve import _local

    answer = {"scope": "global", "items": [], "complete": True, "degraded": []}
    sock = tmp_path / "s.sock"
    sock.touch()
    monkeypatch.setattr(_local, "socket_path", lambda data_dir, key: sock)
    monkeypatch.setattr(_local, "ask_recall", lambda *a: answer)

    class Closed(io.TextIOWrapper):
        def write(self, text: str) -> int:
            raise BrokenPipeError

    out = Closed(open(tmp_path / "out", "wb"), encoding="utf-8")
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setenv("GOAT_HOME", str(tmp_path / "home"))
    assert _fast.answered(["recall", "q"]) == 1
