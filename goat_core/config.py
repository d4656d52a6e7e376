"""Deprecated: ``goat_core.config`` is an old path; import from
:mod:`goat_core.host._config` instead.

This module was part of the host before goat_core was laid out in packages (see
docs/architecture.md). It re-exports its old names unchanged and warns
(``DeprecationWarning``) when imported.
"""

import warnings

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

__deprecated__ = "goat_core.host._config"

warnings.warn(
    "goat_core.config is deprecated; import from goat_core.host._config instead",
    DeprecationWarning,
    stacklevel=2,
)
