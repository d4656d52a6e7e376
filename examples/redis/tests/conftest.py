"""A real redis-server on a loopback port, started once per session; a fresh namespace per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from redis_server import DURABLE, RedisServer, run_redis


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """The shared server: durable (AOF, fsync always), no snapshots."""
    with run_redis(tmp_path_factory.mktemp("redis"), *DURABLE) as server:
        yield server


@pytest.fixture
def namespace() -> str:
    """A fresh key namespace: every test starts from an empty world on the shared server."""
    return f"t-{uuid.uuid4().hex[:12]}"
