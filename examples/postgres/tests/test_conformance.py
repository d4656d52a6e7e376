"""The shared conformance suite against a real PostgreSQL server, with the fault fixture."""

from __future__ import annotations

import pytest
from pg_faults import PgFaults
from pg_server import GUARDED

from goat_core.host import GoatHome
from goat_core.testing import ProviderConformanceTests, closing_server, refused_url, spec_factory
from goat_postgres.plugin import SPEC


class TestPostgresConformance(ProviderConformanceTests):
    entry_point_name = "postgres"
    provider_name = "postgres"

    @pytest.fixture
    def goat_provider_factory(self, tmp_path, pg_server, namespace):
        settings = {"url": pg_server.url, "namespace": namespace}  # user goat: trusted
        return spec_factory(SPEC, GoatHome.at(tmp_path / "home"), settings=settings)

    @pytest.fixture
    def goat_faults(self):
        return PgFaults()

    @pytest.fixture
    def goat_connection_failures(self, tmp_path, pg_server, namespace, goat_secret):
        """Refused, a wrong password (the real server: its password is another one), closed."""
        home = GoatHome.at(tmp_path / "home")

        def factory(url: str):
            settings = {"url": url, "namespace": namespace, "user": GUARDED}
            return spec_factory(SPEC, home, settings=settings, get_credential=lambda _: goat_secret)

        with closing_server("postgresql") as closed:
            yield {
                "refused": factory(refused_url("postgresql")),
                "wrong_credential": factory(pg_server.url),
                "closed": factory(closed),
            }
