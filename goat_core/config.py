"""Former home of memory.json (bindings and scope selection), now in :mod:`goat_core.host`:
re-exports the names this module had (import them from :mod:`goat_core.host`)."""

from goat_core.host._config import (
    CURRENT_SCHEMA,
    Config,
    LegacyBinding,
    LegacyDecoder,
    binding_id_for,
    legacy_decoders,
    load_config,
    save_config,
    write_owner_only,
)

__all__ = [
    "CURRENT_SCHEMA",
    "Config",
    "LegacyBinding",
    "LegacyDecoder",
    "binding_id_for",
    "legacy_decoders",
    "load_config",
    "save_config",
    "write_owner_only",
]
