"""goat-markdown: the GOAT Memory provider for a folder of Markdown notes (an Obsidian vault).

The provider itself lives in :mod:`goat_markdown.provider` and is imported only when a store
is opened; :mod:`goat_markdown.plugin` is the cheap entry point.
"""

__version__ = "0.1.0"
