"""The built-in plugins; moved to :mod:`goat_core.plugins.builtin` (the modules here
re-export theirs)."""
