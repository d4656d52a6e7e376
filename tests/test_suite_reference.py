"""The conformance suite against the in-tree reference providers.

The reference plugins are found through a throwaway ``.dist-info`` on ``sys.path``, so the
suite's entry-point smoke test goes through the real loader.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from goat_core.host import GoatHome
from goat_core.testing import ProviderConformanceTests, closing_server, refused_url
from goat_core.testing.conformance import ProviderFactory, spec_factory

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE)) if str(HERE) not in sys.path else None

import reference_provider  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def reference_entry_points(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    site = tmp_path_factory.mktemp("site")
    reference_provider.install_entry_points(site)
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    try:
        yield
    finally:
        sys.path.remove(str(site))
        importlib.invalidate_caches()


class TestReferenceConformance(ProviderConformanceTests):
    entry_point_name = provider_name = "reference"

    @pytest.fixture
    def goat_provider_factory(self, tmp_path: Path) -> ProviderFactory:
        return spec_factory(reference_provider.SPEC, GoatHome.at(tmp_path / "home"))

    @pytest.fixture
    def goat_faults(self) -> reference_provider.ReferenceFaults:
        return reference_provider.ReferenceFaults()


class TestReferenceBankConformance(ProviderConformanceTests):
    """Shared bank, eventual consistency, queued receipts, no forget."""

    entry_point_name = provider_name = "reference_bank"
    eventual_timeout = 5.0
    poll_interval = 0.05

    @pytest.fixture
    def goat_provider_factory(self, tmp_path: Path) -> ProviderFactory:
        return spec_factory(
            reference_provider.BANK_SPEC,
            GoatHome.at(tmp_path / "home"),
            settings={"server": "https://bank.example", "bank": "team"},
        )

    @pytest.fixture
    def goat_connection_failures(self, tmp_path: Path, goat_secret: str):
        """Refused; a server refusing AUTH and quoting what it got; a closed connection."""

        def factory(url: str) -> ProviderFactory:
            return spec_factory(
                reference_provider.BANK_SPEC,
                GoatHome.at(tmp_path / "failing"),
                settings={"server": url, "bank": "team"},
                get_credential=lambda _: goat_secret,
            )

        with (
            closing_server("http", answer=lambda got: b"-WRONGPASS you sent: " + got) as hostile,
            closing_server("http") as closed,
        ):
            yield {
                "refused": factory(refused_url("http")),
                "wrong_credential": factory(hostile),
                "closed": factory(closed),
            }


class TestReferenceOnDiskRoot(ProviderConformanceTests):
    """The same provider bound to an explicit folder (``root`` setting)."""

    entry_point_name = provider_name = "reference"

    @pytest.fixture
    def goat_provider_factory(self, tmp_path: Path) -> ProviderFactory:
        return spec_factory(
            reference_provider.SPEC,
            GoatHome.at(tmp_path / "home"),
            settings={"root": str(tmp_path / "vault")},
        )
