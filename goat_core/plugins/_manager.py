"""Plugin loading: a manager factory with our own fault-isolated entry-point loop.

pluggy's ``load_setuptools_entrypoints`` aborts on the first plugin whose import raises and
silently skips duplicate names, so GOAT loads each entry point of group
``goat_core.plugins`` in isolation, in a deterministic order (name, then distribution):

- a plugin whose import, registration or hook names fail is recorded as a
  :class:`~goat_core.contract.PluginLoadFailure` (with its traceback); the rest still load;
- a second distribution using an entry-point name already taken is reported (``duplicate``);
- a distribution whose ``Requires-Dist`` on ``goat-core`` excludes this version is reported
  (``incompatible``) and never imported;
- ``GOAT_LOAD_PLUGINS=a,b`` loads only those entry points (an empty value loads none),
  ``GOAT_DISABLE_PLUGINS=a,b`` blocks them, ``GOAT_STRICT_PLUGINS=1`` raises
  :class:`~goat_core.errors.PluginLoadError` on any failure, ``GOAT_TRACE_PLUGINS=1`` logs
  every hook call.

Nothing happens at import time: call :func:`make_plugin_manager`.
"""

from __future__ import annotations

import importlib
import os
import re
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pluggy

from goat_core import hookspecs
from goat_core._version import __version__
from goat_core.contract import PluginLoadFailure
from goat_core.errors import PluginLoadError
from goat_core.hookspecs import PROJECT_NAME

ENTRY_POINT_GROUP = "goat_core.plugins"

#: Built-in plugins, registered through the same hooks before any entry point (so a
#: third-party plugin's ``firstresult`` answer runs first).
#: Each is named ``goat.<module>`` without the module's leading underscore (``goat.scope``).
DEFAULT_PLUGINS: tuple[str, ...] = (
    "goat_core.plugins.builtin._scope",
    "goat_core.plugins.builtin._egress",
)


def _split(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    return tuple(sorted({p.strip() for p in value.split(",") if p.strip()}))


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class PluginSettings:
    """How to load plugins. :meth:`from_env` reads the ``GOAT_*_PLUGINS`` variables.

    :param autoload: load entry points at all (tests use ``False`` and register by hand).
    :param load: allow-list of entry-point names; ``None`` means all, ``()`` none.
    :param disable: entry-point names to block.
    :param strict: raise :class:`PluginLoadError` on any failure.
    :param trace: log every hook call and result.
    :param builtins: register :data:`DEFAULT_PLUGINS`.
    """

    autoload: bool = True
    load: tuple[str, ...] | None = None
    disable: tuple[str, ...] = ()
    strict: bool = False
    trace: bool = False
    builtins: bool = True

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> PluginSettings:
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {
            "load": _split(env.get("GOAT_LOAD_PLUGINS")),
            "disable": _split(env.get("GOAT_DISABLE_PLUGINS")) or (),
            "strict": _truthy(env.get("GOAT_STRICT_PLUGINS")),
            "trace": _truthy(env.get("GOAT_TRACE_PLUGINS")),
        }
        values.update(overrides)
        return cls(**values)

    def allows(self, name: str) -> bool:
        return name not in self.disable and (self.load is None or name in self.load)


@dataclass
class _Origin:
    distribution: str | None
    version: str | None
    value: str | None
    builtin: bool = False


class GoatPluginManager(pluggy.PluginManager):
    """A pluggy manager that remembers where each plugin came from and what failed."""

    def __init__(self) -> None:
        super().__init__(PROJECT_NAME)
        self.failures: list[PluginLoadFailure] = []
        self.origins: dict[str, _Origin] = {}
        self.settings: PluginSettings = PluginSettings(autoload=False)

    def record_failure(self, failure: PluginLoadFailure) -> None:
        self.failures.append(failure)
        from goat_core.logs import get_logger

        get_logger("goat_core.plugins").warning(
            "plugin.load_failed", plugin=failure.plugin, kind=failure.kind, error=failure.error
        )


@dataclass
class _Candidate:
    name: str
    value: str
    dist_name: str | None
    dist_version: str | None
    requires: list[str] = field(default_factory=list)
    ep: Any = None


def _failure(c: _Candidate, kind: str, exc: BaseException | str) -> PluginLoadFailure:
    if isinstance(exc, BaseException):
        error = f"{type(exc).__name__}: {exc}"
        tb = "".join(traceback.format_exception(exc))
    else:
        error, tb = exc, None
    return PluginLoadFailure(
        plugin=c.name,
        distribution=c.dist_name,
        version=c.dist_version,
        value=c.value,
        kind=kind,
        error=error,
        traceback=tb,
    )


#: The distribution name a requirement line starts with (PEP 508).
_REQ_NAME = re.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")
_SPEC = r"(?:>=|<=|==|!=|~=|<|>)\s*\d+(?:\.\d+)*"
#: A goat-core requirement of plain release versions only: no markers, wildcards, local or
#: pre-release parts (those go to ``packaging``).
_PLAIN_CORE_REQ = re.compile(
    rf"\s*goat[-_.]+core\s*(?:\[[\w\s,.-]*\])?\s*(?:{_SPEC}(?:\s*,\s*{_SPEC})*)?\s*",
    re.IGNORECASE,
)
#: A marker that only holds when an extra is requested (``; extra == "test"``): never here,
#: where markers are evaluated with ``extra == ""``.
_ONLY_FOR_EXTRA = re.compile(r";\s*extra\s*==\s*(?:\"[A-Za-z0-9._-]+\"|'[A-Za-z0-9._-]+')\s*")
_SPEC_PARTS = re.compile(r"(>=|<=|==|!=|~=|<|>)\s*(\d+(?:\.\d+)*)")


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _plainly_satisfied(line: str) -> bool:
    """Whether a plain goat-core requirement (``goat-core>=0.1.0,<0.2``) holds for this
    release, compared as PEP 440 does for release-only versions (zero-padded tuples); ``False``
    means "ask ``packaging``", never "incompatible"."""
    if _PLAIN_CORE_REQ.fullmatch(line) is None or not re.fullmatch(r"\d+(?:\.\d+)*", __version__):
        return False
    have = _release(__version__)
    for op, text in _SPEC_PARTS.findall(line):
        want = _release(text)
        width = max(len(have), len(want))
        a = have + (0,) * (width - len(have))
        b = want + (0,) * (width - len(want))
        if op == "~=":  # ~=X.Y[.Z]: >= X.Y[.Z] and the same release up to the last part
            if len(want) < 2:
                return False
            ok = a >= b and a[: len(want) - 1] == b[: len(want) - 1]
        else:
            ok = {
                ">=": a >= b,
                "<=": a <= b,
                "==": a == b,
                "!=": a != b,
                "<": a < b,
                ">": a > b,
            }[op]
        if not ok:
            return False
    return True


def _incompatibility(requires: Iterable[str]) -> str | None:
    """The goat-core requirement this version does not satisfy, if any.

    Lines naming another distribution are skipped by name alone, and a plain goat-core
    requirement that holds is settled without ``packaging`` (importing it costs more than a
    command's whole plugin load); anything else is parsed by ``packaging``.
    """
    todo = []
    for line in requires:
        m = _REQ_NAME.match(line)
        if m is None or re.sub(r"[-_.]+", "-", m.group(1)).lower() != "goat-core":
            continue  # another distribution, or not a requirement at all
        head, semi, _marker = line.partition(";")
        if semi and _ONLY_FOR_EXTRA.fullmatch(line[len(head) :]):
            continue  # e.g. goat-core[testing]; extra == "test"
        if not _plainly_satisfied(line):
            todo.append(line)
    if not todo:
        return None
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    for line in todo:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) != "goat-core":
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        if req.specifier and not req.specifier.contains(__version__, prereleases=True):
            return f"requires goat-core{req.specifier}, but goat-core {__version__} is installed"
    return None


def _candidates() -> list[_Candidate]:
    from importlib.metadata import entry_points

    found = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        found.append(
            _Candidate(
                name=ep.name,
                value=ep.value,
                dist_name=dist.metadata["Name"] if dist is not None else None,
                dist_version=dist.version if dist is not None else None,
                requires=list(dist.requires or []) if dist is not None else [],
                ep=ep,
            )
        )
    found.sort(key=lambda c: (c.name, c.dist_name or "", c.value))
    return found


def _register_isolated(pm: GoatPluginManager, plugin: object, c: _Candidate) -> bool:
    try:
        pm.register(plugin, name=c.name)
    except Exception as exc:
        if pm.get_plugin(c.name) is not None:
            pm.unregister(name=c.name)
        pm.record_failure(_failure(c, "register", exc))
        return False
    unknown = _unknown_hooks(pm, c.name)
    if unknown:
        pm.unregister(name=c.name)
        pm.record_failure(
            _failure(c, "register", f"unknown hook(s) {', '.join(unknown)} (typo'd hook name?)")
        )
        return False
    return True


def _unknown_hooks(pm: pluggy.PluginManager, plugin_name: str) -> list[str]:
    plugin = pm.get_plugin(plugin_name)
    unknown = []
    for caller in pm.get_hookcallers(plugin) or []:
        if caller.has_spec():
            continue
        for impl in caller.get_hookimpls():
            if impl.plugin_name == plugin_name and not impl.optionalhook:
                unknown.append(caller.name)
    return sorted(set(unknown))


def load_entry_points(pm: GoatPluginManager, settings: PluginSettings) -> None:
    """Load every allowed entry point of :data:`ENTRY_POINT_GROUP`, each in isolation."""
    seen: dict[str, _Candidate] = {}
    for c in _candidates():
        if pm.is_blocked(c.name) or not settings.allows(c.name):
            continue
        if c.name in seen or pm.has_plugin(c.name):
            first = seen.get(c.name)
            where = f"distribution {first.dist_name}" if first else "a built-in plugin"
            pm.record_failure(
                _failure(
                    c,
                    "duplicate",
                    f"entry-point name {c.name!r} of {c.dist_name} is already used by {where}",
                )
            )
            continue
        seen[c.name] = c
        reason = _incompatibility(c.requires)
        if reason:
            pm.record_failure(_failure(c, "incompatible", reason))
            continue
        try:
            plugin = c.ep.load()
        except BaseException as exc:  # ImportError, AttributeError, SystemExit at import...
            if isinstance(exc, KeyboardInterrupt):
                raise
            pm.record_failure(_failure(c, "import", exc))
            continue
        if _register_isolated(pm, plugin, c):
            pm.origins[c.name] = _Origin(c.dist_name, c.dist_version, c.value)


def _trace(pm: pluggy.PluginManager) -> None:
    from goat_core.logs import get_logger

    log = get_logger("goat_core.trace")

    def before(hook_name: str, impls: Any, kwargs: Any) -> None:
        log.debug("hook.call", hook=hook_name, plugins=[i.plugin_name for i in impls])

    def after(outcome: Any, hook_name: str, impls: Any, kwargs: Any) -> None:
        exc = outcome.exception
        log.debug("hook.result", hook=hook_name, error=repr(exc) if exc else None)

    pm.add_hookcall_monitoring(before, after)


def make_plugin_manager(settings: PluginSettings | None = None) -> GoatPluginManager:
    """Build a fresh manager: specs, built-ins, then entry points (environment read now).

    :param settings: defaults to :meth:`PluginSettings.from_env`.
    :raises PluginLoadError: ``settings.strict`` and any plugin failed.
    """
    settings = settings if settings is not None else PluginSettings.from_env()
    pm = GoatPluginManager()
    pm.settings = settings
    pm.add_hookspecs(hookspecs)
    for name in settings.disable:
        pm.set_blocked(name)
    if settings.builtins:
        for modname in DEFAULT_PLUGINS:
            short = modname.rsplit(".", 1)[-1].lstrip("_")
            name = f"goat.{short}"
            pm.register(importlib.import_module(modname), name=name)
            pm.origins[name] = _Origin("goat-core", __version__, modname, builtin=True)
    if settings.autoload:
        load_entry_points(pm, settings)
    pm.check_pending()
    if settings.trace:
        _trace(pm)
    if settings.strict and pm.failures:
        raise PluginLoadError(pm.failures)
    return pm


def register_plugin(pm: GoatPluginManager, plugin: object, name: str) -> bool:
    """Register a plugin object by hand (tests, embedding hosts) with the same isolation as
    entry points; returns ``False`` and records a failure if it is invalid."""
    c = _Candidate(name=name, value=repr(plugin), dist_name=None, dist_version=None)
    if _register_isolated(pm, plugin, c):
        pm.origins[name] = _Origin(None, None, repr(plugin))
        return True
    return False
