"""The ``goat`` group with every built-in command added: what ``goat_core.cli.cli`` names."""

from __future__ import annotations

from goat_core.cli import _admin, _embedders, _map, _memory, _serve, _transfer
from goat_core.cli._root import EXIT_INTERRUPTED as EXIT_INTERRUPTED
from goat_core.cli._root import GoatGroup as GoatGroup
from goat_core.cli._root import cli
from goat_core.cli._root import main as main

for _command in (
    *_admin.COMMANDS,
    *_embedders.COMMANDS,
    *_memory.COMMANDS,
    *_map.COMMANDS,
    *_serve.COMMANDS,
    *_transfer.COMMANDS,
):
    cli.add_command(_command)
del _command
