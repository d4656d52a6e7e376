"""The one scope a server or hook serves, fixed once (never per call), and how it was found.

``goat serve``, ``goat hook claude-code`` and ``goat doctor claude-code`` all resolve through
:func:`resolve_serve_scope`, so a server and a hook started for the same directory and pin
always agree. The rules are those of ``goat scope`` (docs/design.md, Scopes): a directory's
project identity (git remote, else git common dir, else the folder) decides a derived Pen, so
a repository's root, its subfolders and its worktrees give one scope. A pin (``global`` or
``pen:ID``) replaces derivation. MCP roots never decide anything.

No mcp import here: the hook uses this module.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goat_core.contract import Derivation, ProjectRecord, Scope, ScopeRequest
from goat_core.errors import BadInput, ScopeError

if TYPE_CHECKING:
    from goat_core.host import GoatHome
    from goat_core.plugins import Registry

#: The environment variable both the server and the hook read for a pin when no ``--pin``
#: is given.
PIN_ENV = "GOAT_PIN"
#: Where Claude Code puts the plugin's ``scope_pin`` option for its hooks and servers
#: (``CLAUDE_PLUGIN_OPTION_<KEY>``); read before :data:`PIN_ENV`.
PLUGIN_PIN_ENV = "CLAUDE_PLUGIN_OPTION_SCOPE_PIN"


def env_pin(env: Mapping[str, str] | None = None) -> str | None:
    """The pin the environment gives: the first non-empty of ``$CLAUDE_PLUGIN_OPTION_SCOPE_PIN``
    and ``$GOAT_PIN`` (an unset or empty plugin option means "derive"), else ``None``."""
    env = os.environ if env is None else env
    for name in (PLUGIN_PIN_ENV, PIN_ENV):
        value = env.get(name)
        if value and value.strip():
            return value
    return None


@dataclass(frozen=True)
class ServeScope:
    """The fixed scope of one server or hook run.

    :param scope: the scope. :param how: how it was chosen (``--pen``, ``--global``,
        ``pin``, ``continued`` (a bound Pen this folder derived before), or the derivation of
        ``goat scope``: ``git-remote``, ``git-root``, ``cwd``,
        ``global``). :param identity: the project identity hashed into a derived Pen.
    :param directory: the directory it was resolved from (``--from-dir``), if any.
    """

    scope: Scope
    how: str
    identity: str | None = None
    detail: str | None = None
    directory: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "scope": self.scope.key,
            "pen_id": self.scope.pen_id,
            "how": self.how,
            "identity": self.identity,
            "detail": self.detail,
            "directory": self.directory,
        }


def parse_pin(value: str | None) -> Scope | None:
    """A pin setting to a scope: ``""``/``None`` (no pin), ``global`` or ``pen:ID``.

    A value that is still an unexpanded ``${...}`` placeholder (a host that did not
    substitute an unset option) counts as no pin. A bare word is refused, so a typo
    (``globl``) never becomes a Pen of its own.

    :raises ScopeError: anything else, or an invalid Pen id after ``pen:``.
    """
    if value is None:
        return None
    text = value.strip()
    if not text or (text.startswith("${") and text.endswith("}")):
        return None
    if text.lower() == "global":
        return Scope.global_()
    if text.lower().startswith("pen:"):
        return Scope.pen(text[4:])
    example = f"pen:{text.lower()}"
    try:
        Scope.pen(text.lower())
    except ScopeError:
        example = "pen:my-project"
    raise ScopeError(f"pin {value!r} is neither 'global' nor 'pen:ID' (e.g. {example})")


def resolve_serve_scope(
    registry: Registry,
    *,
    pen: str | None = None,
    global_: bool = False,
    from_dir: str | os.PathLike[str] | None = None,
    pin: str | None = None,
    bound: Bound | None = None,
) -> ServeScope:
    """The one scope to serve.

    Exactly one of ``pen``, ``global_`` and ``from_dir`` (a pin only goes with
    ``from_dir``). With ``from_dir``, a pin (``pin``, else :func:`env_pin`) decides; else the
    directory resolves as ``goat scope`` resolves the working directory; with ``bound``
    (:func:`bound_projects`), a changed identity keeps its bound Pen (:func:`continued`).

    :raises BadInput: not exactly one choice, or ``from_dir`` is not a directory.
    :raises ScopeError: an invalid Pen id, or git refused the directory.
    """
    chosen = sum([pen is not None, bool(global_), from_dir is not None])
    if chosen != 1:
        raise BadInput("choose the scope: exactly one of --pen ID, --global or --from-dir DIR")
    if pen is not None:
        return ServeScope(Scope.pen(pen), "--pen")
    if global_:
        return ServeScope(Scope.global_(), "--global")
    assert from_dir is not None
    directory = _directory(from_dir)
    pinned = pinned_scope(directory, pin)
    if pinned is not None:
        return pinned
    resolution = registry.resolve_scope(ScopeRequest(cwd=directory, derive_from_cwd=True))
    how = resolution.derivation.value
    if resolution.derivation is Derivation.GLOBAL:
        how = "global"
    derived = ServeScope(
        resolution.scope,
        how,
        identity=resolution.identity,
        detail=resolution.detail,
        directory=str(directory),
    )
    return continued(derived, bound) if bound is not None else derived


def continued(derived: ServeScope, bound: Bound) -> ServeScope:
    """``derived``, or the bound Pen its folder derived before (``how`` ``continued``).

    When a folder's project identity changes (a git remote added, ``git init``), it derives
    a new Pen; :func:`goat_core.scope.kept_pen` says when the bound Pen it derived before
    is kept instead. Anything else gives ``derived`` unchanged.
    """
    from goat_core.errors import GoatError
    from goat_core.scope import kept_pen

    if derived.directory is None:
        return derived
    try:
        kept = kept_pen(Path(derived.directory), derived.scope, bound())
    except ScopeError:
        return derived
    except GoatError as exc:  # memory.json unreadable: say the derivation is unchecked
        note = f"the bindings could not be read, so no earlier Pen was looked for: {exc}"
        detail = f"{derived.detail}; {note}" if derived.detail else note
        return ServeScope(derived.scope, derived.how, derived.identity, detail, derived.directory)
    if kept is None:
        return derived
    (scope, why) = kept
    detail = (
        f"{scope.key} is {why}; the folder now derives {derived.scope.key} "
        f"({derived.detail}), which is unbound"
    )
    return ServeScope(scope, "continued", derived.identity, detail, derived.directory)


def _directory(from_dir: str | os.PathLike[str]) -> Path:
    directory = Path(from_dir).expanduser()
    if not directory.is_dir():
        raise BadInput(f"--from-dir {str(directory)!r} is not a directory")
    return directory.resolve()


def pinned_scope(from_dir: str | os.PathLike[str], pin: str | None) -> ServeScope | None:
    """What :func:`resolve_serve_scope` gives ``from_dir`` under a pin (``pin``, else
    ``$GOAT_PIN``), without any plugin: ``None`` when nothing is pinned (then the scope
    plugins decide).

    :raises BadInput: ``from_dir`` is not a directory. :raises ScopeError: an invalid Pen id.
    """
    directory = _directory(from_dir)
    pinned = parse_pin(pin if pin is not None else env_pin())
    if pinned is None:
        return None
    return ServeScope(pinned, "pin", directory=str(directory))


#: Every bound Pen with its project records (``goat_core.scope.kept_pen``).
Bound = Callable[[], list[tuple[Scope, tuple[ProjectRecord, ...]]]]


def bound_projects(home: GoatHome) -> Bound:
    """A reader of ``home``'s ``memory.json``: every bound Pen and the project records of
    its binding (read at each call).

    :raises ConfigError: (from the returned function) ``memory.json`` cannot be read.
    """
    from goat_core.host import load_config

    def read() -> list[tuple[Scope, tuple[ProjectRecord, ...]]]:
        return [(s, b.projects) for s, b in load_config(home).scopes() if s.pen_id]

    return read


def bind_hint(scope: Scope, home: GoatHome | None = None) -> str:
    """The one command that gives ``scope`` memory (what every tool of an unbound Pen
    answers); with ``home``, the command names it (``--home DIR``), so it binds the home
    that was read, whatever the terminal's ``$GOAT_HOME`` says."""
    where = f" --home {shlex.quote(str(home.config_dir))}" if home is not None else ""
    if scope.is_global:
        return f"`goat bind --global PROVIDER{where}`"
    return f"`goat bind --pen {scope.pen_id} markdown{where}`"
