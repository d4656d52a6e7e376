"""The optional toolkit for providers that keep a folder of Markdown files."""

from goat_core.filestore._worker import StoreWorker

__all__ = ["StoreWorker"]
