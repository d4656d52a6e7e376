"""``python -m goat_core.cli``: the ``goat`` command."""

from goat_core.cli import main

main()
