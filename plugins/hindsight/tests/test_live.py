"""goat-hindsight against a real Hindsight 1.1.0 server (live cases)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from live_server import LiveServer, live_provider

from goat_core.contract import MemoryWrite, ReceiptStatus, Scope
from goat_core.errors import ProviderUnavailable
from goat_core.host import GoatHome
from goat_core.testing.conformance import eventually
from goat_hindsight.errors import BankNotFound, HindsightAuthError, IncompatibleServer
from goat_hindsight.provider import HindsightProvider

pytestmark = [pytest.mark.live, pytest.mark.anyio]
Make = Callable[..., HindsightProvider]
TOKEN = "goat-live-token-5d1e"


@pytest.fixture
async def make(tmp_path: Path, live_server: LiveServer) -> AsyncIterator[Make]:
    made: list[HindsightProvider] = []
    home = GoatHome.at(tmp_path / "goat-home")

    def build(bank: str, *, url: str | None = None, **kwargs: Any) -> HindsightProvider:
        provider = live_provider(home, url or live_server.url, bank, **kwargs)
        made.append(provider)
        return provider

    yield build
    for provider in made:
        await provider.close()


async def test_remember_is_queued_then_visible_recalled_and_reflected(
    make: Make, live_server: LiveServer
) -> None:
    bank = live_server.create_bank()
    provider = make(bank)
    health = await provider.check()
    assert health.ok, health.reason
    assert (
        health.reason
        == f"shared bank `{bank}` on `{live_server.url}` reached without authentication"
    )
    receipt = await provider.remember(
        MemoryWrite(text="zqlive Alice prefers green tea over coffee.", source="test")
    )
    assert receipt.status is ReceiptStatus.QUEUED and receipt.operation_id

    async def visible() -> str:
        pages = await provider.list_pages(limit=10)
        found = [p for p in pages.items if "zqlive" in p.title]
        assert len(found) == 1, pages
        return found[0].id

    # bounds are generous: a retain takes ~1 s here, several on a slow, loaded CI machine
    page_id = await eventually(visible, 60, interval=0.1)

    # Hindsight runs a retain as a batch_retain parent with child operations: the memory is
    # visible once the child commits, and the parent reads "completed" only a moment later.
    # So the receipt goes queued -> stored, never anything else, within a few seconds.
    async def stored() -> None:
        refreshed = await provider.refresh(receipt)
        if refreshed.status is not ReceiptStatus.QUEUED:
            assert refreshed.status is ReceiptStatus.STORED, refreshed
            return
        raise AssertionError(f"operation {receipt.operation_id} still queued")

    await eventually(stored, 60, interval=0.1)
    page = await provider.get_page(page_id)
    assert page.body == "zqlive Alice prefers green tea over coffee."
    result = await provider.recall("What does Alice drink? green tea", limit=5)
    assert result.items and result.items[0].id == page_id and result.items[0].score > 0
    reflection = await provider.reflect("What does Alice like?")
    assert reflection.text == "mock response" and reflection.scope == "global"
    pen = make(bank, scope=Scope.pen("elsewhere"))
    assert pen.label() == provider.label() == f"shared bank `{bank}` on `{live_server.url}`"


async def test_unknown_bank_is_reported_and_still_absent(
    make: Make, live_server: LiveServer
) -> None:
    bank = f"goat-missing-{time.time_ns() % 10**8}"
    provider = make(bank)
    health = await provider.check()
    assert not health.ok and f"bank `{bank}` not found on `{live_server.url}`" in health.reason
    with pytest.raises(BankNotFound):
        await provider.remember(MemoryWrite(text="must not create the bank"))
    with pytest.raises(BankNotFound):
        await provider.reflect("must not create the bank either")
    with pytest.raises(BankNotFound):
        await provider.recall("anything")
    assert not live_server.bank_exists(bank)


async def test_egress_guard_refuses_an_unbound_url(tmp_path: Path, live_server: LiveServer) -> None:
    from live_server import guarded_factory

    from goat_core.contract import Binding, ProviderContext
    from goat_hindsight.plugin import spec
    from goat_hindsight.settings import HindsightSettings

    bank = live_server.create_bank()
    settings = HindsightSettings(base_url=live_server.url, bank_id=bank)
    other = HindsightSettings(base_url=live_server.url, bank_id="some-other-bank")
    provider = HindsightProvider(
        ProviderContext(
            scope=Scope.global_(),
            binding=Binding(id="live", provider="hindsight", settings=settings.model_dump()),
            settings=settings,
            home=GoatHome.at(tmp_path),
            http_client=guarded_factory(other),  # authorises another bank's URL only
        ),
        spec=spec(),
    )
    try:
        with pytest.raises(ProviderUnavailable, match="egress refused"):
            await provider.recall("q")
    finally:
        await provider.close()


@pytest.fixture(scope="module")
def auth_url(live_server: LiveServer) -> Any:
    url = live_server.start_api("auth", HS_MCP_TOKEN=TOKEN)
    yield url
    live_server.stop_api("auth")


async def test_auth_right_key_works_wrong_key_fails_once_fast(
    make: Make, live_server: LiveServer, auth_url: str
) -> None:
    bank = live_server.create_bank()
    good = make(bank, url=auth_url, key=TOKEN)
    health = await good.check()
    assert health.ok and health.reason.endswith("reached")
    await good.recall("anything")
    statuses: list[int] = []
    bad = make(bank, url=auth_url, key="not-the-token", statuses=statuses)
    started = time.perf_counter()
    with pytest.raises(HindsightAuthError, match="HTTP 401"):
        await bad.recall("q")
    assert statuses == [401]  # one refused request, no retry
    # (the time bounds only catch a hang: the counts above and below are the exact check, and
    # a loaded CI machine can take seconds for one request to a Python server)
    assert time.perf_counter() - started < 10.0
    started = time.perf_counter()
    with pytest.raises(HindsightAuthError):
        await bad.recall("q")
    assert statuses == [401]  # blocked locally: nothing was sent
    assert time.perf_counter() - started < 2.0
    anonymous = make(bank, url=auth_url)
    with pytest.raises(HindsightAuthError, match="requires an API key"):
        await anonymous.recall("q")


async def test_server_restricted_to_fewer_tools_is_refused(
    make: Make, live_server: LiveServer
) -> None:
    url = live_server.start_api("restricted", HS_ENABLED_TOOLS="retain,recall,get_bank")
    try:
        provider = make(live_server.create_bank(), url=url)
        with pytest.raises(IncompatibleServer) as info:
            await provider.recall("q")
        assert info.value.missing == ["get_memory", "list_memories", "reflect"]
        health = await provider.check()
        assert not health.ok and "get_memory, list_memories, reflect" in health.reason
    finally:
        live_server.stop_api("restricted")


async def test_restart_mid_session_recovers_with_one_reinitialise(
    make: Make, live_server: LiveServer
) -> None:
    url = live_server.start_api("restart")
    port = int(url.rsplit(":", 1)[1])
    try:
        provider = make(live_server.create_bank(), url=url)
        await provider.recall("before the restart")
        assert provider.client.connects == 1
        live_server.stop_api("restart")
        live_server.start_api("restart", port=port)
        await provider.recall("after the restart")
        assert provider.client.connects == 2
    finally:
        live_server.stop_api("restart")
