"""The shared provider conformance suite, run against goat-markdown (default stores under a fresh
GOAT home; read-only and full stores injected)."""

from __future__ import annotations

from goat_core.testing import FolderStoreConformanceTests
from goat_markdown.plugin import spec


class TestMarkdownConformance(FolderStoreConformanceTests):
    entry_point_name = provider_name = "markdown"
    folder_spec = staticmethod(spec)
