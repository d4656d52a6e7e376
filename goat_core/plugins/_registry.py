"""Typed facade over the plugin manager; the only code that calls hooks.

Collection and chained hooks are called once per implementation, so each result is
attributed to its plugin, an awaitable result is refused (hooks are synchronous), and one
plugin's exception is recorded against it instead of aborting everyone's call.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from goat_core.contract import (
    Binding,
    EmbedderSpec,
    MemoryWrite,
    PageSummary,
    PluginInfo,
    PluginLoadFailure,
    ProviderSpec,
    RecallResult,
    RerankerSpec,
    Scope,
    ScopeRequest,
    ScopeResolution,
)
from goat_core.errors import (
    GoatError,
    NotFound,
    PluginLoadError,
    ProviderUnavailable,
    Rejected,
    ScopeError,
)
from goat_core.plugins._manager import GoatPluginManager, PluginSettings, make_plugin_manager

if TYPE_CHECKING:
    import click
    import pluggy

#: A spec type declared by name through a collection hook (embedders, rerankers).
_Spec = TypeVar("_Spec", EmbedderSpec, RerankerSpec)


def _not_awaitable(value: Any, plugin: str, hook: str) -> Any:
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()
        raise TypeError(
            f"plugin {plugin!r} returned an awaitable from {hook}; GOAT hooks are synchronous"
        )
    return value


class Registry:
    """What core asks of plugins. Build with :meth:`load` or around an existing manager."""

    def __init__(self, pm: GoatPluginManager) -> None:
        self.pm = pm
        self._providers: dict[str, ProviderSpec] | None = None
        self._owners: dict[str, str] = {}
        self._by_plugin: dict[str, list[str]] = {}
        self._embedders: dict[str, EmbedderSpec] | None = None
        self._rerankers: dict[str, RerankerSpec] | None = None

    @classmethod
    def load(cls, settings: PluginSettings | None = None) -> Registry:
        return cls(make_plugin_manager(settings))

    @property
    def failures(self) -> list[PluginLoadFailure]:
        self.providers()  # provider hook failures count too
        return list(self.pm.failures)

    # -- per-implementation calls ---------------------------------------------------------
    def _impls(self, hook: str) -> Iterator[pluggy.HookImpl]:
        caller = getattr(self.pm.hook, hook)
        # pluggy calls the last registered first (tryfirst/trylast respected by the order).
        for impl in reversed(caller.get_hookimpls()):
            if impl.hookwrapper or impl.wrapper:
                continue
            yield impl

    def _call(self, impl: pluggy.HookImpl, hook: str, kwargs: dict[str, Any]) -> Any:
        args = {k: kwargs[k] for k in impl.argnames if k in kwargs}
        if not self.pm.settings.trace:
            return _not_awaitable(impl.function(**args), impl.plugin_name, hook)
        # Calls made here bypass pm.hook, so GOAT_TRACE_PLUGINS is honoured here too.
        from goat_core.logs import get_logger

        log = get_logger("goat_core.trace")
        log.debug("hook.call", hook=hook, plugin=impl.plugin_name)
        try:
            result = _not_awaitable(impl.function(**args), impl.plugin_name, hook)
        except BaseException as exc:
            log.debug("hook.result", hook=hook, plugin=impl.plugin_name, error=repr(exc))
            raise
        log.debug("hook.result", hook=hook, plugin=impl.plugin_name, error=None)
        return result

    def _hook_failure(self, plugin: str, hook: str, exc: BaseException) -> None:
        """Record a hook implementation's failure against its plugin; under strict loading
        (``GOAT_STRICT_PLUGINS=1``) it stops the command (docs/design.md, Plugins).

        :raises PluginLoadError: strict loading.
        """
        import traceback

        origin = self.pm.origins.get(plugin)
        failure = PluginLoadFailure(
            plugin=plugin,
            distribution=origin.distribution if origin else None,
            version=origin.version if origin else None,
            kind="hook",
            error=f"{hook}: {type(exc).__name__}: {exc}",
            traceback="".join(traceback.format_exception(exc)),
        )
        self.pm.record_failure(failure)
        if self.pm.settings.strict:
            raise PluginLoadError([failure]) from exc

    # -- providers ----------------------------------------------------------------------
    def providers(self) -> dict[str, ProviderSpec]:
        """All declared providers by name (cached). Bad declarations become failures."""
        if self._providers is not None:
            return self._providers
        found: dict[str, ProviderSpec] = {}
        hook = "goat_register_providers"
        for impl in reversed(list(self._impls(hook))):  # registration order: built-ins first
            try:
                specs = list(self._call(impl, hook, {}) or ())
                for spec in specs:
                    if not isinstance(spec, ProviderSpec):
                        raise TypeError(f"expected ProviderSpec, got {type(spec).__name__}")
            except Exception as exc:
                self._hook_failure(impl.plugin_name, hook, exc)
                continue
            for spec in specs:
                if spec.name in found:
                    self._hook_failure(
                        impl.plugin_name,
                        hook,
                        ValueError(
                            f"provider {spec.name!r} is already declared by plugin "
                            f"{self._owners[spec.name]!r}"
                        ),
                    )
                    continue
                found[spec.name] = spec
                self._owners[spec.name] = impl.plugin_name
                self._by_plugin.setdefault(impl.plugin_name, []).append(spec.name)
        self._providers = found
        return found

    def get_provider(self, name: str) -> ProviderSpec:
        """The spec of provider ``name``.

        :raises ProviderUnavailable: a plugin of that name failed to load (error included).
        :raises NotFound: no installed plugin declares it.
        """
        providers = self.providers()
        if name in providers:
            return providers[name]
        for failure in self.pm.failures:
            if failure.plugin == name:
                dist = failure.distribution or "its distribution"
                raise ProviderUnavailable(f"{name}: plugin {dist} failed to load: {failure.error}")
        known = ", ".join(sorted(providers)) or "none"
        raise NotFound(f"no provider named {name!r} is installed (installed: {known})")

    # -- embedders and rerankers ----------------------------------------------------------
    def _named(self, hook: str, kind: type[_Spec], noun: str) -> dict[str, _Spec]:
        """The specs of type ``kind`` that ``hook`` declares, by name. Bad declarations and
        duplicate names become failures of the plugin that made them."""
        found: dict[str, _Spec] = {}
        for impl in reversed(list(self._impls(hook))):
            try:
                specs = list(self._call(impl, hook, {}) or ())
                for spec in specs:
                    if not isinstance(spec, kind):
                        raise TypeError(f"expected {kind.__name__}, got {type(spec).__name__}")
            except Exception as exc:
                self._hook_failure(impl.plugin_name, hook, exc)
                continue
            for spec in specs:
                if spec.name in found:
                    self._hook_failure(
                        impl.plugin_name,
                        hook,
                        ValueError(f"{noun} {spec.name!r} is already declared"),
                    )
                    continue
                found[spec.name] = spec
        return found

    def embedders(self) -> dict[str, EmbedderSpec]:
        """All declared embedders by name (cached). Bad declarations and duplicate names
        become failures of the plugin that made them."""
        if self._embedders is None:
            self._embedders = self._named("goat_register_embedders", EmbedderSpec, "embedder")
        return self._embedders

    def get_embedder(self, name: str) -> EmbedderSpec:
        """The spec of embedder ``name``.

        :raises NotFound: no installed plugin declares it (the message lists those that do).
        """
        return _named_one(self.embedders(), "embedder", name)

    def rerankers(self) -> dict[str, RerankerSpec]:
        """All declared rerankers by name (cached). Bad declarations and duplicate names
        become failures of the plugin that made them."""
        if self._rerankers is None:
            self._rerankers = self._named("goat_register_rerankers", RerankerSpec, "reranker")
        return self._rerankers

    def get_reranker(self, name: str) -> RerankerSpec:
        """The spec of reranker ``name``.

        :raises NotFound: no installed plugin declares it (the message lists those that do).
        """
        return _named_one(self.rerankers(), "reranker", name)

    def provider_owner(self, name: str) -> str | None:
        self.providers()
        return self._owners.get(name)

    def plugin_infos(self) -> list[PluginInfo]:
        """Loaded plugins with distribution, version, hooks, providers and capabilities."""
        providers = self.providers()
        infos = []
        for name, plugin in sorted(self.pm.list_name_plugin(), key=lambda p: p[0] or ""):
            if plugin is None or name is None:
                continue
            origin = self.pm.origins.get(name)
            hooks = sorted(c.name for c in self.pm.get_hookcallers(plugin) or [])
            mine = self._by_plugin.get(name, [])
            infos.append(
                PluginInfo(
                    name=name,
                    distribution=origin.distribution if origin else None,
                    version=origin.version if origin else None,
                    builtin=bool(origin and origin.builtin),
                    hooks=tuple(hooks),
                    providers=tuple(mine),
                    capabilities={
                        p: sorted(c.value for c in providers[p].capabilities) for p in mine
                    },
                )
            )
        return infos

    # -- scope ----------------------------------------------------------------------------
    def resolve_scope(self, request: ScopeRequest) -> ScopeResolution:
        """Resolve a chat to one scope. A project id always decides.

        :raises ScopeError: invalid Pen id, or a plugin answered another scope than the
            chat's project id.
        """
        expected = Scope.pen(request.project_id) if request.project_id is not None else None
        hook = "goat_resolve_scope"
        result = None
        for impl in self._impls(hook):  # firstresult: stop at the first non-None answer
            result = self._call(impl, hook, {"request": request})
            if result is not None:
                if not isinstance(result, ScopeResolution):
                    raise ScopeError(
                        f"plugin {impl.plugin_name!r} returned {type(result).__name__} "
                        f"from {hook}, not a ScopeResolution"
                    )
                break
        if expected is not None and (result is None or result.scope != expected):
            got = result.scope.key if result is not None else "nothing"
            raise ScopeError(
                f"scope resolution answered {got} for a chat whose project id is "
                f"{expected.pen_id!r}; a chat's project id always decides"
            )
        if result is None:
            raise ScopeError("no plugin resolved the scope")
        return result

    # -- commands -------------------------------------------------------------------------
    def register_commands(self, cli: click.Group) -> None:
        hook = "goat_register_commands"
        for impl in self._impls(hook):
            before = dict(cli.commands)
            try:
                self._call(impl, hook, {"cli": cli})
            except Exception as exc:
                self._hook_failure(impl.plugin_name, hook, exc)
            for name, command in before.items():  # an existing command is never replaced
                if cli.commands.get(name) is not command:
                    cli.commands[name] = command
                    self._hook_failure(
                        impl.plugin_name,
                        hook,
                        ValueError(f"command {name!r} already exists and was not replaced"),
                    )

    # -- interception -----------------------------------------------------------------------
    def inspect_remember(self, scope: Scope, write: MemoryWrite) -> MemoryWrite:
        """Run ``goat_inspect_remember`` in turn. :raises Rejected: a plugin refused."""
        hook = "goat_inspect_remember"
        for impl in self._impls(hook):
            try:
                out = self._call(impl, hook, {"scope": scope, "write": write})
            except Rejected:
                raise
            except GoatError as exc:
                raise Rejected(f"refused by plugin {impl.plugin_name!r}: {exc}") from exc
            if out is not None:
                if not isinstance(out, MemoryWrite):
                    raise TypeError(f"plugin {impl.plugin_name!r} returned {type(out).__name__}")
                write = out
        return write

    def filter_recall(self, scope: Scope, query: str, result: RecallResult) -> RecallResult:
        hook = "goat_filter_recall"
        for impl in self._impls(hook):
            out = self._call(impl, hook, {"scope": scope, "query": query, "result": result})
            if out is not None:
                if not isinstance(out, RecallResult):
                    raise TypeError(f"plugin {impl.plugin_name!r} returned {type(out).__name__}")
                result = out
        return result

    def filters_browse(self) -> bool:
        """Whether any plugin implements ``goat_filter_browse`` (no hook call, no I/O)."""
        return any(True for _ in self._impls("goat_filter_browse"))

    def filter_browse(self, scope: Scope, items: Sequence[PageSummary]) -> list[PageSummary]:
        hook = "goat_filter_browse"
        current = list(items)
        for impl in self._impls(hook):
            out = self._call(impl, hook, {"scope": scope, "items": tuple(current)})
            if out is not None:
                current = list(out)
        return current

    def authorize_egress(self, binding: Binding, url: str) -> bool:
        """Any ``False`` refuses; otherwise at least one ``True`` is needed."""
        hook = "goat_authorize_egress"
        allowed = False
        for impl in self._impls(hook):
            out = self._call(impl, hook, {"binding": binding, "url": url})
            if out is False:
                return False
            if out is True:
                allowed = True
        return allowed


def _named_one(table: Mapping[str, _Spec], kind: str, name: str) -> _Spec:
    """``table[name]``. :raises NotFound: naming ``kind`` and every installed name."""
    if name in table:
        return table[name]
    known = ", ".join(sorted(table)) or "none"
    raise NotFound(f"no {kind} named {name!r} is installed (installed: {known})")
