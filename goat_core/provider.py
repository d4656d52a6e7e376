"""The provider interface, at its old path: re-exported from :mod:`goat_core.contract`
(``StoreWorker`` from :mod:`goat_core.filestore`)."""

from goat_core.contract import ModelTool, Provider, ProviderContext, SyncProvider
from goat_core.filestore._worker import StoreWorker

__all__ = [
    "ModelTool",
    "Provider",
    "ProviderContext",
    "StoreWorker",
    "SyncProvider",
]
