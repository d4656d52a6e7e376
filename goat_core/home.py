"""Former home of GOAT's directories (GoatHome), now in :mod:`goat_core.host`: re-exports the names
this module had (import them from :mod:`goat_core.host`)."""

from goat_core.host._home import (
    APP_NAME,
    GoatHome,
)

__all__ = [
    "APP_NAME",
    "GoatHome",
]
