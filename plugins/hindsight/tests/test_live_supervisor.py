"""The connection supervisor against a real Hindsight 1.1.0 server (docs/design.md,
Remote providers and the supervisor; live): stop the server's API mid-session -> status warn
with the cause, the next turn's read reports failed context without raising; start it
again on the same port -> the next turn or recheck recovers with no manual reconnect; the
server's memory count proves that nothing was replayed.

One process, one :class:`MemoryHost` (async) bound to a bank created through REST; the
API under test is a hindsight-api of its own on the shared database, so stopping it does
not disturb the other live tests, and the count is read through the main API's REST.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from live_server import LiveServer

from goat_core.contract import Receipt, ReceiptStatus, Scope, Tone
from goat_core.errors import GoatError, ProviderUnavailable
from goat_core.host import Chat, GoatHome, MemoryHost, RetryPolicy, SessionState
from goat_core.plugins import PluginSettings, Registry
from goat_hindsight.provider import HindsightProvider

pytestmark = [pytest.mark.live, pytest.mark.anyio]

API = "supervised"
TEAM = Scope.pen("team")
CHAT = Chat(project_id="team")
#: short backoffs so the pre-turn retry is due within the test; a turn may wait for it
POLICY = RetryPolicy(base=0.5, cap=2.0, recheck_interval=15.0, turn_wait=30.0)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def supervised(live_server: LiveServer) -> Any:
    """``(url, port)`` of a hindsight-api this test may stop and start again."""
    url = live_server.start_api(API)
    yield url, int(url.rsplit(":", 1)[1])
    live_server.stop_api(API)


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[MemoryHost]:
    registry = Registry.load(PluginSettings(load=("hindsight",), strict=True))
    async with MemoryHost(
        home=GoatHome.at(tmp_path / "goat-home"), registry=registry, policy=POLICY
    ) as memory_host:
        yield memory_host


def memory_count(live_server: LiveServer, bank: str) -> int:
    """The bank's memory count, read through the main API's REST (not the stopped one)."""
    response = httpx2.get(
        f"{live_server.url}/v1/default/banks/{bank}/memories/list",
        params={"limit": 100},
        timeout=30,
    )
    response.raise_for_status()
    total = response.json()["total"]
    assert isinstance(total, int)
    return total


async def settled_count(live_server: LiveServer, bank: str, expected: int) -> int:
    """Wait (bounded) until the count reaches ``expected``, then watch it stay there: a
    replayed write would show up as one more memory after the retains have settled."""
    deadline = time.monotonic() + 60  # a retain takes ~1 s here, longer on a loaded machine
    count = memory_count(live_server, bank)
    while count < expected and time.monotonic() < deadline:
        await anyio.sleep(0.2)
        count = memory_count(live_server, bank)
    await anyio.sleep(2.0)  # the worker polls every 100 ms: anything replayed lands by now
    return memory_count(live_server, bank)


def row(memory_host: MemoryHost) -> Any:
    return {r.scope: r for r in memory_host.status()}["pen:team"]


async def test_stop_mid_session_warns_fails_the_turn_then_recovers_without_replay(
    live_server: LiveServer, supervised: tuple[str, int], host: MemoryHost
) -> None:
    url, port = supervised
    bank = live_server.create_bank("sup")
    label = f"shared bank `{bank}` on `{url}`"
    outcome = await host.bind(TEAM, "hindsight", {"base_url": url, "bank_id": bank})
    assert outcome.health is not None and outcome.health.ok, outcome.health
    context = host.context_for(CHAT)
    acknowledged: list[Receipt] = []

    # healthy: a write is acknowledged, becomes visible and is recalled before a turn
    receipt = await context.remember("zqsup Carol waters the ferns every Tuesday.")
    assert receipt.status is ReceiptStatus.QUEUED and receipt.operation_id
    acknowledged.append(receipt)
    assert await settled_count(live_server, bank, 1) == 1
    turn = await host.prepare_turn(CHAT, "When does Carol water the ferns?", 2000)
    assert turn.outcome == "ok" and turn.label == label, turn
    assert "zqsup Carol" in turn.block
    assert (
        row(host).tone is Tone.ACCENT
        and row(host).reason == f"{label} reached without authentication"
    )
    session = host.supervisor.session(TEAM.key)
    assert isinstance(session, HindsightProvider) and session.client.connects == 1

    # the API process stops mid-session
    live_server.stop_api(API)

    # the next turn's read fails for this turn only: no exception, no health change
    turn = await host.prepare_turn(CHAT, "When does Carol water the ferns?", 2000)
    assert turn.outcome == "failed" and turn.items == [] and turn.block == "", turn
    assert turn.reason == f"ServerUnavailable: cannot reach `{url}` (ConnectError)", turn
    assert turn.label == label
    status = host.supervisor.status(TEAM.key)
    assert status is not None and status.state is SessionState.HEALTHY  # requests != health

    # a write attempted while down is not acknowledged: unknown receipt or a clear error
    try:
        down = await context.remember("zqsup written while the server was down")
    except GoatError as exc:
        assert isinstance(exc, ProviderUnavailable), exc
        assert exc.exit_code == 6 and f"cannot reach `{url}`" in str(exc)
    else:
        assert down.status in (ReceiptStatus.UNKNOWN, ReceiptStatus.FAILED), down
        assert down.status is not ReceiptStatus.QUEUED and down.reason

    # an explicit check: warn, cause unreachable; status shows the same
    health = await host.check(TEAM)
    assert not health.ok and health.cause == "unreachable", health
    assert health.tone is Tone.WARN
    shown = row(host)
    assert shown.tone is Tone.WARN and shown.cause == "unreachable", shown
    assert shown.label == label  # the shared bank's label, never "Pen `team` memory"
    assert shown.reason.startswith(f"{label}: cannot reach `{url}`")
    refreshed = {r.scope: r for r in await host.refresh(timeout=10)}["pen:team"]
    assert refreshed.tone is Tone.WARN and refreshed.cause == "unreachable"

    # still down: a turn retries within the short backoff, fails closed, never raises
    await anyio.sleep(POLICY.cap)
    turn = await host.prepare_turn(CHAT, "When does Carol water the ferns?", 2000)
    assert turn.outcome == "unavailable" and turn.block == "", turn
    assert turn.reason and "(unreachable; retried on next use)" in turn.reason
    assert turn.label == label

    # the API comes back on the same port: the next turn recovers, no manual reconnect
    live_server.start_api(API, port=port)
    await anyio.sleep(POLICY.cap)  # let the short backoff pass (the turn would not wait)
    turn = await host.prepare_turn(CHAT, "When does Carol water the ferns?", 2000)
    assert turn.outcome == "ok" and "zqsup Carol" in turn.block, turn
    assert row(host).tone is Tone.ACCENT and row(host).cause is None
    assert row(host).label == label

    # the same context goes on writing; nothing written before is sent again
    receipt = await context.remember("zqsup Dave feeds the cat at seven.")
    assert receipt.status is ReceiptStatus.QUEUED and receipt.operation_id
    acknowledged.append(receipt)
    assert await settled_count(live_server, bank, len(acknowledged)) == len(acknowledged)
    pages = await context.list_pages(limit=50)
    titles = sorted(p.title for p in pages.items)
    assert titles == [
        "zqsup Carol waters the ferns every Tuesday.",
        "zqsup Dave feeds the cat at seven.",
    ], titles


async def test_a_recheck_recovers_and_a_lost_session_reinitialises_once(
    live_server: LiveServer, supervised: tuple[str, int], host: MemoryHost
) -> None:
    url, port = supervised
    bank = live_server.create_bank("sup")
    outcome = await host.bind(TEAM, "hindsight", {"base_url": url, "bank_id": bank})
    assert outcome.health is not None and outcome.health.ok
    context = host.context_for(CHAT)
    first = await context.remember("zqsup Erin parks on level three.")
    assert first.status is ReceiptStatus.QUEUED
    assert await settled_count(live_server, bank, 1) == 1

    # a restart between two turns: the published session's MCP session is gone on the
    # server; the next read re-initialises once and resends (the request was not executed)
    session = host.supervisor.session(TEAM.key)
    assert isinstance(session, HindsightProvider)
    connects = session.client.connects
    live_server.stop_api(API)
    live_server.start_api(API, port=port)
    turn = await host.prepare_turn(CHAT, "Where does Erin park?", 2000)
    assert turn.outcome == "ok" and "zqsup Erin" in turn.block, turn
    assert host.supervisor.session(TEAM.key) is session  # same provider, not replaced
    assert session.client.connects == connects + 1

    # stopped: a status recheck (what an open view runs every 15 s) publishes warn
    live_server.stop_api(API)
    await host.supervisor.recheck()
    shown = row(host)
    assert shown.tone is Tone.WARN and shown.cause == "unreachable", shown
    assert shown.label == f"shared bank `{bank}` on `{url}`"

    # started again: the next recheck recovers by itself (no bind, no explicit check)
    live_server.start_api(API, port=port)
    await host.supervisor.recheck()
    status = host.supervisor.status(TEAM.key)
    assert status is not None and status.state is SessionState.HEALTHY, status
    assert row(host).tone is Tone.ACCENT
    result = await context.recall("Where does Erin park?")
    assert [i.title for i in result.items][:1] == ["zqsup Erin parks on level three."]
    # one acknowledged write, one memory: nothing replayed across two restarts
    assert await settled_count(live_server, bank, 1) == 1
