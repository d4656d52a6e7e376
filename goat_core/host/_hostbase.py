"""The host's core: configuration, scope resolution, the contexts it hands out, and the
providers and remote sessions behind them (:class:`HostBase`, which
:class:`~goat_core.host.MemoryHost` extends with bindings and status)."""

from __future__ import annotations

import shlex
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from pydantic import ValidationError

from goat_core.contract import (
    Binding,
    Health,
    Provider,
    ProviderContext,
    ProviderSpec,
    Scope,
    ScopeRequest,
)
from goat_core.contract._home import GoatHome
from goat_core.errors import ConfigError, GoatError, NotFound, ProviderUnavailable, ScopeError
from goat_core.fileio import StoreLock
from goat_core.host import _egress_audit as egress_audit
from goat_core.host._config import Config, config_unwritable, load_config, save_config
from goat_core.host._connect import GuardedConnect
from goat_core.host._context import MemoryContext
from goat_core.host._credentials import CredentialStore
from goat_core.host._egress import check_egress, guarded_http_client
from goat_core.host._leases import RemoteLease
from goat_core.host._records import DEFAULT_BINDING_ID, EMBEDDED_DEFAULT_PROVIDER, Chat, scope_label
from goat_core.host._supervisor import Clock, RetryPolicy, Supervisor, Target, digest
from goat_core.host._turn import TurnMemory
from goat_core.plugins import Registry


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "settings"
        parts.append(f"{loc}: {err.get('msg')}")
    return "; ".join(parts)


class _ConfigLock(StoreLock):
    """The ``memory.json`` lock, whose file a read-only or full home cannot hold: that is
    the typed :class:`StoreUnwritable` (exit 6), never a raw ``OSError``."""

    def acquire(self) -> None:
        try:
            super().acquire()
        except OSError as exc:
            raise config_unwritable(exc, self.lock_path) from None


@dataclass
class _Checked:
    health: Health
    fingerprint: str


@dataclass
class _State:
    providers: dict[tuple[str, str], Provider] = field(default_factory=dict)
    health: dict[str, _Checked] = field(default_factory=dict)


class HostBase(ABC):
    """What every host call rests on: ``home``, ``registry``, the configuration in force,
    the context of each scope, the providers built for local bindings and the
    :attr:`supervisor` that owns remote ones. :class:`~goat_core.host.MemoryHost` adds
    binding management and status (:mod:`goat_core.host._bindings`); its docstring lists
    the constructor's parameters.
    """

    def __init__(
        self,
        *,
        home: GoatHome | None = None,
        registry: Registry | None = None,
        config: Config | None = None,
        clock: Clock | None = None,
        policy: RetryPolicy | None = None,
        progress: Callable[[int, int], None] | None = None,
        embed_progress: Callable[[int, int], None] | None = None,
        embedders: Callable[[str], Any] | None = None,
        rerankers: Callable[[str], Any] | None = None,
        embed_in_background: bool = False,
    ) -> None:
        self.home = home if home is not None else GoatHome.from_env()
        self.registry = registry if registry is not None else Registry.load()
        self._config = config
        self._progress = progress
        self._embed_progress = embed_progress
        self._embed_in_background = embed_in_background
        self._embedders = embedders if embedders is not None else self.registry.get_embedder
        self._rerankers = rerankers if rerankers is not None else self.registry.get_reranker
        self._state = _State()
        #: owns the sessions of remote (``spec.network``) bindings (:class:`Supervisor`)
        self.supervisor = Supervisor(clock=clock, policy=policy)

    # -- config -----------------------------------------------------------------------------
    @property
    def config(self) -> Config:
        """The configuration in force (fixed, or read from ``memory.json`` now)."""
        if self._config is not None:
            return self._config
        return load_config(self.home)

    def _config_lock(self) -> Any:
        """The cross-process lock around a read-modify-write of ``memory.json`` (a lock file
        under the GOAT home), so two processes binding at once never lose a binding; the
        config is re-read inside it. :raises Conflict: not obtained within 10 s.
        :raises StoreUnwritable: the GOAT home is read-only or full (the lock file cannot
            be made or opened), naming the path; ``memory.json`` is untouched."""
        return _ConfigLock(self.home.lock_dir / "memory-json.lock")

    def _save(self, config: Config) -> Path:
        path = save_config(self.home, config)
        if self._config is not None:
            self._config = config
        return path

    # -- scope ------------------------------------------------------------------------------
    def resolve(self, chat: Chat) -> Scope:
        """The one scope of ``chat`` (its project id always decides).

        :raises TypeError: anything but one :class:`Chat` (there is no multi-scope API).
        """
        if not isinstance(chat, Chat):
            raise TypeError(
                f"expected one Chat, got {type(chat).__name__}: a memory context serves "
                "exactly one scope; there is no API over several scopes"
            )
        return self.registry.resolve_scope(ScopeRequest(project_id=chat.project_id)).scope

    def context_for(self, chat: Chat) -> MemoryContext:
        """The context of ``chat``: its one scope and that scope's one selected binding.

        :raises TypeError: not a single :class:`Chat` (e.g. a list of chats or a Scope).
        :raises ScopeError: a plugin contradicts the chat's project id.
        """
        return self._context(self.resolve(chat))

    def settings_browser(self) -> MemoryContext:
        """The settings browser: always the Global store."""
        return self._context(Scope.global_())

    def pen_browser(self, pen_id: str) -> MemoryContext:
        """A Pen's landing page: the only browser of that Pen's store.

        :raises ScopeError: an invalid Pen id.
        """
        return self._context(Scope.pen(pen_id))

    def _default_binding(self) -> Binding:
        return Binding(id=DEFAULT_BINDING_ID, provider=EMBEDDED_DEFAULT_PROVIDER)

    def _selected(self, scope: Scope) -> tuple[Binding | None, str | None]:
        """The scope's binding (the embedded default for an unbound Global) or a reason."""
        try:
            binding = self.config.selected(scope)
        except ConfigError as exc:
            return None, str(exc)
        if binding is None and scope.is_global:
            return self._default_binding(), None
        return binding, None

    def _context(self, scope: Scope) -> MemoryContext:
        binding, problem = self._selected(scope)
        if problem is not None:
            return MemoryContext(self, scope, None, None, None, state="unavailable", reason=problem)
        if binding is None:
            return MemoryContext(
                self,
                scope,
                None,
                None,
                None,
                state="off",
                reason=f"{scope_label(scope)} has no binding in the GOAT home "
                f"{self.home.describe()}: no memory in this scope (bind one with "
                f"`goat bind --pen {scope.pen_id} PROVIDER --home "
                f"{shlex.quote(str(self.home.config_dir))}`)",
            )
        if not binding.enabled:
            return MemoryContext(
                self,
                scope,
                binding,
                None,
                None,
                state="off",
                reason=f"binding {binding.id!r} of {scope.key} is disabled: no memory in this "
                "scope",
            )
        try:
            spec = self._spec_for(binding)
            if spec.network:
                return self._remote_context(scope, binding, spec)
            provider = self._provider(scope, binding, spec)
        except GoatError as exc:
            return MemoryContext(
                self, scope, binding, None, None, state="unavailable", reason=str(exc)
            )
        return MemoryContext(self, scope, binding, spec, provider, state="on")

    # -- remote bindings (the connection supervisor) ------------------------------------------
    def _credential_digest(self, binding: Binding, spec: ProviderSpec) -> str:
        """A digest of the binding's declared credentials (never the values themselves)."""
        store = CredentialStore(self.home)
        parts: list[str] = []
        for cred in spec.credentials:
            try:
                value = store.get(binding.id, cred.name)
            except GoatError as exc:
                parts.append(f"{cred.name}:error:{type(exc).__name__}")
                continue
            parts.append(f"{cred.name}:{digest(value) if value else ''}")
        return digest(parts)

    def _target(self, scope: Scope, binding: Binding, spec: ProviderSpec) -> Target:
        identity = digest(binding.model_dump(mode="json"), self._credential_digest(binding, spec))
        return Target(
            key=scope.key,
            scope=scope,
            binding=binding,
            spec=spec,
            identity=identity,
            build=lambda: self._build(scope, binding, spec),
        )

    def _remote_targets(self) -> list[Target]:
        """Every selected, enabled remote binding (the setup gate: nothing else is ever
        connected)."""
        try:
            config = self.config
        except GoatError:
            return []  # an unreadable memory.json: connect nothing
        targets = []
        for scope, binding in config.scopes():
            if not binding.enabled:
                continue
            try:
                spec = self._spec_for(binding)
            except GoatError:
                continue
            if spec.network:
                targets.append(self._target(scope, binding, spec))
        return targets

    def _sync_remote(self) -> None:
        """Reconcile the supervisor with the configuration in force (no I/O)."""
        self.supervisor.reconcile(self._remote_targets())

    async def _reconcile(self) -> None:
        self._sync_remote()
        await self.supervisor.drain()

    def _remote_context(self, scope: Scope, binding: Binding, spec: ProviderSpec) -> MemoryContext:
        served = self.supervisor.target(scope.key)
        if served is None or served.binding != binding:
            # a credential-only change is picked up by the next full reconcile (status,
            # check, prepare_turn, bind), which reads the credential store
            self._sync_remote()
        identity = self.supervisor.identity(scope.key)
        if identity is None:  # not a target (cannot happen for an enabled selected binding)
            identity = self._target(scope, binding, spec).identity
        lease = RemoteLease(self.supervisor, scope.key, identity)
        return MemoryContext(self, scope, binding, spec, None, state="on", lease=lease)

    async def _before_turn(self, scope: Scope) -> None:
        """Before a turn: retry an unavailable remote binding within its short backoff."""
        await self._reconcile()
        await self.supervisor.ensure(scope.key)

    def _remote_spec(self, binding: Binding | None) -> ProviderSpec | None:
        if binding is None or not binding.enabled:
            return None
        try:
            spec = self._spec_for(binding)
        except GoatError:
            return None
        return spec if spec.network else None

    def _spec_for(self, binding: Binding) -> ProviderSpec:
        try:
            return self.registry.get_provider(binding.provider)
        except NotFound as exc:
            if binding.id == DEFAULT_BINDING_ID:
                raise ProviderUnavailable(
                    f"the embedded default Global store needs provider "
                    f"{EMBEDDED_DEFAULT_PROVIDER!r}, which is not installed: install the "
                    f"goat-{EMBEDDED_DEFAULT_PROVIDER} plugin from a GOAT checkout (pip "
                    f"install ./plugins/{EMBEDDED_DEFAULT_PROVIDER}) or bind Global to "
                    "another provider"
                ) from exc
            raise ProviderUnavailable(
                f"provider {binding.provider!r} of binding {binding.id!r} is not installed: {exc}"
            ) from exc

    def _build(
        self,
        scope: Scope,
        binding: Binding,
        spec: ProviderSpec,
        *,
        credential: Callable[[str], str | None] | None = None,
    ) -> Provider:
        """A provider for ``binding``; its secrets come from the credential store under the
        binding's id, or from ``credential`` when given (a draft's own key, or none)."""
        try:
            settings = spec.settings_model.model_validate(binding.settings)
        except ValidationError as exc:
            raise ConfigError(
                f"settings of binding {binding.id!r} (provider {spec.name}) are invalid: "
                f"{_validation_message(exc)}"
            ) from exc
        home, registry = self.home, self.registry

        def stored_credential(name: str) -> str | None:
            return CredentialStore(home).get(binding.id, name)

        get_credential = credential if credential is not None else stored_credential

        http_client: Callable[..., Any] | None = None
        guarded: GuardedConnect | None = None
        if spec.network:

            def http_client(**kwargs: Any) -> Any:
                return guarded_http_client(registry, binding, **kwargs)

            guarded = GuardedConnect(lambda url: check_egress(registry, binding, url))
            egress_audit.watch(spec.factory.__module__.partition(".")[0])
        context = ProviderContext(
            scope=scope,
            binding=binding,
            settings=settings,
            home=home,
            get_credential=get_credential,
            http_client=http_client,
            progress=self._progress,
            embed_progress=self._embed_progress,
            embed_in_background=self._embed_in_background,
            embedders=self._embedders,
            rerankers=self._rerankers,
            connect=guarded,
            authorize=guarded.authorize if guarded is not None else None,
        )
        try:
            provider = spec.factory(context)
        except GoatError:
            raise
        except Exception as exc:
            raise ProviderUnavailable(
                f"provider {spec.name!r} could not be built for {scope.key}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(provider, Provider):
            raise ProviderUnavailable(
                f"provider {spec.name!r} factory returned {type(provider).__name__}, not a Provider"
            )
        if spec.network:  # where its class lives too, when a factory elsewhere builds it
            egress_audit.watch(type(provider).__module__.partition(".")[0])
        return provider

    def _provider(self, scope: Scope, binding: Binding, spec: ProviderSpec) -> Provider:
        key = (binding.model_dump_json(), scope.key)
        provider = self._state.providers.get(key)
        if provider is None:
            provider = self._build(scope, binding, spec)
            self._state.providers[key] = provider
        return provider

    async def prepare_turn(
        self, chat: Chat, prompt: str, budget: int, *, context: MemoryContext | None = None
    ) -> TurnMemory:
        """:meth:`MemoryContext.prepare_turn` for ``chat``.

        :param context: a context the host already holds; it must serve ``chat``'s scope.
        :raises ScopeError: ``context`` serves another scope (checked before any read).
        """
        scope = self.resolve(chat)
        if context is None:
            context = self._context(scope)
        elif not isinstance(context, MemoryContext):
            raise TypeError(f"expected one MemoryContext, got {type(context).__name__}")
        elif context.scope != scope:
            raise ScopeError(
                f"a context of {context.scope.key} cannot prepare a turn of a chat in "
                f"{scope.key}; each chat uses only its own scope"
            )
        return await context.prepare_turn(prompt, budget)

    @abstractmethod
    async def check(
        self,
        scope: Scope,
        *,
        draft: dict[str, Any] | None = None,
        provider: str | None = None,
        api_key: str | None = None,
    ) -> Health:
        """Probe ``scope``'s binding now (see :meth:`MemoryHost.check`)."""

    async def aclose(self) -> None:
        """Close every provider this host built and disconnect every remote session.
        Idempotent."""
        providers = list(self._state.providers.values())
        self._state.providers.clear()
        for provider in providers:
            await provider.close()
        await self.supervisor.aclose()

    async def __aenter__(self) -> Self:
        await self.supervisor.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self.aclose()
        finally:
            await self.supervisor.__aexit__(None, None, None)
