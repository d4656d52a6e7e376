"""The shared provider conformance suite, run against goat-wiki."""

from __future__ import annotations

from pathlib import Path

import pytest
from goat_core.host import GoatHome
from goat_core.testing import FolderFaults, ProviderConformanceTests
from goat_core.testing.conformance import ProviderFactory, spec_factory

from goat_wiki.plugin import spec


class TestWikiConformance(ProviderConformanceTests):
    entry_point_name = provider_name = "wiki"

    @pytest.fixture
    def goat_provider_factory(self, tmp_path: Path) -> ProviderFactory:
        """Default wikis (no ``root``) under a fresh GOAT home: one new wiki per scope."""
        return spec_factory(spec(), GoatHome.at(tmp_path / "goat-home"))

    @pytest.fixture
    def goat_faults(self) -> FolderFaults:
        """Read-only and full stores (OS errors injected under the store folder)."""
        return FolderFaults()
