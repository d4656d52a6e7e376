"""Output helpers of the ``goat`` commands: stderr lines, tables, JSON, error exits."""

from __future__ import annotations

import os
import sys
from typing import Any, NoReturn

import click

from goat_core.cli._view import error_line, json_text
from goat_core.cli._view import one_line as _one_line
from goat_core.cli._view import table as _table  # noqa: F401 (the commands import it here)
from goat_core.errors import Ambiguous, GoatError
from goat_core.logs import visible_cell, visible_controls

_BUILTIN_DEBUG_ENV = "GOAT_DEBUG"


# -- output helpers ------------------------------------------------------------------------
def _debug() -> bool:
    return os.environ.get(_BUILTIN_DEBUG_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def _shown(text: str) -> str:
    """``text`` from notes made safe for a terminal (:func:`goat_core.logs.visible_controls`)."""
    return visible_controls(text)


def _cell(text: str) -> str:
    """``text`` from notes for one table cell or line: :func:`_shown`, with tab and newline
    shown too (:func:`goat_core.logs.visible_cell`)."""
    return visible_cell(text)


def _err(message: str) -> None:
    """One line on stderr; secrets are redacted (an error may quote a server), control
    characters shown (:func:`_shown`)."""
    click.echo(error_line(message), err=True)


#: Where :func:`emit_json` writes once :func:`reserve_stdout` ran (the real stdout).
_json_fd: int | None = None


def reserve_stdout() -> None:
    """Keep stdout for :func:`emit_json` alone: fd 1 and ``sys.stdout`` go to stderr, so a
    plugin that prints (at import or in a hook) never breaks ``--json`` output. Run before
    any plugin is imported."""
    global _json_fd
    if _json_fd is not None:
        return
    sys.stdout.flush()
    _json_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr


def emit_json(data: Any, *, line: bool = False) -> None:
    """Print ``data`` as indented JSON on stdout (non-ASCII kept, other values as ``str``);
    with ``line``, as one line (a stream of JSON lines)."""
    text = json_text(data, line=line)
    if _json_fd is None:
        click.echo(text)
        return
    payload = (text + "\n").encode("utf-8")
    while payload:
        payload = payload[os.write(_json_fd, payload) :]


def _fail(exc: GoatError) -> NoReturn:
    """Report a deliberate error as one line (plus candidates) and exit with its code."""
    _err(f"goat: error: {_one_line(exc.message if hasattr(exc, 'message') else str(exc))}")
    message = str(exc)
    if isinstance(exc, Ambiguous) and not all(c in message for c in exc.candidates):
        for candidate in exc.candidates:  # one a line, unless the message named them all
            _err(f"  {candidate}")
    raise click.exceptions.Exit(exc.exit_code)


def _to_json(value: Any) -> Any:
    if hasattr(value, "to_json"):
        return value.to_json()
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    return value
