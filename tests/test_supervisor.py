"""The connection supervisor of remote bindings (docs/design.md, Remote providers and the
supervisor), deterministic: no sleeps.

A scripted fake remote provider (``spec.network=True``) talks to in-memory endpoints, one per
``(server, bank)``; each endpoint counts its network checks and can hold them on an anyio
Event, so overlaps, cancellations and late results are arranged exactly. A manual clock
drives backoff and the 15 s recheck. Most tests go through :class:`MemoryHost` (the API
hosts use); a few drive :class:`Supervisor` directly for reconciliation details.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel, ConfigDict, Field

from goat_core import hookimpl
from goat_core.contract import (
    Binding,
    Capability,
    CredentialSpec,
    Health,
    MemoryWrite,
    Provider,
    ProviderContext,
    ProviderSpec,
    RecallItem,
    RecallResult,
    Receipt,
    ReceiptStatus,
    Scope,
    Tone,
)
from goat_core.errors import (
    AuthError,
    BadInput,
    CredentialError,
    NotFound,
    ProviderUnavailable,
    Rejected,
)
from goat_core.host import Chat, GoatHome, MemoryHost
from goat_core.host._supervisor import (
    RetryPolicy,
    SessionState,
    Supervisor,
    Target,
    cause_of_error,
    digest,
)
from goat_core.plugins import PluginSettings, Registry, make_plugin_manager, register_plugin

pytestmark = pytest.mark.anyio

PEN = Scope.pen("team")
BANK1 = {"server": "https://hs.example", "bank": "one"}
BANK2 = {"server": "https://hs.example", "bank": "two"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- the scripted remote ---------------------------------------------------------------------
@dataclass
class Endpoint:
    """One ``(server, bank)`` of the fake network.

    ``mode``: ``up``, ``down`` (unreachable), ``auth`` (the key is refused), ``no_bank``,
    ``missing`` (the server lacks tools) or ``lose_ack`` (writes reach the server, the
    acknowledgement is lost). ``hold()`` makes checks wait until ``release()``.
    """

    mode: str = "up"
    checks: int = 0
    recalls: int = 0
    received: list[str] = field(default_factory=list)
    gate: anyio.Event | None = None
    entered: anyio.Event | None = None

    def hold(self) -> None:
        self.gate, self.entered = anyio.Event(), anyio.Event()

    def release(self) -> None:
        assert self.gate is not None
        self.gate.set()
        self.gate = None


class Network:
    def __init__(self) -> None:
        self.endpoints: dict[tuple[str, str], Endpoint] = {}
        self.built: list[FakeRemote] = []

    def at(self, settings: dict[str, str]) -> Endpoint:
        return self.endpoints.setdefault((settings["server"], settings["bank"]), Endpoint())


class RemoteSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    server: str = Field(pattern=r"^https://[a-z0-9.-]+$")
    bank: str = Field(pattern=r"^[a-z0-9_-]{1,64}$")
    min_score: float = 0.0


class FakeRemote(Provider):
    """A remote provider whose every call goes to its :class:`Endpoint`."""

    def __init__(self, context: ProviderContext, network: Network, spec: ProviderSpec) -> None:
        super().__init__(context)
        self.spec = spec
        settings: Any = context.settings
        self.server, self.bank = settings.server, settings.bank
        self.endpoint = network.at({"server": self.server, "bank": self.bank})
        self.closed = False
        network.built.append(self)

    def label(self) -> str:
        return f"shared bank `{self.bank}` on `{self.server}`"

    def transport_fingerprint(self) -> str:
        key = self.context.get_credential("api_key") or ""
        return digest(self.server, self.bank, hashlib.sha256(key.encode()).hexdigest())

    def _live(self) -> Endpoint:
        if self.closed:
            raise ProviderUnavailable("this client is closed")
        return self.endpoint

    async def check(self) -> Health:
        ep = self._live()
        ep.checks += 1
        if ep.gate is not None:
            assert ep.entered is not None
            ep.entered.set()
            await ep.gate.wait()
        if ep.mode == "down":
            raise ProviderUnavailable(f"cannot reach {self.server}: connection refused")
        if ep.mode == "auth":
            raise AuthError(f"{self.server} refused the API key (HTTP 401)")
        if ep.mode == "no_bank":
            return Health.broken(f"bank `{self.bank}` not found", cause="bank_not_found")
        if ep.mode == "missing":
            raise ProviderUnavailable("server lacks recall", missing=["recall"])
        return Health.healthy(f"{self.label()} reached")

    async def recall(self, query: str, *, limit: int = 10) -> RecallResult:
        ep = self._live()
        ep.recalls += 1
        if ep.mode == "down":
            raise ProviderUnavailable(f"cannot reach {self.server}: connection reset")
        if "REJECT" in query:
            raise Rejected("the recall tool rejected the query", reason="query rejected")
        hits = [
            RecallItem(id=str(n), title=text[:20], score=1.0, snippet=text, text=text)
            for n, text in enumerate(ep.received)
            if any(w in text for w in query.split())
        ]
        return RecallResult(scope=self.scope.key, items=tuple(hits[:limit]))

    async def remember(self, write: MemoryWrite) -> Receipt:
        ep = self._live()
        if ep.mode == "down":
            raise ProviderUnavailable(f"cannot reach {self.server}; nothing was sent")
        ep.received.append(write.text)
        if ep.mode == "lose_ack":
            return Receipt(
                status=ReceiptStatus.UNKNOWN,
                reason="the connection broke after sending; not retried",
                scope=self.scope.key,
            )
        return Receipt(
            status=ReceiptStatus.QUEUED, operation_id=f"op-{len(ep.received)}", scope=self.scope.key
        )

    async def close(self) -> None:
        self.closed = True


def remote_spec(network: Network) -> ProviderSpec:
    def factory(context: ProviderContext) -> Provider:
        return FakeRemote(context, network, spec)

    spec = ProviderSpec(
        name="remote",
        display_name="Scripted remote",
        version="0.0.0",
        capabilities=frozenset({Capability.SHARED_BANK}),
        settings_model=RemoteSettings,
        network=True,
        credentials=(CredentialSpec(name="api_key", description="API key", required=False),),
        factory=factory,
        egress_urls=lambda s: [s.server],
    )
    return spec


class _Plugin:
    def __init__(self, *specs: ProviderSpec) -> None:
        self.specs = list(specs)

    @hookimpl
    def goat_register_providers(self) -> list[ProviderSpec]:
        return self.specs


class ManualClock:
    """Monotonic time that moves only when a test says so."""

    def __init__(self) -> None:
        self.t = 0.0
        self._sleepers: list[tuple[float, anyio.Event]] = []

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        event = anyio.Event()
        self._sleepers.append((self.t + seconds, event))
        await event.wait()

    async def advance(self, seconds: float) -> None:
        await settle()  # whoever is about to sleep registers at the old time first
        self.t += seconds
        for due, event in list(self._sleepers):
            if due <= self.t:
                self._sleepers.remove((due, event))
                event.set()
        await settle()


async def settle(rounds: int = 50) -> None:
    """Let every runnable task run (checkpoints only; no time passes)."""
    for _ in range(rounds):
        await anyio.sleep(0)


@dataclass
class World:
    network: Network
    clock: ManualClock
    home: GoatHome
    registry: Registry

    def host(self) -> MemoryHost:
        return MemoryHost(home=self.home, registry=self.registry, clock=self.clock)

    def ep(self, settings: dict[str, str]) -> Endpoint:
        return self.network.at(settings)


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    monkeypatch.setattr("goat_core.host._credentials.CredentialStore._keyring", lambda self: None)
    network = Network()
    pm = make_plugin_manager(PluginSettings(autoload=False))
    assert register_plugin(pm, _Plugin(remote_spec(network)), "remote-test")
    return World(network, ManualClock(), GoatHome.at(tmp_path / "home"), Registry(pm))


@pytest.fixture
async def host(world: World) -> AsyncIterator[MemoryHost]:
    async with world.host() as h:
        yield h


def row(host: MemoryHost, scope: Scope = PEN) -> Any:
    return next(r for r in host.status() if r.scope == scope.key)


async def healthy(host: MemoryHost, settings: dict[str, str] = BANK1, scope: Scope = PEN) -> None:
    outcome = await host.bind(scope, "remote", dict(settings))
    assert outcome.health is not None and outcome.health.ok, outcome.health


# -- one network check per transport ------------------------------------------------------------
async def test_overlapping_checks_share_one_network_check(host: MemoryHost, world: World) -> None:
    await host.bind(PEN, "remote", dict(BANK1), connect=False)
    await host.bind(Scope.pen("same"), "remote", dict(BANK1), connect=False)
    ep = world.ep(BANK1)
    assert ep.checks == 0  # bound without connecting: not contacted
    ep.hold()
    results: list[Health] = []

    async def check(scope: Scope) -> None:
        results.append(await host.check(scope))

    async with anyio.create_task_group() as tg:
        for scope in (PEN, PEN, PEN, Scope.pen("same")):
            tg.start_soon(check, scope)
        assert ep.entered is not None
        await ep.entered.wait()
        await settle()
        assert ep.checks == 1
        assert row(host).reason == "configured; checking now"
        ep.release()
    assert ep.checks == 1 and len(results) == 4 and all(h.ok for h in results)
    assert row(host).tone is Tone.ACCENT and row(host, Scope.pen("same")).tone is Tone.ACCENT


async def test_a_different_fingerprint_is_a_different_check(host: MemoryHost, world: World) -> None:
    await host.bind(PEN, "remote", dict(BANK1), connect=False)
    await host.bind(Scope.pen("other"), "remote", dict(BANK2), connect=False)
    # same server and bank, another credential: another transport
    await host.bind(Scope.pen("keyed"), "remote", dict(BANK1), api_key="sk-k-1", connect=False)
    world.ep(BANK1).hold()
    world.ep(BANK2).hold()
    async with anyio.create_task_group() as tg:
        for scope in (PEN, Scope.pen("other"), Scope.pen("keyed")):
            tg.start_soon(host.check, scope)
        await settle()
        assert (world.ep(BANK1).checks, world.ep(BANK2).checks) == (2, 1)
        world.ep(BANK1).release()
        world.ep(BANK2).release()


async def test_a_cancelled_caller_does_not_cancel_the_shared_check(
    host: MemoryHost, world: World
) -> None:
    await host.bind(PEN, "remote", dict(BANK1), connect=False)
    ep = world.ep(BANK1)
    ep.hold()
    survivor: list[Health] = []

    async def patient() -> None:
        survivor.append(await host.check(PEN))

    async with anyio.create_task_group() as tg:
        with anyio.CancelScope() as viewer:
            tg.start_soon(patient)
            assert ep.entered is not None
            await ep.entered.wait()
            viewer.cancel()
            await host.check(PEN)  # the viewer gives up here
        assert viewer.cancelled_caught
        ep.release()
    assert ep.checks == 1
    assert survivor and survivor[0].ok
    assert row(host).tone is Tone.ACCENT and row(host).last_checked is not None


async def test_a_cancelled_starter_without_a_task_group_still_completes(world: World) -> None:
    # not entered: the first caller runs the check shielded; others still get its result
    host = world.host()
    try:
        await host.bind(PEN, "remote", dict(BANK1), connect=False)
        ep = world.ep(BANK1)
        ep.hold()
        got: list[Health] = []

        async def second() -> None:
            got.append(await host.check(PEN))

        async with anyio.create_task_group() as tg:
            with anyio.CancelScope() as first:
                tg.start_soon(second)
                await settle()
                first.cancel()
                tg.start_soon(lambda: _release_later(ep))
                await host.check(PEN)
        assert ep.checks == 1 and got and got[0].ok
    finally:
        await host.aclose()


async def _release_later(ep: Endpoint) -> None:
    await settle()
    ep.release()


# -- generations: outdated attempts never publish ----------------------------------------------
async def test_disconnect_during_validation_drops_the_result(
    host: MemoryHost, world: World
) -> None:
    await healthy(host)
    session = host.context_for(Chat("team"))._provider
    ep = world.ep(BANK1)
    ep.hold()
    ep.mode = "down"
    async with anyio.create_task_group() as tg:
        tg.start_soon(host.refresh)
        assert ep.entered is not None
        await ep.entered.wait()  # the probe of the existing session is in flight
        await host.set_enabled(PEN, False)  # disconnect
        assert session.closed  # type: ignore[attr-defined]
        ep.release()
    assert host.supervisor.status(PEN.key) is None
    r = row(host)
    assert r.tone is Tone.DIM and r.cause is None
    assert not host.context_for(Chat("team")).available
    assert ep.checks == 2  # the bind's check and the abandoned probe; nothing after


async def test_a_late_result_after_a_bank_change_is_dropped(host: MemoryHost, world: World) -> None:
    await host.bind(PEN, "remote", dict(BANK1), connect=False)
    old = world.ep(BANK1)
    old.hold()
    async with anyio.create_task_group() as tg:
        tg.start_soon(host.check, PEN)
        assert old.entered is not None
        await old.entered.wait()  # the handshake with bank one is in flight
        outcome = await host.bind(PEN, "remote", dict(BANK2))  # the user moves to bank two
        assert outcome.health is not None and outcome.health.ok
        old.mode = "auth"  # bank one now answers with a failure ...
        old.release()  # ... too late
    r = row(host)
    assert r.tone is Tone.ACCENT and "`two`" in r.reason and r.cause is None
    provider: Any = host.context_for(Chat("team"))._provider
    assert provider.bank == "two" and not provider.closed
    stale = [p for p in world.network.built if p.bank == "one"]
    assert stale and all(p.closed for p in stale)
    assert host.supervisor.status(PEN.key).state is SessionState.HEALTHY  # type: ignore[union-attr]


# -- request errors are not health -------------------------------------------------------------
async def test_request_errors_leave_a_healthy_connection_healthy(
    host: MemoryHost, world: World
) -> None:
    await healthy(host)
    before = row(host)
    ep = world.ep(BANK1)
    ctx = host.context_for(Chat("team"))
    with pytest.raises(Rejected):
        await ctx.recall("REJECT this")  # a tool-level rejection
    ep.mode = "down"
    turn = await ctx.prepare_turn("what did we decide about deploys?", 1000)
    assert turn.outcome == "failed" and "connection reset" in (turn.reason or "")
    ep.mode = "up"
    assert row(host) == before  # unchanged: reads never publish health
    assert host.supervisor.status(PEN.key).state is SessionState.HEALTHY  # type: ignore[union-attr]
    assert ep.checks == 1  # no read turned into a check either
    assert (await ctx.prepare_turn("deploys", 1000)).outcome == "empty"


async def test_an_uncertain_write_is_never_replayed(host: MemoryHost, world: World) -> None:
    await healthy(host)
    ep = world.ep(BANK1)
    ctx = host.context_for(Chat("team"))
    ep.mode = "lose_ack"
    receipt = await ctx.remember("the release train leaves on Thursdays")
    assert receipt.status is ReceiptStatus.UNKNOWN
    ep.mode = "down"
    with pytest.raises(ProviderUnavailable, match="nothing was sent"):
        await ctx.remember("second note")
    ep.mode = "up"
    await host.check(PEN)  # reconnect, recheck, turns: nothing is resent
    await host.refresh()
    await ctx.prepare_turn("release train", 1000)
    await world.clock.advance(60)
    await ctx.prepare_turn("release train", 1000)
    assert ep.received == ["the release train leaves on Thursdays"]


# -- recovery and backoff ----------------------------------------------------------------------
async def test_endpoint_recovery_before_a_turn_within_the_short_backoff(
    host: MemoryHost, world: World
) -> None:
    await healthy(host)
    ep = world.ep(BANK1)
    first = host.context_for(Chat("team"))._provider
    ep.mode = "down"
    await host.refresh()  # the status view's live check: probe fails, a fresh one too
    assert ep.checks == 3
    r = row(host)
    assert (r.tone, r.cause) == (Tone.WARN, "unreachable") and "cannot reach" in r.reason
    ctx = host.context_for(Chat("team"))
    assert not ctx.available and first.closed  # type: ignore[attr-defined]
    turn = await ctx.prepare_turn("anything about deploys", 1000)
    assert turn.outcome == "unavailable" and ep.checks == 3  # backoff (1 s) not over yet
    ep.mode = "up"
    await world.clock.advance(1.0)
    turn = await ctx.prepare_turn("anything about deploys", 1000)
    assert turn.outcome == "empty" and ep.checks == 4  # retried before the turn, recovered
    assert row(host).tone is Tone.ACCENT and ctx.available
    assert ctx._provider is not first  # the transport was replaced after recovery


async def test_backoff_doubles_and_an_explicit_check_retries_at_once(
    host: MemoryHost, world: World
) -> None:
    ep = world.ep(BANK1)
    ep.mode = "down"
    outcome = await host.bind(PEN, "remote", dict(BANK1))
    assert outcome.health is not None and not outcome.health.ok
    status = host.supervisor.status(PEN.key)
    assert status is not None and status.retry_in == 1.0
    await world.clock.advance(1.0)
    await host.prepare_turn(Chat("team"), "deploys please", 500)
    assert ep.checks == 2
    assert host.supervisor.status(PEN.key).retry_in == 2.0  # type: ignore[union-attr]
    await world.clock.advance(1.5)
    await host.prepare_turn(Chat("team"), "deploys please", 500)
    assert ep.checks == 2  # still inside the 2 s backoff
    assert not (await host.check(PEN)).ok and ep.checks == 3  # explicit: at once


async def test_auth_failure_waits_for_a_config_change_or_an_explicit_check(
    host: MemoryHost, world: World
) -> None:
    ep = world.ep(BANK1)
    ep.mode = "auth"
    outcome = await host.bind(PEN, "remote", dict(BANK1), api_key="sk-wrong-1")
    assert outcome.health is not None and outcome.health.cause == "auth"
    r = row(host)
    assert (r.tone, r.cause) == (Tone.WARN, "auth") and "goat check" in r.reason
    ep.mode = "up"  # the server would accept now, but nobody asks it automatically
    await world.clock.advance(3600)
    assert (await host.prepare_turn(Chat("team"), "deploys", 500)).outcome == "unavailable"
    await host.refresh()
    async with host.supervisor.viewing():
        await world.clock.advance(15)
    assert ep.checks == 1
    assert (await host.check(PEN)).ok and ep.checks == 2  # the explicit check
    ep.mode = "auth"
    await host.check(PEN)
    assert row(host).cause == "auth"
    ep.mode = "up"
    outcome = await host.bind(PEN, "remote", dict(BANK1), api_key="sk-right-2")
    assert outcome.health is not None and outcome.health.ok  # a config change retries
    assert row(host).tone is Tone.ACCENT


@pytest.mark.parametrize(
    ("mode", "cause"),
    [("down", "unreachable"), ("no_bank", "not_found"), ("missing", "incompatible")],
)
async def test_warn_tones_name_the_cause(
    host: MemoryHost, world: World, mode: str, cause: str
) -> None:
    world.ep(BANK1).mode = mode
    await host.bind(PEN, "remote", dict(BANK1))
    r = row(host)
    assert (r.tone, r.cause) == (Tone.WARN, cause)
    assert r.to_json()["cause"] == cause and r.last_checked is not None


# -- the 15 s recheck --------------------------------------------------------------------------
async def test_an_open_status_view_rechecks_every_15_seconds(
    host: MemoryHost, world: World
) -> None:
    await healthy(host)
    ep = world.ep(BANK1)
    async with host.supervisor.viewing():
        await world.clock.advance(14.9)
        assert ep.checks == 1
        await world.clock.advance(0.1)
        assert ep.checks == 2  # the probe of the kept session
        ep.mode = "down"
        await world.clock.advance(15)
        assert row(host).cause == "unreachable"
        ep.mode = "up"
        await world.clock.advance(15)
        assert row(host).tone is Tone.ACCENT  # recovered with no manual reconnect
        seen = ep.checks
    await world.clock.advance(60)
    assert ep.checks == seen  # closed view: no more rechecks


async def test_a_view_needs_an_entered_supervisor() -> None:
    with pytest.raises(RuntimeError, match="async with"):
        async with Supervisor().viewing():
            pass


# -- drafts ------------------------------------------------------------------------------------
async def test_an_edited_draft_is_tested_in_isolation(host: MemoryHost, world: World) -> None:
    await healthy(host)
    saved_file = host.home.config_path.read_bytes()
    before = row(host)
    session = host.context_for(Chat("team"))._provider
    world.ep(BANK2).mode = "down"
    draft = await host.check(PEN, draft=dict(BANK2))
    assert not draft.ok and draft.cause == "unreachable"
    world.ep(BANK2).mode = "up"
    assert (await host.check(PEN, draft=dict(BANK2))).ok
    assert host.home.config_path.read_bytes() == saved_file
    assert row(host) == before  # nothing saved was published or touched
    assert host.context_for(Chat("team"))._provider is session and not session.closed  # type: ignore[attr-defined]
    drafts = [p for p in world.network.built if p.bank == "two"]
    assert len(drafts) == 2 and all(p.closed for p in drafts)
    assert world.ep(BANK1).checks == 1


async def test_an_unchanged_draft_refreshes_the_saved_connection(
    host: MemoryHost, world: World
) -> None:
    ep = world.ep(BANK1)
    ep.mode = "auth"
    await host.bind(PEN, "remote", dict(BANK1))
    assert row(host).cause == "auth"
    ep.mode = "up"
    # same server, bank and credential (another non-transport setting is fine)
    draft = await host.check(PEN, draft={**BANK1, "min_score": "0.5"})
    assert draft.ok
    r = row(host)
    assert r.tone is Tone.ACCENT and r.cause is None
    assert host.context_for(Chat("team")).available
    assert ep.checks == 2


# -- reconciliation ----------------------------------------------------------------------------
async def test_rebinding_unchanged_settings_keeps_the_healthy_client(
    host: MemoryHost, world: World
) -> None:
    await healthy(host)
    session = host.context_for(Chat("team"))._provider
    built = len(world.network.built)
    await healthy(host)  # the same binding again: validated, not replaced
    assert host.context_for(Chat("team"))._provider is session
    assert not session.closed  # type: ignore[attr-defined]
    assert len(world.network.built) == built and world.ep(BANK1).checks == 2


def _target(network: Network, home: GoatHome, key: str, settings: dict[str, str]) -> Target:
    spec = remote_spec(network)
    scope = Scope.parse(key)
    binding = Binding(id=key.replace(":", "-"), provider="remote", settings=settings)

    def build() -> Provider:
        context = ProviderContext(
            scope=scope,
            binding=binding,
            settings=RemoteSettings.model_validate(settings),
            home=home,
        )
        return FakeRemote(context, network, spec)

    return Target(
        key=key,
        scope=scope,
        binding=binding,
        spec=spec,
        identity=digest(binding.model_dump(mode="json")),
        build=build,
    )


async def test_reconcile_disconnects_removed_connects_new_keeps_unchanged(
    tmp_path: Path,
) -> None:
    network, home = Network(), GoatHome.at(tmp_path / "h")
    a = _target(network, home, "pen:a", BANK1)
    b = _target(network, home, "pen:b", BANK2)
    c = _target(network, home, "pen:c", {"server": "https://c.example", "bank": "c"})
    async with Supervisor(clock=ManualClock()) as sup:
        sup.reconcile([a, b])
        assert (await sup.check("pen:a")).ok and (await sup.check("pen:b")).ok
        kept, removed = sup.session("pen:a"), sup.session("pen:b")
        assert kept is not None and removed is not None
        done = sup.reconcile([_target(network, home, "pen:a", BANK1), c])
        assert (done.added, done.removed, done.kept, done.replaced) == (
            ("pen:c",),
            ("pen:b",),
            ("pen:a",),
            (),
        )
        await sup.drain()
        assert sup.session("pen:a") is kept and not kept.closed  # type: ignore[attr-defined]
        assert removed.closed  # type: ignore[attr-defined]
        status = sup.status("pen:c")
        assert status is not None and status.state is SessionState.UNCHECKED
        assert network.at(c.binding.settings).checks == 0  # connects on first check or use
        moved = _target(network, home, "pen:a", {**BANK1, "bank": "moved"})
        assert sup.reconcile([moved, c]).replaced == ("pen:a",)
        await sup.drain()
        assert kept.closed  # type: ignore[attr-defined]
        with pytest.raises(ValueError, match="one binding per scope"):
            sup.reconcile([a, a])


# -- the setup gate ----------------------------------------------------------------------------
async def test_setup_gate_disabled_and_unbound_are_never_contacted(
    host: MemoryHost, world: World
) -> None:
    assert (await host.prepare_turn(Chat("team"), "deploys", 500)).outcome == "off"
    await host.refresh()
    assert world.network.built == []  # nothing bound: nothing built, nothing contacted
    await host.bind(PEN, "remote", dict(BANK1), connect=False)
    await host.set_enabled(PEN, False)
    await host.refresh()
    assert (await host.prepare_turn(Chat("team"), "deploys", 500)).outcome == "off"
    assert row(host).tone is Tone.DIM
    assert world.network.built == [] and world.ep(BANK1).checks == 0


async def test_an_existing_valid_config_counts_as_configured(world: World) -> None:
    world.home.config_dir.mkdir(parents=True, exist_ok=True)
    world.home.config_path.write_text(
        json.dumps(
            {
                "schema_version": 1,
                "bindings": {"pen-team": {"provider": "remote", "settings": BANK1, "egress": []}},
                "selection": {"pen:team": "pen-team"},
            }
        ),
        "utf-8",
    )
    world.ep(BANK1).received.append("upgrade notes about deploys")
    async with world.host() as host:
        turn = await host.prepare_turn(Chat("team"), "deploys", 2000)
        assert turn.outcome == "ok" and "upgrade notes" in turn.block
        assert row(host).tone is Tone.ACCENT


async def test_a_first_turn_checks_a_never_checked_binding_and_status_tells(
    world: World,
) -> None:
    """Connect lazily before the first operation, through the supervisor: the first turn of
    a never-checked binding makes its check, so a host's status shows what the turn met
    (not "not checked yet"): unreachable while the server is down, then healthy once a
    later turn (after the backoff) gets through. A healthy binding is not probed again."""
    world.home.config_dir.mkdir(parents=True, exist_ok=True)
    world.home.config_path.write_text(
        json.dumps(
            {
                "schema_version": 1,
                "bindings": {"pen-team": {"provider": "remote", "settings": BANK1, "egress": []}},
                "selection": {"pen:team": "pen-team"},
            }
        ),
        "utf-8",
    )
    ep = world.ep(BANK1)
    ep.mode = "down"
    async with world.host() as host:
        assert row(host).reason == "configured; not checked yet"
        for trivial in ("hi", "thanks"):  # a turn that will not read contacts nothing
            assert (await host.prepare_turn(Chat("team"), trivial, 500)).outcome == "skipped"
        assert (await host.prepare_turn(Chat("team"), "deploys", 0)).outcome == "skipped"
        assert ep.checks == 0 and row(host).reason == "configured; not checked yet"
        turn = await host.prepare_turn(Chat("team"), "deploys", 500)
        assert turn.outcome == "unavailable" and ep.checks >= 1
        r = row(host)
        assert (r.tone, r.cause) == (Tone.WARN, "unreachable") and r.last_checked is not None
        ep.mode = "up"
        await world.clock.advance(60)
        assert (await host.prepare_turn(Chat("team"), "deploys", 500)).outcome == "empty"
        assert row(host).tone is Tone.ACCENT and "not checked" not in row(host).reason
        checks = ep.checks
        await host.prepare_turn(Chat("team"), "deploys", 500)
        assert ep.checks == checks


# -- classification ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("error", "cause"),
    [
        (AuthError("HTTP 401"), "auth"),
        (CredentialError("unsafe credential file"), "auth"),
        (NotFound("bank `x` not found"), "not_found"),
        (ProviderUnavailable("lacks tools", missing=["recall"]), "incompatible"),
        (ProviderUnavailable("connection refused"), "unreachable"),
        (BadInput("odd"), "unreachable"),
        (OSError("boom"), "unreachable"),
    ],
)
def test_cause_of_error(error: BaseException, cause: str) -> None:
    assert cause_of_error(error) == cause


def test_retry_policy_delays() -> None:
    policy = RetryPolicy(base=1.0, cap=5.0)
    assert [policy.delay(n) for n in (1, 2, 3, 4, 9)] == [1.0, 2.0, 4.0, 5.0, 5.0]


async def test_a_provider_bug_in_check_is_a_failed_check_not_a_crash(
    host: MemoryHost, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def explode(self: FakeRemote) -> Health:
        raise RuntimeError("bug")

    monkeypatch.setattr(FakeRemote, "check", explode)
    outcome = await host.bind(PEN, "remote", dict(BANK1))
    assert outcome.health is not None and not outcome.health.ok
    assert "RuntimeError" in outcome.health.reason and row(host).cause == "unreachable"


async def test_an_outdated_starter_hands_the_check_to_a_current_subscriber(
    tmp_path: Path,
) -> None:
    network, home = Network(), GoatHome.at(tmp_path / "h")
    a = _target(network, home, "pen:a", BANK1)
    b = _target(network, home, "pen:b", BANK1)  # the same transport
    async with Supervisor(clock=ManualClock()) as sup:
        sup.reconcile([a, b])
        shared, inline = sup._start("pen:a")  # scheduled, not yet running
        joined, _ = sup._start("pen:b")
        assert joined is shared and not inline
        sup.disconnect("pen:a")  # the starter is outdated before its task runs
        await shared.done.wait()
        assert shared.health is not None and shared.health.ok
        status = sup.status("pen:b")
        assert status is not None and status.state is SessionState.HEALTHY
        assert sup.status("pen:a") is None
        assert network.at(BANK1).checks == 1
