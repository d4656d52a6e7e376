"""Deprecated: ``goat_core.provider`` is an old path; import from :mod:`goat_core.contract`
instead.

This module was the provider interface (``StoreWorker``: :mod:`goat_core.filestore`), before
goat_core was laid out in packages. It re-exports its old names unchanged and warns
(``DeprecationWarning``) when imported.
"""

import warnings

from goat_core.contract import (
    Access,
    ModelTool,
    PolicyGate,
    Provider,
    ProviderContext,
    ProviderOperation,
    SyncProvider,
)
from goat_core.filestore._worker import StoreWorker

__all__ = [
    "Access",
    "ModelTool",
    "PolicyGate",
    "ProviderOperation",
    "Provider",
    "ProviderContext",
    "StoreWorker",
    "SyncProvider",
]

__deprecated__ = "goat_core.contract"

warnings.warn(
    "goat_core.provider is deprecated; import from goat_core.contract instead",
    DeprecationWarning,
    stacklevel=2,
)
