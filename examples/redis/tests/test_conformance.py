"""The shared conformance suite against a real redis-server, with the fault fixture."""

from __future__ import annotations

import pytest
from redis_faults import RedisFaults

from goat_core.host import GoatHome
from goat_core.testing import ProviderConformanceTests, spec_factory
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
