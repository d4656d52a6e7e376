"""The shared provider conformance suite, run against goat-wiki (default stores under a fresh
GOAT home; read-only and full stores injected)."""

from __future__ import annotations

from goat_core.testing import FolderStoreConformanceTests
from goat_wiki.plugin import spec


class TestWikiConformance(FolderStoreConformanceTests):
    entry_point_name = provider_name = "wiki"
    folder_spec = staticmethod(spec)
