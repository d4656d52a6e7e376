"""The scope receipt: a few lines saying which memory a session uses, and why.

One text for every surface that shows it: the ``receipt`` of ``goat://scope``, the
SessionStart hook's context and ``goat doctor``. It names the scope and how it was chosen,
the GOAT home and where that came from, and whether the scope is bound, with the one
command that binds it when it is not. A Pen left unbound in the platform's default home gets
a warning: a host that starts servers without the user's environment lands there.

No mcp import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from goat_core.serve._scope import ServeScope, bind_hint

if TYPE_CHECKING:
    from goat_core.host import GoatHome


def how_chosen(served: ServeScope) -> str:
    """How ``served`` was chosen, in words (``pinned by ...``, ``derived from ...``)."""
    how, identity = served.how, served.identity
    if how == "pin":
        return "pinned (the plugin's scope_pin setting, --pin or $GOAT_PIN)"
    if how in ("--pen", "--global"):
        return f"named when the server started ({how})"
    if how == "git-remote":
        return f"derived from the git remote {identity}"
    if how == "git-root":
        return f"derived from the git repository at {identity}"
    if how == "cwd":
        return f"derived from the folder {identity}"
    if how == "continued":
        return f"this folder's bound Pen, kept: {served.detail}"
    if how == "global":
        return f"Global: {served.detail or 'no project'}"
    return how


def scope_receipt(
    served: ServeScope,
    home: GoatHome,
    *,
    label: str,
    bound: bool,
    available: bool,
    reason: str | None,
    provider: str | None,
) -> str:
    """The receipt's text (a few short lines, no trailing newline).

    :param bound: the scope has a binding (Global always has one). :param available: its
        memory can be used now. :param reason: why not, when it cannot.
    """
    scope = served.scope
    missing = (
        "" if home.config_dir.is_dir() else ", which does not exist (is GOAT_HOME or --home right?)"
    )
    lines = [
        f"GOAT memory: {label} ({scope.key}), {how_chosen(served)}.",
        f"GOAT home: {home.describe()}{missing}.",
    ]
    if available:
        lines.append(f"Memory: bound to {provider}; use the recall and remember tools.")
    elif not bound:
        lines.append(f"Memory: none; {scope.key} is not bound. Bind it: {bind_hint(scope, home)}.")
    else:
        lines.append(f"Memory: unavailable: {reason}.")
    if not bound and scope.pen_id is not None and home.is_platform_default:
        lines.append(
            "Warning: this is the platform's default GOAT home and the Pen is unbound. If "
            "your memory is elsewhere, the host did not pass GOAT_HOME: give the server "
            "--home DIR."
        )
    return "\n".join(lines)
