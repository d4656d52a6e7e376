"""Fixtures for goat-hindsight's deterministic tests: providers and clients built the way a
host builds them, talking to :class:`FakeHindsight` through an ``httpx2.MockTransport``."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx2
import hypothesis
import pytest
from fake_hindsight import FakeHindsight

from goat_core.contract import Binding, ProviderContext, Scope
from goat_core.host import GoatHome
from goat_hindsight.client import Backoff, Deadlines, HindsightClient
from goat_hindsight.plugin import spec
from goat_hindsight.provider import HindsightProvider
from goat_hindsight.settings import HindsightSettings

pytest_plugins = ["live_server"]

# Property tests check behaviour, never speed: on a loaded, shared CI machine one example that
# touches the disk (fsync) or waits for the scheduler can outlast hypothesis's default 200 ms
# deadline, which fails the run with DeadlineExceeded or "Unreliable test timings" although the
# code is correct. ``--hypothesis-profile`` on the command line still takes precedence.
hypothesis.settings.register_profile(
    "goat", deadline=None, suppress_health_check=[hypothesis.HealthCheck.too_slow]
)
hypothesis.settings.load_profile("goat")


@pytest.fixture(autouse=True)
def _fresh_structlog() -> Any:
    """No global state between tests: ``structlog.testing.capture_logs`` leaves structlog
    marked configured (with its default stdout logger), which would change where the next
    test's logs go."""
    import structlog

    yield
    structlog.reset_defaults()


SENTINEL_KEY = "sk-SENTINEL-7f3a9c1e5b2d4680"
SERVER = "https://hindsight.example"


class FakeClock:
    """Injectable clock and sleep: sleeping advances the clock and is recorded."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def fake() -> FakeHindsight:
    return FakeHindsight("team")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def plain_http_client(**kwargs: Any) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(**kwargs)


def settings(bank: str = "team", base: str = SERVER) -> HindsightSettings:
    return HindsightSettings(base_url=base, bank_id=bank)


def make_client(
    fake: FakeHindsight,
    clock: FakeClock,
    *,
    key: str | None = SENTINEL_KEY,
    **options: Any,
) -> HindsightClient:
    options.setdefault("transport", httpx2.MockTransport(fake))
    return HindsightClient(
        settings(fake.bank_id),
        api_key=lambda: key,
        http_client=plain_http_client,
        backoff=Backoff(rng=random.Random(7), clock=clock),
        sleep=clock.sleep,
        **options,
    )


def make_context(
    home: GoatHome,
    *,
    bank: str = "team",
    key: str | None = SENTINEL_KEY,
    scope: Scope | None = None,
    http_client: Callable[..., Any] | None = plain_http_client,
) -> ProviderContext:
    s = settings(bank)
    return ProviderContext(
        scope=scope or Scope.global_(),
        binding=Binding(id="team-bank", provider="hindsight", settings=s.model_dump()),
        settings=s,
        home=home,
        get_credential=lambda name: key if name == "api_key" else None,
        http_client=http_client,
    )


@pytest.fixture
async def make_provider(
    tmp_path: Path, clock: FakeClock
) -> AsyncIterator[Callable[..., HindsightProvider]]:
    """``make_provider(fake, key=..., scope=..., **provider_options)``; closed after the test."""
    made: list[HindsightProvider] = []
    home = GoatHome.at(tmp_path / "goat-home")

    def make(
        fake: FakeHindsight,
        *,
        key: str | None = SENTINEL_KEY,
        scope: Scope | None = None,
        **options: Any,
    ) -> HindsightProvider:
        options.setdefault("deadlines", Deadlines())
        provider = HindsightProvider(
            make_context(home, bank=fake.bank_id, key=key, scope=scope),
            spec=spec(),
            transport=httpx2.MockTransport(fake),
            backoff=Backoff(rng=random.Random(7), clock=clock),
            sleep=clock.sleep,
            **options,
        )
        made.append(provider)
        return provider

    yield make
    for provider in made:
        await provider.close()
