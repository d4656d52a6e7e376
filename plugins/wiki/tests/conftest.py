"""Fixtures for goat-wiki tests: a fresh GOAT home per test, wikis built the way a host builds
them (through the spec's factory), closed after the test; the shared folder-store fixtures
(:mod:`goat_core.testing.fixtures`)."""

from __future__ import annotations

from collections.abc import Iterator

import hypothesis
import pytest
from wiki_helpers import MakeWiki

from goat_core.host import GoatHome
from goat_core.testing.fixtures import folder_stores, home, vault  # noqa: F401 (fixtures)
from goat_wiki.plugin import spec

# Property tests check behaviour, never speed: on a loaded, shared CI machine one example that
# touches the disk (fsync) or waits for the scheduler can outlast hypothesis's default 200 ms
# deadline, which fails the run with DeadlineExceeded or "Unreliable test timings" although the
# code is correct. ``--hypothesis-profile`` on the command line still takes precedence.
hypothesis.settings.register_profile(
    "goat", deadline=None, suppress_health_check=[hypothesis.HealthCheck.too_slow]
)
hypothesis.settings.load_profile("goat")


@pytest.fixture
def wiki(home: GoatHome) -> Iterator[MakeWiki]:  # noqa: F811 (the imported fixture)
    """``wiki(root=None, scope=None, **settings) -> WikiProvider``; closed after the test.
    Tests await its methods (``pytestmark = pytest.mark.anyio``)."""
    with folder_stores(spec(), home) as make:
        yield make


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
