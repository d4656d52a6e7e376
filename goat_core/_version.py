"""The one version number of goat-core and every in-tree plugin distribution: the text of
``goat_core/VERSION``, which each plugin's ``pyproject.toml`` reads through its own
``VERSION`` link."""

from pathlib import Path

__version__ = Path(__file__).with_name("VERSION").read_text(encoding="ascii").strip()
