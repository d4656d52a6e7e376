"""The shared conformance suite against a real redis-server, with the fault fixture."""

from __future__ import annotations

import pytest
from redis_faults import RedisFaults
from redis_server import DURABLE, run_redis

from goat_core.host import GoatHome
from goat_core.testing import ProviderConformanceTests, closing_server, refused_url, spec_factory
from goat_redis.plugin import SPEC


class TestRedisConformance(ProviderConformanceTests):
    entry_point_name = "redis"
    provider_name = "redis"

    @pytest.fixture
    def goat_provider_factory(self, tmp_path, redis_server, namespace):
        settings = {"url": redis_server.url, "namespace": namespace}
        return spec_factory(SPEC, GoatHome.at(tmp_path / "home"), settings=settings)

    @pytest.fixture
    def goat_faults(self):
        return RedisFaults()

    @pytest.fixture
    def goat_connection_failures(self, tmp_path, namespace, goat_secret):
        """Refused, a wrong password (a real server with another one), a closed connection."""
        home = GoatHome.at(tmp_path / "home")

        def factory(url: str):
            settings = {"url": url, "namespace": namespace}
            return spec_factory(SPEC, home, settings=settings, get_credential=lambda _: goat_secret)

        with (
            run_redis(tmp_path / "auth", *DURABLE, password="the-right-one") as server,
            closing_server("redis") as closed,
        ):
            yield {
                "refused": factory(refused_url("redis")),
                "wrong_credential": factory(server.url),
                "closed": factory(closed),
            }
