"""The provider interface, at its old path: re-exported from :mod:`goat_core.contract`
(``StoreWorker`` from :mod:`goat_core.filestore`)."""

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
