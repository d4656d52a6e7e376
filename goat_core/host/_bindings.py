"""Binding management and status: bind, unbind, enable, check (saved or draft settings),
refresh and the rows of ``goat status``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from goat_core.contract import (
    Binding,
    Derivation,
    Health,
    ProjectRecord,
    ProviderSpec,
    Scope,
    ScopeRequest,
    ScopeResolution,
    Tone,
)
from goat_core.errors import BadInput, ConfigError, GoatError, NotFound
from goat_core.host._config import Config, binding_id_for
from goat_core.host._context import MemoryContext
from goat_core.host._credentials import CredentialStore, check_secret
from goat_core.host._hostbase import HostBase, _Checked, _validation_message
from goat_core.host._leases import same_servers, unavailable_reason
from goat_core.host._overlap import check_root_overlap
from goat_core.host._records import (
    DEFAULT_BINDING_ID,
    EMBEDDED_DEFAULT_PROVIDER,
    BindingStatus,
    BindOutcome,
)
from goat_core.host._supervisor import SessionState, transport_fingerprint


def _is_default_store(scope: Scope, binding: Binding) -> bool:
    """Whether ``binding`` serves the embedded default store (tone ``quiet``; docs/design.md,
    Hosts and tools).

    True for the synthetic binding of an unbound Global scope, and for an explicit Global
    binding to :data:`EMBEDDED_DEFAULT_PROVIDER` with no settings: that binding opens the
    very same folder (``GoatHome.default_store_dir(global)``), so calling it "non-default"
    would misreport the store in use. Any Pen binding is non-default (``accent``): a Pen
    has no default store, binding one is always an explicit choice.
    """
    if binding.id == DEFAULT_BINDING_ID:
        return True
    return (
        scope.is_global and binding.provider == EMBEDDED_DEFAULT_PROVIDER and not binding.settings
    )


class HostBindings(HostBase):
    """Binding management and status on top of :class:`HostBase`: :meth:`bind`,
    :meth:`unbind`, :meth:`set_enabled`, :meth:`check`, :meth:`refresh`, :meth:`status`."""

    def _validate(self, spec: ProviderSpec, settings: dict[str, Any]) -> BaseModel:
        if not isinstance(settings, dict):
            raise ConfigError(f"settings must be a mapping, got {type(settings).__name__}")
        try:
            validated = spec.settings_model.model_validate(settings)
        except ValidationError as exc:
            raise ConfigError(
                f"invalid settings for provider {spec.name}: {_validation_message(exc)}"
            ) from exc
        problem = self._embedder_problem(validated) or self._reranker_problem(validated)
        if problem is not None:
            raise ConfigError(f"invalid settings for provider {spec.name}: {problem}")
        return validated

    def _model_warning(self, settings: BaseModel | dict[str, Any]) -> str | None:
        """Why the embedder or reranker a saved binding names cannot be used, and what
        recall answers meanwhile (``goat check`` and ``goat status`` warn with it);
        ``None``: both usable, or none set."""
        problem = self._embedder_problem(settings)
        if problem is not None:
            return f"{problem}: recall answers keyword results only, degraded"
        problem = self._reranker_problem(settings)
        if problem is not None:
            return f"{problem}: recall answers in its unreranked order, degraded"
        return None

    def _reranker_problem(self, settings: BaseModel | dict[str, Any]) -> str | None:
        """Why the reranker these settings name (a folder store's ``reranker``) cannot be
        used: not installed (the message names those that are), or its weights are not on
        disk. ``None``: no reranker set, or an available one."""
        name = (
            settings.get("reranker")
            if isinstance(settings, dict)
            else getattr(settings, "reranker", None)
        )
        if not isinstance(name, str):
            return None
        installed = self.registry.rerankers()
        if name in installed:
            from goat_core.contract import reranker_cache_dir

            cache = reranker_cache_dir(self.home.data_dir, name)
            if installed[name].available(cache):
                return None
            return (
                f"the weights of reranker {name!r} are not on disk ({cache}, or the package "
                "that ships them)"
            )
        known = ", ".join(sorted(installed)) or "none"
        return f"reranker {name!r} is not installed (installed: {known})"

    def _embedder_problem(self, settings: BaseModel | dict[str, Any]) -> str | None:
        """Why the embedder these settings name (a folder store's ``embedder``) cannot be
        used: not installed (the message names those that are). ``None``: no embedder set,
        or an installed one."""
        name = (
            settings.get("embedder")
            if isinstance(settings, dict)
            else getattr(settings, "embedder", None)
        )
        if not isinstance(name, str):
            return None
        installed = self.registry.embedders()
        if name in installed:
            from goat_core.contract import embedder_cache_dir

            cache = embedder_cache_dir(self.home.data_dir, name)
            if installed[name].available(cache):
                return None
            return (
                f"the weights of embedder {name!r} are not fetched: run "
                f"`goat embedders fetch {name}` (offline: add --from PATH)"
            )
        known = ", ".join(sorted(installed)) or "none"
        return (
            f"embedder {name!r} is not installed (installed: {known}; `goat embedders` lists them)"
        )

    def _binding(self, scope: Scope, spec: ProviderSpec, validated: BaseModel) -> Binding:
        egress = tuple(spec.egress_urls(validated)) if spec.egress_urls else ()
        return Binding(
            id=binding_id_for(scope),
            provider=spec.name,
            settings=validated.model_dump(mode="json", exclude_defaults=True),
            egress=egress,
        )

    async def bind(
        self,
        scope: Scope,
        provider_name: str,
        settings: dict[str, Any],
        *,
        api_key: str | None = None,
        connect: bool = True,
        project: ProjectRecord | None = None,
    ) -> BindOutcome:
        """Bind ``scope`` to a provider (replacing its binding) and save ``memory.json``.

        :param settings: raw settings, validated by the provider's settings model.
        :param api_key: stored in the credential store under the binding id, never config;
            only after ``memory.json`` was saved (a failed save leaves no key behind, and a
            failed key store puts the previous ``memory.json`` back).
        :param connect: for a network provider, make the explicit connect (``check()``)
            after saving and report it; a failed connect does not undo the save.
        :param project: the folder this Pen is bound for (``goat bind`` in it), kept with
            the records of the binding it replaces (``goat_core.scope.kept_pen``).
        :raises ConfigError: invalid settings (pydantic's messages), or a credential for a
            provider that declares no credential.
        :raises PathError: a store root that is, holds or sits inside the GOAT home or
            another scope's store root (rule ``store-overlap``).
        :raises NotFound: no such provider. :raises ProviderUnavailable: it failed to load.
        """
        spec = self.registry.get_provider(provider_name)
        validated = self._validate(spec, settings)
        binding = self._binding(scope, spec, validated)
        backend = None
        with self._config_lock():
            previous = self.config
            check_root_overlap(self.home, previous, scope, validated)
            old = previous.selected(scope)
            binding = _with_project(binding, old, project)
            config = previous.with_binding(scope, binding)
            dropped = (
                tuple(sorted(set(old.settings) - set(binding.settings)))
                if old is not None and old.provider == binding.provider
                else ()
            )
            if api_key is None:
                path = self._save(config)
                if old is not None and not same_servers(old, binding):
                    # A key stored for another provider or server is never sent to the new one.
                    self._delete_credentials(old)
            else:
                if not spec.credentials:
                    raise ConfigError(f"provider {spec.name} declares no credential; none taken")
                backend, path = self._save_with_key(
                    previous, config, binding, spec.credentials[0].name, api_key
                )
        await self._forget_scope(scope)
        await self._reconcile()  # an unchanged remote binding keeps its healthy session
        health = None
        if spec.network and connect:
            health = await self.supervisor.check(scope.key, explicit=True)
        return BindOutcome(
            scope=scope,
            binding=binding,
            config_path=path,
            health=health,
            credential_backend=backend,
            dropped=dropped,
        )

    def _save_with_key(
        self, previous: Config, config: Config, binding: Binding, name: str, api_key: str
    ) -> tuple[Literal["keyring", "file"], Path]:
        """Save ``config``, then store the key under ``binding.id``.

        The save comes first, so a failed save leaves no key behind for a binding that does
        not exist. Should storing the key then fail (an empty key, an unsafe credential
        file), ``previous`` is saved back before the error propagates, so the saved binding
        is never paired with a key it was not given.

        :raises ConfigError: the save failed (no key stored).
        :raises BadInput: an unusable key. :raises CredentialError: the key store failed.
        """
        path = self._save(config)
        try:
            backend = CredentialStore(self.home).set(binding.id, name, api_key)
        except BaseException:
            self._save(previous)
            raise
        return backend, path

    async def adopt(self, scope: Scope, project: ProjectRecord) -> Path:
        """Record ``project`` on ``scope``'s binding, so that folder keeps this Pen when its
        identity changes (``goat scope --adopt``). Settings and credentials are untouched.

        :raises NotFound: ``scope`` has no binding.
        """
        with self._config_lock():
            config = self.config
            binding = config.selected(scope)
            if binding is None:
                raise NotFound(f"{scope.key} has no binding: bind it first")
            path = self._save(config.with_binding(scope, _with_project(binding, binding, project)))
        await self._forget_scope(scope)
        return path

    async def unbind(self, scope: Scope) -> Path:
        """Remove ``scope``'s binding (Global falls back to the embedded default; a Pen has
        no memory). Notes are never touched.

        The binding's stored credentials are deleted too (keyring or owner-only file), so
        a later bind never silently reuses an old key.

        :raises NotFound: ``scope`` has no binding.
        """
        with self._config_lock():
            binding, _ = self._selected(scope)
            config = self.config.without_binding(scope)
            path = self._save(config)
            if binding is not None and binding.id not in config.bindings:
                self._delete_credentials(binding)
        await self._forget_scope(scope)
        await self._reconcile()  # disconnects a removed remote binding
        return path

    def _delete_credentials(self, binding: Binding) -> None:
        try:
            spec = self.registry.get_provider(binding.provider)
        except GoatError:
            return  # provider gone: nothing declared to delete
        if not spec.credentials:
            return
        store = CredentialStore(self.home)
        for cred in spec.credentials:
            store.delete(binding.id, cred.name)

    async def set_enabled(self, scope: Scope, enabled: bool) -> Path:
        """Enable or disable ``scope``'s binding (disabled: tone ``dim``, never contacted).

        :raises NotFound: ``scope`` has no binding.
        """
        with self._config_lock():
            path = self._save(self.config.with_enabled(scope, enabled))
        await self._forget_scope(scope)
        await self._reconcile()  # a disabled remote binding is disconnected, never contacted
        return path

    async def _forget_scope(self, scope: Scope) -> None:
        self._state.health.pop(scope.key, None)
        for key in [k for k in self._state.providers if k[1] == scope.key]:
            await self._state.providers.pop(key).close()

    async def _probe(
        self,
        scope: Scope,
        binding: Binding,
        spec: ProviderSpec,
        *,
        record: bool,
        credential: Callable[[str], str | None] | None = None,
    ) -> Health:
        try:
            provider = (
                self._provider(scope, binding, spec)
                if record
                else self._build(scope, binding, spec, credential=credential)
            )
        except GoatError as exc:
            health = Health.broken(str(exc))
        else:
            try:
                health = await provider.check()
            except GoatError as exc:
                health = Health.broken(str(exc))
            except Exception as exc:
                health = Health.broken(f"{type(exc).__name__} during check")
            finally:
                if not record:
                    await provider.close()
        problem = self._model_warning(binding.settings)
        if problem is not None and health.ok:
            health = Health.broken(problem)
        if record:
            self._state.health[scope.key] = _Checked(health, binding.model_dump_json())
        return health

    async def check(
        self,
        scope: Scope,
        *,
        draft: dict[str, Any] | None = None,
        provider: str | None = None,
        api_key: str | None = None,
    ) -> Health:
        """Probe ``scope``'s binding now and record the result for :meth:`status`.

        :param draft: settings to test in isolation (not saved, not recorded) with the
            scope's provider (or ``provider``). A draft equal to the saved settings counts
            as checking the saved binding. For a remote provider "equal" means the same
            provider and transport fingerprint (server, bank and credential): such a draft
            is an explicit check of the saved connection, so its success refreshes the
            saved session (an auth block or backoff included); an edited draft is checked
            on a provider of its own that is closed afterwards, touching nothing saved.
            The saved key goes only to the saved provider and server (as :meth:`bind`
            keeps it): a draft naming another provider or server is checked without it.
        :param api_key: a key for the draft alone (requires ``draft``): used by this check,
            never stored, never sent anywhere else.
        :raises ConfigError: an invalid draft. :raises BadInput: ``api_key`` without a
            draft, or for a provider that declares no credential.

        A remote binding's explicit check retries at once, whatever its backoff or an
        earlier auth failure; it joins a check already in flight for the same transport.
        """
        if api_key is not None and draft is None:
            raise BadInput(
                "a credential can only be checked with draft settings; to change the saved "
                "one, bind again with it"
            )
        if draft is not None:
            binding, _ = self._selected(scope)
            if binding is None and provider is None and not scope.is_global:
                raise BadInput(
                    f"{scope.key} has no binding, so there is no provider to test these "
                    f"settings with: bind it first (goat bind --pen {scope.pen_id} PROVIDER "
                    "--set ...), then check changes to it"
                )
            name = provider or (binding.provider if binding else EMBEDDED_DEFAULT_PROVIDER)
            spec = self.registry.get_provider(name)
            candidate = self._binding(scope, spec, self._validate(spec, draft))
            if api_key is not None and not spec.credentials:
                raise BadInput(f"provider {spec.name} declares no credential; none taken")
            credential = self._draft_credential(binding, candidate, spec, api_key)
            if spec.network:
                return await self._check_remote_draft(scope, binding, spec, candidate, credential)
            unchanged = (
                binding is not None
                and binding.provider == name
                and (binding.settings == candidate.settings)
            )
            if unchanged and binding is not None and api_key is None:
                return await self._probe(scope, binding, spec, record=True)
            return await self._probe(scope, candidate, spec, record=False, credential=credential)
        binding, _ = self._selected(scope)
        if self._remote_spec(binding) is not None:
            await self._reconcile()
            if scope.key in self.supervisor.keys():
                return await self.supervisor.check(scope.key, explicit=True)
        context = self._context(scope)
        if context.binding is None or not context.available or context.spec is None:
            tone = Tone.DIM if context.state == "off" else Tone.WARN
            health = Health(ok=False, tone=tone, reason=context.reason or "no memory")
            return health
        return await self._probe(scope, context.binding, context.spec, record=True)

    def _draft_credential(
        self,
        saved: Binding | None,
        candidate: Binding,
        spec: ProviderSpec,
        api_key: str | None,
    ) -> Callable[[str], str | None] | None:
        """What a draft check's provider reads as its secrets: the draft's own ``api_key``
        (under the provider's first declared credential); else the saved binding's stored
        key when the draft keeps its provider and servers (``None``: the usual lookup, when
        the draft's binding id is the saved one; an explicit read of the saved id when the
        scope selects a shared binding); else nothing, so a saved key never reaches a
        server only a draft names."""
        if api_key is not None:
            check_secret(api_key, "the credential for this check")
            key, name = api_key, spec.credentials[0].name
            return lambda wanted: key if wanted == name else None
        if saved is None or not same_servers(saved, candidate):
            return lambda wanted: None
        if saved.id == candidate.id:
            return None
        home, saved_id = self.home, saved.id

        def saved_credential(wanted: str) -> str | None:
            return CredentialStore(home).get(saved_id, wanted)

        return saved_credential

    async def _check_remote_draft(
        self,
        scope: Scope,
        saved: Binding | None,
        spec: ProviderSpec,
        candidate: Binding,
        credential: Callable[[str], str | None] | None,
    ) -> Health:
        draft_provider = self._build(scope, candidate, spec, credential=credential)
        try:
            fingerprint = draft_provider.transport_fingerprint()
            if fingerprint is None and credential is None:
                # the draft reads the stored key: the saved binding's identity rule applies
                fingerprint = transport_fingerprint(self._target(scope, candidate, spec))
            same = False
            if (
                fingerprint is not None
                and saved is not None
                and saved.provider == spec.name
                and saved.enabled
            ):
                await self._reconcile()
                same = self.supervisor.fingerprint(scope.key) == fingerprint
        except BaseException:
            await draft_provider.close()
            raise
        if same:
            await draft_provider.close()
            return await self.supervisor.check(scope.key, explicit=True)
        return await self.supervisor.check_isolated(draft_provider)

    async def refresh(
        self, *, request: ScopeRequest | None = None, timeout: float | None = 10.0
    ) -> list[BindingStatus]:
        """A short live check of each enabled binding, then :meth:`status`.

        Remote bindings are checked through the supervisor (shared per transport; an
        auth failure of this process is not retried), all at once, waiting at most
        ``timeout`` seconds (a check still running goes on and publishes later). Local
        bindings get their cheap probe. Disabled and unbound bindings are never
        contacted. This is what ``goat status`` runs, and ``--watch`` every 15 s.
        """
        import anyio

        await self._reconcile()
        remote = self.supervisor.keys()
        with anyio.move_on_after(timeout):
            await self.supervisor.recheck(remote)
        for row in self.status(request=request):
            if row.tone is Tone.DIM or row.scope in remote:
                continue
            scope = Scope.parse(row.scope)
            binding, problem = self._selected(scope)
            if problem is None and binding is not None and binding.enabled:
                await self.check(scope)
        return self.status(request=request)

    def status(self, *, request: ScopeRequest | None = None) -> list[BindingStatus]:
        """Each configured scope (Global always) with label, provider, tone and reason.

        :param request: what the host knows about the current directory; its Pen's row
            carries ``identity`` and ``derivation`` (and is added, dim, when unbound).
        """
        config = self.config
        self._sync_remote()  # status only for the configuration in force now
        rows: list[BindingStatus] = []
        resolution = self.registry.resolve_scope(request) if request is not None else None
        kept = self._kept(request, resolution)
        scopes: list[Scope] = [Scope.global_()]
        for key in sorted(config.selection, key=lambda k: (k != "global", k)):
            scope = Scope.parse(key)
            if scope not in scopes:
                scopes.append(scope)
        here = kept[0] if kept is not None else resolution.scope if resolution else None
        if here is not None and here not in scopes:
            scopes.append(here)
        for scope in scopes:
            row = self._status_row(scope)
            if (
                resolution is not None
                and here == scope
                and (resolution.derivation is not Derivation.GLOBAL)
            ):
                how = "continued" if kept is not None else resolution.derivation.value
                row = row.model_copy(update={"identity": resolution.identity, "derivation": how})
            rows.append(row)
        return rows

    def _kept(
        self, request: ScopeRequest | None, resolution: ScopeResolution | None
    ) -> tuple[Scope, str] | None:
        """The bound Pen the current folder keeps after its identity changed
        (:func:`goat_core.scope.kept_pen`), so status shows the Pen that is served."""
        from goat_core.scope import kept_pen

        if request is None or request.cwd is None or resolution is None:
            return None
        try:
            bound = [(s, b.projects) for s, b in self.config.scopes() if s.pen_id]
            return kept_pen(request.cwd, resolution.scope, bound)
        except GoatError:
            return None

    def _status_row(self, scope: Scope) -> BindingStatus:
        context = self._context(scope)
        binding = context.binding
        checked = self._state.health.get(scope.key)
        last = checked.health.checked_at if checked else None
        base: dict[str, Any] = {
            "scope": scope.key,
            "label": context.label,
            "provider": binding.provider if binding else None,
            "binding_id": binding.id if binding else None,
            "enabled": binding.enabled if binding else False,
            "last_checked": last,
        }
        if context.state == "off":
            return BindingStatus(tone=Tone.DIM, reason=context.reason or "off", **base)
        if context.spec is not None and context.spec.network and binding is not None:
            return self._remote_row(scope, context, base)
        if context.state == "unavailable":
            return BindingStatus(tone=Tone.WARN, reason=context.reason or "unavailable", **base)
        assert binding is not None
        warned = checked is not None and (not checked.health.ok or checked.health.tone is Tone.WARN)
        if checked and checked.fingerprint == binding.model_dump_json() and warned:
            return BindingStatus(tone=Tone.WARN, reason=checked.health.reason, **base)
        problem = self._model_warning(binding.settings)
        if problem is not None:
            return BindingStatus(tone=Tone.WARN, reason=problem, **base)
        reason = (
            "embedded default"
            if binding.id == DEFAULT_BINDING_ID
            else (checked.health.reason if checked else "configured")
        )
        tone = Tone.QUIET if _is_default_store(scope, binding) else Tone.ACCENT
        return BindingStatus(tone=tone, reason=reason, **base)

    def _remote_row(
        self, scope: Scope, context: MemoryContext, base: dict[str, Any]
    ) -> BindingStatus:
        """A remote binding's row: only the supervisor's current generation is shown."""
        status = self.supervisor.status(scope.key)
        health = status.health if status is not None else None
        base = {**base, "last_checked": health.checked_at if health is not None else None}
        if status is None or status.state is SessionState.UNCHECKED or health is None:
            if context.state == "unavailable" and context.reason:
                return BindingStatus(tone=Tone.WARN, reason=context.reason, **base)
            what = "checking now" if status is not None and status.checking else "not checked yet"
            return BindingStatus(tone=Tone.ACCENT, reason=f"configured; {what}", **base)
        if status.state is SessionState.HEALTHY:
            return BindingStatus(tone=Tone.ACCENT, reason=health.reason, **base)
        return BindingStatus(
            tone=Tone.WARN,
            reason=unavailable_reason(status.state, health),
            cause=health.cause or "unreachable",
            **base,
        )


def _with_project(binding: Binding, old: Binding | None, project: ProjectRecord | None) -> Binding:
    """``binding`` keeping the project records of ``old`` (the binding it replaces) and
    adding ``project``; the newest record of a location wins."""
    records = list(old.projects) if old is not None else []
    if project is not None:
        records = [r for r in records if r.location != project.location] + [project]
    return binding.model_copy(update={"projects": tuple(records)}) if records else binding
