"""The optional toolkit for folder-of-Markdown providers.

:class:`FolderStoreProvider` is the base class of a provider keeping one folder of Markdown
files per scope; :class:`FolderStoreSettings` and :data:`StoreRoot` its ``root`` setting.

Cheap to import: a plugin's settings module imports this package, so names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from goat_core.filestore._store import (
        FolderStoreProvider,
        FolderStoreSettings,
        StoreRoot,
        absolute_store_root,
    )

__all__ = ["FolderStoreProvider", "FolderStoreSettings", "StoreRoot", "absolute_store_root"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from goat_core.filestore import _store

        return getattr(_store, name)
    raise AttributeError(f"module 'goat_core.filestore' has no attribute {name!r}")
