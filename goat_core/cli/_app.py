"""The ``goat`` group with every built-in command: what ``goat_core.cli.cli`` names. Each
command's module is imported when the command is first asked for (:data:`BUILTIN`), so a
command imports only its own module's dependencies (``goat hook`` no pydantic models of
``goat bind``)."""

from __future__ import annotations

from goat_core.cli._root import EXIT_INTERRUPTED as EXIT_INTERRUPTED
from goat_core.cli._root import GoatGroup as GoatGroup
from goat_core.cli._root import cli
from goat_core.cli._root import main as main

#: Each built-in command's name and the module whose ``COMMANDS`` holds it
#: (tests/test_lazy_namespaces.py holds this table equal to those lists).
BUILTIN: dict[str, str] = {
    **dict.fromkeys(
        ("plugins", "providers", "scope", "bind", "unbind", "disable", "enable", "check", "status"),
        "goat_core.cli._admin",
    ),
    **dict.fromkeys(["embedders", "rerankers"], "goat_core.cli._embedders"),
    **dict.fromkeys(
        (
            "remember",
            "feedback",
            "refresh",
            "forget",
            "recall",
            "reflect",
            "pages",
            "show",
            "reindex",
        ),
        "goat_core.cli._memory",
    ),
    "map": "goat_core.cli._map",
    **dict.fromkeys(["serve", "serve-token", "hook", "doctor"], "goat_core.cli._serve"),
    **dict.fromkeys(["copy", "export", "import"], "goat_core.cli._transfer"),
}

cli.lazy_commands = dict(BUILTIN)
