"""The connection supervisor: who owns each remote binding's session (docs/design.md,
Remote providers and the supervisor).

A host keeps one :class:`Supervisor` per process. It holds one *slot* per scope whose
selected, enabled binding is a remote provider (``ProviderSpec.network``); local providers
never come here. A slot owns the binding's published session (a :class:`Provider`), its
last published :class:`~goat_core.contract.Health` and its retry state.

States of a slot and what moves it (``connecting`` is not a state: an attempt can be in
flight in any state, and the last published status stays visible meanwhile)::

    unchecked --check ok--> healthy --probe fails, fresh handshake fails--> unavailable
    unchecked --check fails--> unavailable | auth_failed
    healthy --probe ok--> healthy (same session kept)
    healthy --probe fails, fresh handshake ok--> healthy (transport replaced)
    unavailable --retry after backoff (pre-turn, view recheck) or explicit check--> any
    auth_failed --explicit check--> any;  no automatic retry
    any --configuration change or disconnect--> slot replaced/removed (generation + 1)

Rules it enforces:

- **One network check per transport.** Concurrent checks whose provider name and complete
  transport fingerprint (:meth:`Provider.transport_fingerprint`: server, bank, credential
  digest) are equal share one check; a different fingerprint is a different check.
- **Validate before replacing.** A published session is probed first (the provider's cheap
  :meth:`Provider.check`, ``get_bank`` for Hindsight); a healthy one is kept. Only a
  session that fails its probe is replaced by a fresh one, and only a fresh one that passed
  its handshake is published.
- **Owned attempts.** Every attempt carries the slot's generation. A configuration change
  or a disconnect bumps it; a result that comes back for an older generation is dropped
  (its fresh session closed), never published.
- **Cancelled callers stop waiting, nothing more.** A shared check runs in a task of the
  supervisor's task group (``async with supervisor``), so a caller that gives up does not
  cancel the check others wait on. Outside ``async with`` the first caller runs it
  shielded instead (it still completes for the others).
- **Requests are not health.** Only checks publish health. A failed recall, a tool-level
  rejection or an uncertain write never changes a slot, and the supervisor never replays
  anything.
- **Retry policy** (in memory, per process, on an injectable :class:`Clock`): an
  ``unavailable`` slot is retried before a turn once its short backoff has passed
  (:meth:`ensure`); an explicit :meth:`check` retries at once; an ``auth`` failure waits for
  a configuration change or an explicit check; an open status view rechecks every
  :attr:`RetryPolicy.recheck_interval` seconds (:meth:`viewing`).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

import anyio
import anyio.abc

from goat_core.contract import Binding, Health, HealthCause, Provider, ProviderSpec, Scope
from goat_core.errors import GoatError
from goat_core.logs import get_logger

log = get_logger("goat_core.supervisor")


class Clock(Protocol):
    """Time as the supervisor sees it (tests pass a manual clock; nothing sleeps for real).

    ``now()`` is monotonic seconds; ``await sleep(seconds)`` waits on that clock.
    """

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class MonotonicClock:
    """The real clock: :func:`time.monotonic` and :func:`anyio.sleep`."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


@dataclass(frozen=True)
class RetryPolicy:
    """Timing of retries and rechecks, in seconds.

    :param base: the first backoff after a failed check; it doubles per consecutive
        failure up to ``cap`` (the "short backoff" of docs/design.md, Remote providers and
        the supervisor).
    :param cap: the longest backoff.
    :param recheck_interval: how often an open status view rechecks (15 s, docs/design.md).
    :param turn_wait: how long preparing a turn waits for a retry before going on without
        memory (the check itself runs on, owned by the supervisor).
    """

    base: float = 1.0
    cap: float = 30.0
    recheck_interval: float = 15.0
    turn_wait: float = 3.0

    def delay(self, failures: int) -> float:
        """Backoff after ``failures`` (>= 1) consecutive failed checks."""
        return float(min(self.cap, self.base * 2 ** max(0, failures - 1)))


class SessionState(StrEnum):
    """A slot's state (see the module docstring for the transitions)."""

    UNCHECKED = "unchecked"
    HEALTHY = "healthy"
    UNAVAILABLE = "unavailable"
    AUTH_FAILED = "auth_failed"


def digest(*parts: Any) -> str:
    """A stable sha256 hex digest of JSON-able ``parts`` (for identities; never a secret in
    clear: callers pass digests of credentials, not credentials)."""
    import json

    material = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def cause_of_error(exc: BaseException) -> HealthCause:
    """The :data:`~goat_core.contract.HealthCause` of an error raised by a check: the
    contract's :meth:`Health.cause_of <goat_core.contract.Health.cause_of>`."""
    return Health.cause_of(exc)


@dataclass(frozen=True)
class Target:
    """One remote binding the host wants connected: what :meth:`Supervisor.reconcile` gets.

    :param key: the slot key, the scope key (one selected binding per scope).
    :param identity: digest of everything that makes a configuration (the binding's JSON and
        a digest of its credential); a different identity is a configuration change.
    :param build: ``build() -> Provider``, a fresh, unconnected provider (no I/O).
    """

    key: str
    scope: Scope
    binding: Binding
    spec: ProviderSpec
    identity: str
    build: Callable[[], Provider] = field(repr=False, compare=False)


@dataclass(frozen=True)
class SlotStatus:
    """What a status view may show of one slot: only the current generation's results.

    :param health: the last published health (``None`` before the first check finished).
    :param checking: an attempt of the current generation is in flight.
    :param retry_in: seconds until an automatic retry is allowed (``None``: not waiting;
        ``inf`` for an auth failure, which waits for the user).
    """

    key: str
    state: SessionState
    generation: int
    health: Health | None
    checking: bool
    retry_in: float | None


@dataclass(frozen=True)
class Reconciled:
    """What :meth:`Supervisor.reconcile` did, by slot key."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    replaced: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()


@dataclass
class _Slot:
    target: Target
    generation: int
    session: Provider | None = None
    validated: bool = False
    fingerprint: str | None = None
    health: Health | None = None
    state: SessionState = SessionState.UNCHECKED
    failures: int = 0
    retry_at: float = 0.0
    #: the label of this slot's provider, kept when a failed session is dropped
    label: str | None = None


@dataclass
class _Shared:
    """One network check shared by everyone asking for the same transport."""

    key: tuple[str, str]
    done: anyio.Event
    subscribers: dict[str, int] = field(default_factory=dict)
    health: Health | None = None


class Supervisor:
    """Owns the sessions of remote bindings. See the module docstring for the rules.

    Use ``async with Supervisor(...) as sup`` (the host enters it in ``async with
    MemoryHost`` and in :class:`~goat_core.host.SyncMemoryHost`); without it, checks still
    work but run in their first caller, shielded.

    :param clock: the clock for backoff and rechecks (default :class:`MonotonicClock`).
    :param policy: retry timing (default :class:`RetryPolicy`).
    """

    def __init__(self, *, clock: Clock | None = None, policy: RetryPolicy | None = None) -> None:
        self.clock: Clock = clock if clock is not None else MonotonicClock()
        self.policy = policy if policy is not None else RetryPolicy()
        self._slots: dict[str, _Slot] = {}
        self._shared: dict[tuple[str, str], _Shared] = {}
        self._retired: list[Provider] = []
        self._generation = 0
        self._tg: anyio.abc.TaskGroup | None = None
        self._tg_cm: Any = None
        self._views = 0
        self._view_scope: anyio.CancelScope | None = None
        self._closed = False

    # -- lifetime ---------------------------------------------------------------------------
    async def __aenter__(self) -> Supervisor:
        if self._tg is None:
            self._tg_cm = anyio.create_task_group()
            self._tg = await self._tg_cm.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self.aclose()
        finally:
            tg_cm, self._tg_cm, self._tg = self._tg_cm, None, None
            if tg_cm is not None:
                tg_cm.cancel_scope.cancel()
                await tg_cm.__aexit__(None, None, None)

    async def aclose(self) -> None:
        """Disconnect every slot and close every session. Idempotent."""
        if self._view_scope is not None:
            self._view_scope.cancel()
        for key in list(self._slots):
            self._remove(key)
        await self.drain()

    async def drain(self) -> None:
        """Close sessions retired by :meth:`reconcile` or :meth:`disconnect`."""
        while self._retired:
            provider = self._retired.pop()
            with anyio.CancelScope(shield=True):
                try:
                    await provider.close()
                except Exception as exc:  # a failing close must not hide the others
                    log.warning("supervisor.close_failed", error=type(exc).__name__)

    # -- configuration ----------------------------------------------------------------------
    def reconcile(self, targets: Iterable[Target]) -> Reconciled:
        """Make the slots match ``targets`` (the selected remote bindings, one per scope).

        Removed slots are disconnected, changed ones (another identity) replaced by a new
        generation, new ones added ``unchecked``; an unchanged slot is left exactly as it is
        (a healthy client stays connected). Nothing is contacted here: retired sessions are
        closed by :meth:`drain`, new ones connect on their first check or use.
        """
        wanted: dict[str, Target] = {}
        for target in targets:
            if target.key in wanted:
                raise ValueError(f"two targets for slot {target.key!r}: one binding per scope")
            wanted[target.key] = target
        added, removed, replaced, kept = [], [], [], []
        for key in list(self._slots):
            if key not in wanted:
                self._remove(key)
                removed.append(key)
        for key, target in wanted.items():
            slot = self._slots.get(key)
            if slot is None:
                self._slots[key] = _Slot(target=target, generation=self._next_generation())
                added.append(key)
            elif slot.target.identity != target.identity:
                self._remove(key)
                self._slots[key] = _Slot(target=target, generation=self._next_generation())
                replaced.append(key)
            else:
                kept.append(key)
        return Reconciled(tuple(added), tuple(removed), tuple(replaced), tuple(kept))

    def disconnect(self, key: str) -> bool:
        """Remove slot ``key``: its session is retired (closed by :meth:`drain`) and every
        attempt in flight for it is outdated. Returns whether there was such a slot."""
        return self._remove(key)

    def _next_generation(self) -> int:
        self._generation += 1
        return self._generation

    def _remove(self, key: str) -> bool:
        slot = self._slots.pop(key, None)
        if slot is None:
            return False
        slot.generation = -1  # any attempt still in flight now belongs to nobody
        if slot.session is not None:
            self._retired.append(slot.session)
            slot.session = None
        return True

    # -- reading ----------------------------------------------------------------------------
    def keys(self) -> list[str]:
        """The slot keys, in the order they were added."""
        return list(self._slots)

    def target(self, key: str) -> Target | None:
        """The target slot ``key`` serves (``None``: no slot)."""
        slot = self._slots.get(key)
        return None if slot is None else slot.target

    def identity(self, key: str) -> str | None:
        """The configuration identity slot ``key`` serves (``None``: no slot)."""
        slot = self._slots.get(key)
        return None if slot is None else slot.target.identity

    def status(self, key: str) -> SlotStatus | None:
        """The current generation's published status of slot ``key`` (``None``: no slot)."""
        slot = self._slots.get(key)
        if slot is None:
            return None
        checking = any(s.subscribers.get(key) == slot.generation for s in self._shared.values())
        retry_in: float | None = None
        if slot.state is SessionState.AUTH_FAILED:
            retry_in = float("inf")
        elif slot.state is SessionState.UNAVAILABLE:
            retry_in = max(0.0, slot.retry_at - self.clock.now())
        return SlotStatus(
            key=key,
            state=slot.state,
            generation=slot.generation,
            health=slot.health,
            checking=checking,
            retry_in=retry_in,
        )

    def session(self, key: str) -> Provider | None:
        """The provider operations of slot ``key`` use now, or ``None`` when it must not be
        used (``unavailable`` or ``auth_failed``: fail closed until a check succeeds).

        An ``unchecked`` slot gets an unconnected provider built now; it connects on its
        first call (the binding was configured by the user, so this passes the setup gate).
        """
        slot = self._slots.get(key)
        if slot is None:
            return None
        if slot.state in (SessionState.UNAVAILABLE, SessionState.AUTH_FAILED):
            return None
        if slot.session is None:
            slot.session = slot.target.build()
            _remember_label(slot, slot.session)
        return slot.session

    def label(self, key: str) -> str | None:
        """How slot ``key``'s provider names its store (``Provider.label()``, e.g. "shared
        bank `<bank>` on `<server>`"), also while the slot is ``unavailable`` or
        ``auth_failed`` and holds no session: the label depends on the configuration only.
        ``None``: no slot, or no provider was built for it yet (nothing is built here)."""
        slot = self._slots.get(key)
        if slot is None:
            return None
        if slot.label is None and slot.session is not None:
            _remember_label(slot, slot.session)
        return slot.label

    # -- checking ---------------------------------------------------------------------------
    async def check(self, key: str, *, explicit: bool = True) -> Health:
        """Check slot ``key`` now and return the health published for it.

        ``explicit`` (a user's check): runs whatever the backoff or an auth failure says.
        Otherwise an ``auth_failed`` slot is not contacted and its last health returned.
        Joins a check already in flight for the same transport.

        :raises KeyError: no such slot.
        """
        slot = self._slots[key]
        if not explicit and slot.state is SessionState.AUTH_FAILED and slot.health is not None:
            return slot.health
        shared = await self._wait(key)
        assert shared.health is not None
        return shared.health

    async def ensure(self, key: str) -> SlotStatus | None:
        """Before a turn: make the first check of an ``unchecked`` slot (the lazy connect
        before its first operation, so status tells what the turn met), retry an
        ``unavailable`` slot whose backoff has passed (waiting at most
        :attr:`RetryPolicy.turn_wait`; the check runs on if it takes longer), join a check in
        flight the same way, leave everything else alone (an ``auth_failed`` slot is never
        contacted; a ``healthy`` one is not probed). Returns the slot's status afterwards."""
        slot = self._slots.get(key)
        if slot is None:
            return None
        inflight = any(s.subscribers.get(key) == slot.generation for s in self._shared.values())
        due = slot.state is SessionState.UNCHECKED or (
            slot.state is SessionState.UNAVAILABLE and self.clock.now() >= slot.retry_at
        )
        if due or inflight:
            await self._wait(key, limit=self.policy.turn_wait)
        return self.status(key)

    async def recheck(self, keys: Iterable[str] | None = None) -> None:
        """Recheck slots (all by default) concurrently, as an open status view does every
        :attr:`RetryPolicy.recheck_interval` seconds. ``auth_failed`` slots are skipped."""
        chosen = [
            k
            for k in (list(self._slots) if keys is None else keys)
            if k in self._slots and self._slots[k].state is not SessionState.AUTH_FAILED
        ]
        async with anyio.create_task_group() as tg:
            for key in chosen:
                tg.start_soon(self._wait_quietly, key)

    async def _wait_quietly(self, key: str) -> None:
        if key in self._slots:
            await self._wait(key)

    async def check_isolated(self, provider: Provider) -> Health:
        """Check a provider that belongs to no slot (an edited draft): nothing saved or
        published is touched; ``provider`` is closed afterwards."""
        try:
            return await _probe(provider)
        finally:
            with anyio.CancelScope(shield=True):
                await provider.close()

    @asynccontextmanager
    async def viewing(self) -> AsyncIterator[None]:
        """While this is open, every slot is rechecked each :attr:`RetryPolicy.
        recheck_interval` seconds on :attr:`clock` (one loop however many views are open).

        :raises RuntimeError: the supervisor was not entered (``async with``).
        """
        if self._tg is None:
            raise RuntimeError("enter the supervisor (async with) before opening a view")
        self._views += 1
        if self._views == 1:
            self._view_scope = anyio.CancelScope()
            self._tg.start_soon(self._view_loop, self._view_scope)
        try:
            yield
        finally:
            self._views -= 1
            if self._views == 0 and self._view_scope is not None:
                self._view_scope.cancel()
                self._view_scope = None

    async def _view_loop(self, scope: anyio.CancelScope) -> None:
        with scope:
            while True:
                await self.clock.sleep(self.policy.recheck_interval)
                await self.recheck()

    # -- the shared attempt -----------------------------------------------------------------
    def fingerprint(self, key: str) -> str | None:
        """The complete transport fingerprint of slot ``key`` (``None``: no slot)."""
        slot = self._slots.get(key)
        return None if slot is None else self._transport_key(slot)[1]

    def _transport_key(self, slot: _Slot) -> tuple[str, str]:
        """``(provider name, transport fingerprint)``, computed once per slot from its
        provider (built now if needed; building does no I/O)."""
        if slot.fingerprint is None:
            try:
                if slot.session is None:
                    slot.session, slot.validated = slot.target.build(), False
                    _remember_label(slot, slot.session)
                slot.fingerprint = slot.session.transport_fingerprint()
            except GoatError:
                slot.fingerprint = None
            if slot.fingerprint is None:
                slot.fingerprint = transport_fingerprint(slot.target)
        return (slot.target.spec.name, slot.fingerprint)

    def _start(self, key: str) -> tuple[_Shared, bool]:
        """Join the check in flight for slot ``key``'s transport, or start one. Returns the
        shared check and whether the caller must run it inline (no task group)."""
        slot = self._slots[key]
        tkey = self._transport_key(slot)
        shared = self._shared.get(tkey)
        if shared is not None:
            shared.subscribers[key] = slot.generation
            return shared, False
        shared = _Shared(key=tkey, done=anyio.Event(), subscribers={key: slot.generation})
        self._shared[tkey] = shared
        if self._tg is not None:
            self._tg.start_soon(self._run, shared, key, slot.generation)
            return shared, False
        return shared, True

    async def _wait(self, key: str, *, limit: float | None = None) -> _Shared:
        shared, inline = self._start(key)
        if inline:
            with anyio.CancelScope(shield=True):
                await self._run(shared, key, shared.subscribers[key])
        with anyio.move_on_after(limit):
            await shared.done.wait()
        return shared

    async def _run(self, shared: _Shared, key: str, generation: int) -> None:
        fresh: Provider | None = None
        health: Health
        try:
            slot = self._slots.get(key)
            if slot is None or slot.generation != generation:
                # the starter is outdated already: run for a subscriber that is still current
                current = [
                    (k, g)
                    for k, g in shared.subscribers.items()
                    if k in self._slots and self._slots[k].generation == g
                ]
                if current:
                    key, generation = current[0]
                    slot = self._slots[key]
            if slot is None or slot.generation != generation:
                health = Health.broken("the configuration changed before the check started")
            else:
                health, fresh = await self._attempt(slot)
        except Exception as exc:  # a provider bug: reported as a failed check, never raised
            health = Health.broken(f"{type(exc).__name__} during check", cause="unreachable")
        except BaseException:
            health = Health.broken("the check was cancelled", cause="unreachable")
            if fresh is not None:
                self._retired.append(fresh)
            self._finish(shared, health)
            raise
        if not health.ok and health.cause is None:
            health = health.model_copy(update={"cause": "unreachable"})
        try:
            with anyio.CancelScope(shield=True):
                self._publish(shared, key, generation, health, fresh)
                await self.drain()
        finally:
            self._finish(shared, health)

    def _finish(self, shared: _Shared, health: Health) -> None:
        if shared.health is None:
            shared.health = health
        if self._shared.get(shared.key) is shared:
            del self._shared[shared.key]
        shared.done.set()

    async def _attempt(self, slot: _Slot) -> tuple[Health, Provider | None]:
        """Validate the published session; replace it only when it fails its probe.

        :returns: the health and, when a fresh session was handshaken, that session.
        """
        generation = slot.generation
        session = slot.session
        if session is not None:
            health = await _probe(session)
            if health.ok or not slot.validated or _cause(health) == "auth":
                # a never-validated session's probe was its handshake; an auth failure is
                # not cured by a new transport
                return health, None
            if slot.generation != generation:
                return health, None  # outdated meanwhile: no new handshake for nobody
        try:
            fresh = slot.target.build()
        except GoatError as exc:
            return Health.broken(str(exc), cause=cause_of_error(exc)), None
        try:
            health = await _probe(fresh)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await fresh.close()
            raise
        return health, fresh

    def _publish(
        self, shared: _Shared, starter: str, generation: int, health: Health, fresh: Provider | None
    ) -> None:
        """Publish ``health`` to every subscriber whose generation is still current."""
        used_fresh = False
        for key, gen in shared.subscribers.items():
            slot = self._slots.get(key)
            if slot is None or slot.generation != gen:
                log.info("supervisor.late_result_dropped", slot=key)
                continue
            if key == starter and gen == generation:
                if fresh is not None and health.ok:
                    if slot.session is not None and slot.session is not fresh:
                        self._retired.append(slot.session)
                    slot.session, slot.validated, used_fresh = fresh, True, True
                elif health.ok:
                    slot.validated = slot.session is not None
                elif slot.session is not None:
                    self._retired.append(slot.session)
                    slot.session, slot.validated = None, False
            elif not health.ok and slot.session is not None:
                self._retired.append(slot.session)
                slot.session, slot.validated = None, False
            self._record(slot, health)
        if fresh is not None and not used_fresh:
            self._retired.append(fresh)

    def _record(self, slot: _Slot, health: Health) -> None:
        if health.ok:
            slot.state, slot.failures, slot.retry_at = SessionState.HEALTHY, 0, 0.0
        elif _cause(health) == "auth":
            slot.state, slot.failures = SessionState.AUTH_FAILED, slot.failures + 1
        else:
            slot.state, slot.failures = SessionState.UNAVAILABLE, slot.failures + 1
            slot.retry_at = self.clock.now() + self.policy.delay(slot.failures)
        if not health.ok and health.cause is None:
            health = health.model_copy(update={"cause": "unreachable"})
        slot.health = health


def transport_fingerprint(target: Target) -> str:
    """The transport key of a target whose provider gives none: its configuration identity."""
    return digest("identity", target.spec.name, target.identity)


def _remember_label(slot: _Slot, provider: Provider) -> None:
    """Keep ``provider.label()`` on its slot (a failing ``label()`` is not fatal: the host
    falls back to the scope's own label)."""
    try:
        slot.label = provider.label()
    except Exception as exc:
        log.warning("supervisor.label_failed", slot=slot.target.key, error=type(exc).__name__)


def _cause(health: Health) -> HealthCause | None:
    if health.ok:
        return None
    return health.cause or "unreachable"


async def _probe(provider: Provider) -> Health:
    """``await provider.check()``; an error becomes a broken health with its cause."""
    try:
        health = await provider.check()
    except GoatError as exc:
        return Health.broken(str(exc), cause=cause_of_error(exc))
    except Exception as exc:
        return Health.broken(f"{type(exc).__name__} during check", cause="unreachable")
    if not isinstance(health, Health):
        return Health.broken(
            f"provider {provider.spec.name!r} check returned {type(health).__name__}, not Health",
            cause="unreachable",
        )
    return health
