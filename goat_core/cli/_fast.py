"""``goat recall`` answered by a running ``goat serve`` of the same home and scope.

A fresh ``goat`` process spends most of a recall importing pydantic, the plugins and the
store; a running server has all of that loaded and its index open. So, before anything
else is imported, :func:`answered` looks for the owner-only socket of the scope's server
(goat_core/serve/_local.py) and, when one answers, prints what the command run in full
prints (goat_core/cli/_view.py renders both). The request carries the version; the server
re-reads bindings on every call.

Only the plain form is answered here: ``recall QUERY`` with ``--limit N``, ``--pen ID``,
``--json`` and ``--home DIR``, each at most once. Anything else (``--help``, another option,
a value that starts with ``-``), ``GOAT_LOG_LEVEL`` debug or info (the recall's own log
lines are asked for), and any answer the server does not give (no server, an
error, a timeout, another version), runs the command in full, which reports errors itself.
No pydantic, click or plugin is imported here (tests/test_fast_recall.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass

#: Seconds the whole exchange with a running server may take before the command runs in
#: full instead (a first scan of a large store can take longer: the full run shows a bar).
ANSWER_TIMEOUT_S = 20.0
#: ``--limit``'s default, as ``goat recall --help`` shows it.
DEFAULT_LIMIT = 10
#: Set to ``1`` to never ask a running server (the command always runs in full).
NO_SERVER_ENV = "GOAT_NO_SERVER"

_VALUED = {"--limit", "--pen", "--home"}
#: ``GOAT_LOG_LEVEL`` values that show a recall's own log lines (the default is warning).
_VERBOSE = {"debug", "info"}


@dataclass(frozen=True)
class _Recall:
    query: str
    limit: int
    pen: str | None
    home: str | None
    as_json: bool


def _parse(args: Sequence[str]) -> _Recall | None:
    """The plain ``recall`` form of ``args``, or ``None`` for anything else."""
    from goat_core.cli._view import RECALL_LIMIT_MAX

    if not args or args[0] != "recall":
        return None
    values: dict[str, str] = {}
    positional: list[str] = []
    as_json = False
    rest = list(args[1:])
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            positional += rest
            break
        if arg == "--json":
            if as_json:
                return None
            as_json = True
            continue
        name, eq, value = arg.partition("=")
        if name in _VALUED:
            if not eq:
                if not rest:
                    return None
                value = rest.pop(0)
            if name in values or not value.strip() or value.startswith("-"):
                return None
            values[name] = value
            continue
        if arg.startswith("-"):
            return None  # --help, another option, a negative number: the full run decides
        positional.append(arg)
    if len(positional) != 1:
        return None
    limit = DEFAULT_LIMIT
    if "--limit" in values:
        raw = values["--limit"]
        if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= RECALL_LIMIT_MAX:
            return None
        limit = int(raw)
    query = positional[0]
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:
        return None  # bytes that are not UTF-8 in argv: the full run reports them
    return _Recall(query, limit, values.get("--pen"), values.get("--home"), as_json)


def _scope_key(pen: str | None) -> str | None:
    from goat_core.contract._penid import normalize_pen_id
    from goat_core.errors import ScopeError

    if pen is None:
        return "global"
    try:
        return f"pen:{normalize_pen_id(pen)}"
    except ScopeError:
        return None


def _utf8(stream: object) -> bool:
    """Whether ``stream`` is there and writes UTF-8 (click gives an ASCII stream a UTF-8
    writer; the full run then prints what this one could not)."""
    encoding = getattr(stream, "encoding", None)
    return isinstance(encoding, str) and encoding.lower().replace("_", "-") in ("utf-8", "utf8")


def answered(argv: Sequence[str] | None = None) -> int | None:
    """Print ``goat recall``'s output from a running server and return the exit code (``0``,
    or ``1`` when stdout closed early, as the full run exits); ``None`` when the command must
    run in full (nothing was printed then)."""
    args = list(argv) if argv is not None else sys.argv[1:]
    if os.environ.get(NO_SERVER_ENV, "").strip() == "1":
        return None
    if os.environ.get("GOAT_LOG_LEVEL", "").strip().lower() in _VERBOSE:
        return None  # the recall's own log lines are asked for: they are this process's
    if not (_utf8(sys.stdout) and _utf8(sys.stderr)):
        return None
    asked = _parse(args)
    if asked is None:
        return None
    from goat_core._version import __version__
    from goat_core.contract._home import GoatHome
    from goat_core.serve._local import ask_recall, socket_path

    key = _scope_key(asked.pen)
    if key is None:
        return None
    home = GoatHome.from_env(asked.home)
    path = socket_path(home.data_dir, key)
    if path is None or not os.path.exists(path):
        return None
    try:
        data = ask_recall(
            path, key, asked.query, asked.limit, __version__, ANSWER_TIMEOUT_S, str(home.config_dir)
        )
    except (OSError, ValueError):
        return None
    try:
        _print(data, asked)
    except BrokenPipeError:
        # as the full run: exit 1, and no second error when Python flushes stdout at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    return 0


def _print(data: dict[str, object], asked: _Recall) -> None:
    from goat_core.cli._view import json_text, recall_lines

    if asked.as_json:
        sys.stdout.write(json_text(data) + "\n")
        sys.stdout.flush()
        return
    styled = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    out, err = recall_lines(data, asked.limit, styled)
    if out is not None:
        sys.stdout.write(out + "\n")
    sys.stdout.flush()
    for line in err:
        sys.stderr.write(line + "\n")
