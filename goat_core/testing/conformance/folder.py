"""The suite for providers built on :class:`~goat_core.filestore.FolderStoreProvider`: the
provider factory and the fault fixture every folder store writes the same way."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import pytest

from goat_core.contract import ProviderSpec
from goat_core.testing.conformance.base import ProviderFactory, spec_factory
from goat_core.testing.conformance.faults import FolderFaults
from goat_core.testing.conformance.suite import ProviderConformanceTests


class FolderStoreConformanceTests(ProviderConformanceTests):
    """:class:`ProviderConformanceTests` for a folder store: set ``entry_point_name``,
    ``provider_name`` and ``folder_spec`` (a function returning the provider's spec)::

        class TestNotesConformance(FolderStoreConformanceTests):
            entry_point_name = provider_name = "notes"
            folder_spec = staticmethod(spec)

    Each scope gets its default store (no ``root``) under a fresh GOAT home, and the fault
    tests inject read-only and full stores under the store folder (:class:`FolderFaults`).
    """

    folder_spec: ClassVar[Callable[[], ProviderSpec]]

    @pytest.fixture
    def goat_provider_factory(self, tmp_path: Path) -> ProviderFactory:
        """Default stores (no ``root``) under a fresh GOAT home: one empty store per scope."""
        from goat_core.contract import GoatHome

        return spec_factory(type(self).folder_spec(), GoatHome.at(tmp_path / "goat-home"))

    @pytest.fixture
    def goat_faults(self) -> FolderFaults:
        """Read-only and full stores (OS errors injected under the store folder)."""
        return FolderFaults()
