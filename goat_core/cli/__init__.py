"""The ``goat`` command line: a thin layer over :class:`goat_core.host.SyncMemoryHost`.

Commands (``goat COMMAND --help`` for each)::

    plugins [--check] [--json]            installed plugins, their providers and load failures
    providers [--json]                    providers with capabilities and settings JSON schema
    scope [--json]                        the scope the current directory resolves to
    bind (--global | --pen ID) PROVIDER [--set KEY=VALUE ...] [--credential-stdin] [--no-connect]
    unbind | disable | enable (--global | --pen ID)
    check [--pen ID | --global] [--set KEY=VALUE ...]
    status [--json] [--watch]
    remember TEXT [--title T]     feedback TEXT [--on PAGE]     forget PAGE
    recall QUERY [--limit N]      reflect QUERY                 pages [--limit N] [--cursor C]
    show PAGE                     map [--html FILE]             reindex
    copy PAGE... (--to-pen ID | --to-global) [--rename] [--dry-run]
    export DIR [--force]          import DIR [--rename] [--dry-run] [--resend-unknown]
    embedders [--json]            embedders fetch NAME [URL]     rerankers [--json]

Every memory command takes ``--pen ID`` (default: Global), ``--json`` and ``--home DIR``
(default ``$GOAT_HOME``, else the platform directories), placed after the subcommand.
Plugins add their own subcommands through the ``goat_register_commands`` hook; they are
looked up only when a name that is not built in is asked for (or for ``--help``).

Exit codes (``GoatError.exit_code``)::

    0  ok (a queued write included)       4  not supported by the provider
    1  internal error                      5  conflict, or rejected (also a rejected receipt)
    2  bad input (click usage errors too)  6  unavailable, auth, credentials, unwritable
                                           store (full or read-only), plugin failures
    3  not found or ambiguous              130 interrupted

Errors are one line on stderr (``goat: error: ...``); an ambiguous page reference also lists
its candidates. An unexpected exception prints one line plus a hint to rerun with
``GOAT_DEBUG=1``, which prints the traceback. ``--json`` output is the only thing on stdout.

Plugin commands get the core commands' own options and helpers from this package:
:func:`pen_option` (``--pen ID``), :func:`home_option` (``--home DIR``), :func:`json_option`
(``--json``), :func:`memory_options` (all three), :func:`open_memory` (a scope's memory
context, opened exactly as ``goat recall`` opens it), :func:`open_host` (the
:class:`~goat_core.host.SyncMemoryHost` behind it) and :func:`emit_json` (the JSON printer
of every ``--json``)::

    @click.command("digest")
    @memory_options
    def digest(pen: str | None, as_json: bool, home: Path | None) -> None:
        with open_memory(home, pen) as memory:
            listing = memory.list_pages(limit=20)
        ...

Import cost: importing this package imports nothing but its own table of names
(goat_core/_lazy.py). A ``goat recall`` that a running ``goat serve`` of the same home and
scope answers imports no click and no pydantic (goat_core/cli/_fast.py). Run in full, the
host, registry, credential store, HTML map and progress bar are imported by the commands that
use them, so ``goat recall`` never imports ``keyring``, ``mcp`` or ``rich``.
"""

from __future__ import annotations

import os
import sys
import typing
from collections.abc import Sequence

from goat_core import _lazy

if typing.TYPE_CHECKING:
    from goat_core.cli._app import EXIT_INTERRUPTED, GoatGroup, cli
    from goat_core.cli._options import (
        home_option,
        json_option,
        memory_options,
        open_host,
        open_memory,
        pen_option,
    )
    from goat_core.cli._output import emit_json

#: Each name's module, imported on first use (:func:`goat_core._lazy.lazy_module`).
_LAZY = {
    "goat_core.cli._app": ("EXIT_INTERRUPTED", "GoatGroup", "cli"),
    "goat_core.cli._options": (
        "home_option",
        "json_option",
        "memory_options",
        "open_host",
        "open_memory",
        "pen_option",
    ),
    "goat_core.cli._output": ("emit_json",),
}
__getattr__, __dir__ = _lazy.lazy_module(__name__, _LAZY)

__all__ = [
    "EXIT_INTERRUPTED",
    "GoatGroup",
    "cli",
    "emit_json",
    "home_option",
    "json_option",
    "main",
    "memory_options",
    "open_host",
    "open_memory",
    "pen_option",
]


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (``goat``). A plain ``goat recall`` that a running server
    of the same home and scope answers is printed from its answer
    (:func:`goat_core.cli._fast.answered`); everything else runs in full
    (goat_core/cli/_root.py). Started with its stderr closed (``2>&-``), Python has no
    ``sys.stderr``: it becomes ``os.devnull``, so progress and warnings are dropped rather
    than failing the command."""
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # kept for the process
    from goat_core.cli._fast import answered

    code = answered(argv)
    if code is not None:
        sys.exit(code)
    from goat_core.cli._app import main as run

    run(argv)
