"""A real PostgreSQL server on a loopback port, started once per session; a fresh namespace per
test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from pg_server import PgServer, run_postgres


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """The shared server: fsync and synchronous_commit on, scram-sha-256 passwords."""
    with run_postgres() as server:
        yield server


@pytest.fixture
def namespace() -> str:
    """A fresh namespace: every test starts from an empty world on the shared server."""
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def anyio_backend() -> str:
    """psycopg's async API runs on asyncio only."""
    return "asyncio"
