"""Options and helpers shared by the ``goat`` commands, and offered to plugin commands
(exported from :mod:`goat_core.cli`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from goat_core.contract import Scope
    from goat_core.host import GoatHome, SyncMemoryContext, SyncMemoryHost
    from goat_core.plugins import Registry

F = TypeVar("F", bound=Callable[..., Any])


# -- shared options ------------------------------------------------------------------------
class _HomePath(click.Path):
    """A folder path that is never empty: ``--home ''`` would otherwise name the current
    directory and make it a GOAT home (``GOAT_HOME=''`` means "not set" instead)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail("an empty value names no folder: give a folder or leave --home out")
        return super().convert(value, param, ctx)


def home_option(f: F) -> F:
    """``--home DIR`` (parameter ``home: Path | None``): the GOAT home to use; an empty
    value is a usage error (exit 2)."""
    return click.option(
        "--home",
        "home",
        type=_HomePath(file_okay=False, path_type=Path),
        default=None,
        help="GOAT home directory (default: $GOAT_HOME, else the platform directories).",
    )(f)


def json_option(f: F) -> F:
    """``--json`` (parameter ``as_json: bool``): print JSON on stdout (:func:`emit_json`)."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON on stdout.")(f)


def pen_option(f: F) -> F:
    """``--pen ID`` (parameter ``pen: str | None``): a Pen's memory instead of Global."""
    return click.option(
        "--pen",
        "pen",
        metavar="ID",
        default=None,
        help="Use this Pen's memory (default: Global).",
    )(f)


def memory_options(f: F) -> F:
    """The options of every memory command, in their order: ``--pen ID``, ``--json``,
    ``--home DIR`` (parameters ``pen``, ``as_json``, ``home``)."""
    return pen_option(json_option(home_option(f)))


def _scope_choice(f: F) -> F:
    """``--global | --pen ID`` (exactly one; checked by :func:`_chosen_scope`)."""
    f = click.option("--pen", "pen", metavar="ID", default=None, help="A Pen scope.")(f)
    return click.option("--global", "global_", is_flag=True, help="The Global scope.")(f)


def _set_option(f: F) -> F:
    return click.option(
        "--set",
        "sets",
        metavar="KEY=VALUE",
        multiple=True,
        help="A provider setting (repeatable); validated against the provider's settings.",
    )(f)


def _parse_sets(sets: Sequence[str]) -> dict[str, str]:
    """``KEY=VALUE`` pairs to a dict. Values stay strings; the provider's settings model
    converts them (pydantic lax mode: ``"true"`` for a bool, ``"5"`` for an int).

    :raises click.BadParameter: no ``=``, an empty or malformed key, or a repeated key.
    """
    out: dict[str, str] = {}
    for item in sets:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="'--set'")
        if not key or not key.replace("_", "a").replace("-", "a").isalnum():
            raise click.BadParameter(
                f"{item!r}: the key must be letters, digits, '_' or '-'", param_hint="'--set'"
            )
        if key in out:
            raise click.BadParameter(f"setting {key!r} given twice", param_hint="'--set'")
        out[key] = value
    return out


def _scope(pen: str | None) -> Scope:
    from goat_core.contract import Scope

    return Scope.global_() if pen is None else Scope.pen(pen)


def _chosen_scope(global_: bool, pen: str | None, *, default_global: bool = False) -> Scope:
    if global_ and pen is not None:
        raise click.UsageError("give either --global or --pen ID, not both")
    if not global_ and pen is None:
        if default_global:
            return _scope(None)
        raise click.UsageError("choose the scope: --global or --pen ID")
    return _scope(pen)


# -- registry and host -----------------------------------------------------------------------
def _registry(*, strict: bool | None = None) -> Registry:
    """One plugin registry per invocation (cached on the root context)."""
    from goat_core.plugins import PluginSettings, Registry

    ctx = click.get_current_context(silent=True)
    meta = ctx.find_root().meta if ctx is not None else {}
    key = f"goat.registry.{strict}"
    if key not in meta:
        settings = (
            PluginSettings.from_env() if strict is None else PluginSettings.from_env(strict=strict)
        )
        meta[key] = Registry.load(settings)
    registry: Registry = meta[key]
    return registry


def _home(home: Path | None) -> GoatHome:
    from goat_core.host import GoatHome

    return GoatHome.from_env(home)


@contextmanager
def open_host(
    home: Path | None,
    progress: Callable[[int, int], None] | None = None,
    embed_progress: Callable[[int, int], None] | None = None,
) -> Iterator[SyncMemoryHost]:
    """A :class:`~goat_core.host.SyncMemoryHost` for this invocation, closed afterwards:
    the GOAT home of ``home`` (:meth:`GoatHome.from_env <goat_core.host.GoatHome.from_env>`)
    and the plugins of ``GOAT_*_PLUGINS`` (one registry per invocation). ``progress`` is the
    providers' sink for a first indexing inside a read, ``embed_progress`` for a store
    embedding its notes (the first semantic recall)."""
    from goat_core.host import SyncMemoryHost

    host = SyncMemoryHost(
        home=_home(home), registry=_registry(), progress=progress, embed_progress=embed_progress
    )
    try:
        yield host
    finally:
        host.close()


@contextmanager
def open_memory(
    home: Path | None,
    pen: str | None,
    progress: Callable[[int, int], None] | None = None,
    embed_progress: Callable[[int, int], None] | None = None,
) -> Iterator[SyncMemoryContext]:
    """The memory context of one scope: Global, or the Pen ``pen`` (validated first), on a
    host from :func:`open_host`, closed afterwards (with the providers it built). This is
    how every core memory command opens memory.

    :raises ScopeError: an invalid Pen id (exit 2), before any I/O.
    """
    scope = _scope(pen)  # ScopeError (exit 2) for an invalid Pen id, before any I/O
    from goat_core.host import Chat

    with open_host(home, progress, embed_progress) as host:
        yield host.context_for(Chat(project_id=scope.pen_id))
