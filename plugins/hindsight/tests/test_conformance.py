"""The shared provider conformance suite, run against goat-hindsight and a real Hindsight
server (a fresh bank per test, created through Hindsight's REST API)."""

from __future__ import annotations

from pathlib import Path

import pytest
from live_server import LiveServer, guarded_factory

from goat_core.host import GoatHome
from goat_core.testing import (
    ProviderConformanceTests,
    closing_server,
    refused_url,
    remote_mcp_server,
)
from goat_core.testing.conformance import ProviderFactory, spec_factory
from goat_hindsight.plugin import spec
from goat_hindsight.settings import HindsightSettings

pytestmark = pytest.mark.live


class TestHindsightConformance(ProviderConformanceTests):
    entry_point_name = provider_name = "hindsight"
    eventual_timeout = 60.0  # a retain lands in ~1 s here; a loaded CI machine takes longer
    stateful_page_limit = 100  # list_memories takes 1..100 per page

    @pytest.fixture
    def goat_provider_factory(self, tmp_path: Path, live_server: LiveServer) -> ProviderFactory:
        """One fresh, empty bank per test; every scope selects that same shared bank."""
        settings = HindsightSettings(base_url=live_server.url, bank_id=live_server.create_bank())
        return spec_factory(
            spec(),
            GoatHome.at(tmp_path / "goat-home"),
            settings=settings.model_dump(),
            http_client=guarded_factory(settings),
        )

    @pytest.fixture
    def goat_connection_failures(self, tmp_path: Path, goat_secret: str):
        """Refused; a server whose 401 quotes the Authorization header; a closed connection."""
        home = GoatHome.at(tmp_path / "failing-home")

        def factory(url: str) -> ProviderFactory:
            settings = HindsightSettings(base_url=url, bank_id="bank")
            return spec_factory(
                spec(),
                home,
                settings=settings.model_dump(),
                get_credential=lambda _: goat_secret,
            )

        with remote_mcp_server("auth") as hostile, closing_server("http") as closed:
            yield {
                "refused": factory(refused_url("http")),
                "wrong_credential": factory(hostile.url),
                "closed": factory(closed),
            }
